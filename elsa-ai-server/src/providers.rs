//! The model providers a server runs, built from `[provider]` or `[[providers]]`: one
//! provider as it is, several behind the host's `ProviderRouter`.

use std::sync::Arc;

use elsa_ai_abstractions::{AiProvider, AiProviderInfo};
use elsa_ai_copilot::{CopilotProvider, CopilotProviderConfig};
use elsa_ai_host::{ProviderRouter, Redactor};
use elsa_ai_openai::{OpenAiProvider, OpenAiProviderConfig};

use crate::config::{ProviderConfig, ProviderPlan};
use crate::weaver::StartupError;
use elsa_ai_scripted::demo::DemoProvider;

/// The providers, and what the server must do with them beside serving turns.
pub(crate) struct ServedProviders {
    /// What the orchestrator calls.
    pub provider: Arc<dyn AiProvider>,
    /// Copilot providers, whose CLI stops with the server and logs through its redactor.
    pub copilots: Vec<CopilotProvider>,
    /// The secrets the providers were configured with, for the redactor.
    pub secrets: Vec<String>,
    /// Every provider's description, named as configured, in configuration order.
    pub infos: Vec<AiProviderInfo>,
}

impl ServedProviders {
    /// Builds every provider of `plan`, reading their secrets through `env`.
    pub(crate) fn build(
        plan: &ProviderPlan,
        env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    ) -> Result<Self, StartupError> {
        let mut served = Self {
            provider: Arc::new(DemoProvider::new()),
            copilots: Vec::new(),
            secrets: Vec::new(),
            infos: Vec::new(),
        };
        let mut built = Vec::with_capacity(plan.providers.len());
        for named in &plan.providers {
            let provider = served.one(&named.name, &named.config, env)?;
            served.infos.push(AiProviderInfo {
                name: named.name.clone(),
                ..provider.info()
            });
            built.push((named.name.clone(), provider));
        }
        if let [(_, only)] = built.as_slice() {
            served.provider = only.clone();
            return Ok(served);
        }
        let mut router = ProviderRouter::builder();
        for (name, provider) in built {
            router = router.provider(name, provider);
        }
        for (tenant, name) in &plan.tenants {
            router = router.tenant(tenant.as_str(), name.as_str());
        }
        for (agent, name) in &plan.agents {
            router = router.agent(agent.as_str(), name.as_str());
        }
        let router = router
            .build(plan.default.as_str())
            .map_err(|e| StartupError::Provider {
                message: e.message().to_owned(),
                source: e.into(),
            })?;
        served.provider = Arc::new(router);
        Ok(served)
    }

    fn one(
        &mut self,
        name: &str,
        config: &ProviderConfig,
        env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    ) -> Result<Arc<dyn AiProvider>, StartupError> {
        let invalid = |e: Box<dyn std::error::Error + Send + Sync>| StartupError::Provider {
            message: format!("provider '{name}' is not valid: {e}"),
            source: e,
        };
        Ok(match config {
            ProviderConfig::Demo => Arc::new(DemoProvider::new()),
            ProviderConfig::Copilot(table) => {
                let settings: CopilotProviderConfig = toml::Value::Table(table.clone())
                    .try_into()
                    .map_err(|e| invalid(e.into()))?;
                let copilot =
                    CopilotProvider::with_secrets(&settings, env).map_err(|e| invalid(e.into()))?;
                self.secrets.extend(copilot.secrets());
                self.copilots.push(copilot.clone());
                Arc::new(copilot)
            }
            ProviderConfig::OpenAi(table) => {
                let settings: OpenAiProviderConfig = toml::Value::Table(table.clone())
                    .try_into()
                    .map_err(|e| invalid(e.into()))?;
                let openai = OpenAiProvider::with_secrets(&settings, env)
                    .map_err(|e| invalid(e.into()))?
                    .named(name);
                self.secrets.extend(openai.secrets());
                Arc::new(openai)
            }
        })
    }

    /// One provider a host handed the builder.
    pub(crate) fn given(provider: Arc<dyn AiProvider>) -> Self {
        Self {
            infos: vec![provider.info()],
            provider,
            copilots: Vec::new(),
            secrets: Vec::new(),
        }
    }

    /// Hands the redactor to the providers that log what their runtime says.
    pub(crate) fn redact_logs_with(&self, redactor: &Arc<Redactor>) {
        for copilot in &self.copilots {
            copilot.redact_logs_with(redactor.clone());
        }
    }

    /// Stops what runs beside the server (Copilot CLIs).
    pub(crate) async fn shutdown(&self) {
        for copilot in &self.copilots {
            copilot.shutdown().await;
        }
    }
}
