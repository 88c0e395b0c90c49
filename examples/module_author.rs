//! A module author's tools: one read-only tool and one proposal tool, written outside the
//! Weaver crates and added without changing any of them.
//!
//! A module implements [`AiTool`] for each tool and submits an [`AiToolRegistration`] through
//! the `inventory` that `elsa-ai-abstractions` re-exports: linking the module is all a host
//! does, exactly as for the built-in tools. The registry validates the module's metadata at
//! registration; the read-only tool is on by default, while the proposal tool stays off until
//! an administrator enables it through the host's `ToolEnablementService`. Every call goes
//! through the `ToolGovernor` (permissions, tenant, enablement, redaction, audit), and the
//! proposal tool never writes: it hands a draft to the proposal service, and a person
//! approves and applies it.
//!
//! Run it with `cargo run -p weaver-examples --example module_author`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAgentDefinition, AiCaller, AiError, AiProviderToolInvocation, AiTool, AiToolDefinition,
    AiToolExecutionContext, AiToolQuery, AiToolRegistration, AiToolRegistry, AiToolResult,
    AiToolServices, AttachmentKind, AuditBehavior, BaselineRef, DangerLevel, Permission,
    ProposalDraft, ProposalKind, TenantBehavior, ToolMutability, ToolSource, inventory,
};
use elsa_ai_host::{
    AgentRegistry, EnablementChange, HostCore, InMemoryAuditLog, InMemoryProposalStore,
    InMemoryToolEnablementStore, Redactor, ToolCallScope, ToolRegistry,
};
use elsa_workflows::{InMemoryWorkflowBackend, TenantId, VersionOptions, samples};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// The module: what a third party writes.
// ---------------------------------------------------------------------------------------

/// Arguments of `acme.activityUsage`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActivityUsageInput {
    /// The workflow definition to count.
    definition_id: String,
}

/// `acme.activityUsage`: how often each activity type occurs in a definition. Read-only.
struct ActivityUsage(AiToolDefinition);

impl Default for ActivityUsage {
    fn default() -> Self {
        Self(AiToolDefinition {
            name: "acme.activityUsage".into(),
            display_name: "Activity usage".into(),
            description: "Counts the activities of one workflow definition by type.".into(),
            input_schema: AiToolDefinition::schema_for::<ActivityUsageInput>(),
            mutability: ToolMutability::ReadOnly,
            danger_level: DangerLevel::Low,
            permissions: vec![Permission::READ_WORKFLOWS],
            tenant_behavior: TenantBehavior::TenantScoped,
            audit_behavior: AuditBehavior::RecordInvocation,
            allowed_agents: None,
            source: ToolSource::Module,
            enabled_by_default: true,
            timeout: None,
        })
    }
}

#[async_trait]
impl AiTool for ActivityUsage {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let input: ActivityUsageInput = context.arguments()?;
        let definition = context
            .services
            .definitions
            .find(
                &context.caller.tenant_id,
                &input.definition_id,
                VersionOptions::Latest,
            )
            .await?
            .ok_or_else(|| {
                AiError::not_found(format!("workflow definition '{}'", input.definition_id))
            })?;
        let mut usage: BTreeMap<String, usize> = BTreeMap::new();
        for node in definition.activities() {
            *usage.entry(node.type_name().to_owned()).or_default() += 1;
        }
        Ok(json!({"definitionId": input.definition_id, "activityTypes": usage}))
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ActivityUsage::default())) }

/// Arguments of `acme.proposeRename`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProposeRenameInput {
    /// The workflow definition to rename.
    definition_id: String,
    /// The version the rename is based on.
    baseline_version: i32,
    /// The new name.
    name: String,
    /// Why, for the reviewer.
    rationale: String,
}

/// `acme.proposeRename`: proposes a new name for a workflow. A proposal tool: off until an
/// administrator enables it, and it writes nothing itself.
struct ProposeRename(AiToolDefinition);

impl Default for ProposeRename {
    fn default() -> Self {
        Self(AiToolDefinition {
            name: "acme.proposeRename".into(),
            display_name: "Propose a rename".into(),
            description: "Proposes a new name for a workflow; a person reviews the proposal."
                .into(),
            input_schema: AiToolDefinition::schema_for::<ProposeRenameInput>(),
            mutability: ToolMutability::Proposal,
            danger_level: DangerLevel::Medium,
            permissions: vec![Permission::PROPOSE_WORKFLOWS, Permission::READ_WORKFLOWS],
            tenant_behavior: TenantBehavior::TenantScoped,
            audit_behavior: AuditBehavior::RecordInvocationAndResult,
            allowed_agents: None,
            source: ToolSource::Module,
            // The registry refuses `true` here: proposal tools need an administrator.
            enabled_by_default: false,
            timeout: None,
        })
    }
}

#[async_trait]
impl AiTool for ProposeRename {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let input: ProposeRenameInput = context.arguments()?;
        let mut definition = context
            .services
            .definitions
            .find(
                &context.caller.tenant_id,
                &input.definition_id,
                VersionOptions::Specific(input.baseline_version),
            )
            .await?
            .ok_or_else(|| {
                AiError::not_found(format!("workflow definition '{}'", input.definition_id))
            })?;
        definition.set_name(Some(&input.name));
        let proposal = context
            .services
            .proposals
            .submit(
                &context.caller,
                ProposalDraft {
                    conversation_id: context.conversation_id.clone(),
                    kind: ProposalKind::Update,
                    baseline: Some(BaselineRef {
                        definition_id: input.definition_id,
                        version: input.baseline_version,
                    }),
                    definition,
                    patch: Some(json!({"rename": input.name})),
                    rationale: input.rationale,
                },
            )
            .await?;
        Ok(json!({"proposalId": proposal.id, "status": proposal.status.as_str()}))
    }
}

inventory::submit! { AiToolRegistration::new(|| Arc::new(ProposeRename::default())) }

// ---------------------------------------------------------------------------------------
// The host: links the module, and an administrator decides about the proposal tool.
// ---------------------------------------------------------------------------------------

const TENANT: &str = "acme";
const AGENT: &str = "acme-assistant";
const USAGE: &str = "acme.activityUsage";
const RENAME: &str = "acme.proposeRename";

/// An agent that may use the module's tools.
fn acme_assistant() -> AiAgentDefinition {
    AiAgentDefinition {
        name: AGENT.into(),
        display_name: "Acme assistant".into(),
        description: "Uses the Acme module's tools.".into(),
        instructions: "Count activities and propose renames when asked.".into(),
        allowed_tools: vec![USAGE.into(), RENAME.into()],
        allowed_context_providers: vec![AttachmentKind::WorkflowDefinition],
        allowed_mcp_servers: Vec::new(),
        permissions: vec![Permission::READ_WORKFLOWS, Permission::PROPOSE_WORKFLOWS],
        enabled: true,
    }
}

/// What the walk-through observed.
#[derive(Debug)]
struct Observed {
    listed_before: Vec<String>,
    rename_before: AiToolResult,
    enable_by_user: AiError,
    listed_after: Vec<String>,
    usage: AiToolResult,
    rename_after: AiToolResult,
    name_in_store_after: Option<String>,
}

async fn walk_through() -> Result<Observed, Box<dyn std::error::Error>> {
    let tenant = TenantId::new(TENANT);
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    samples::seed(&backend, &tenant);
    let audit = Arc::new(InMemoryAuditLog::new());
    let core = HostCore::builder(Arc::new(Redactor::default()), audit.clone()).build();
    let proposals = core
        .proposals(
            Arc::new(InMemoryProposalStore::new()),
            backend.clone(),
            backend.clone(),
            backend.clone(),
        )
        .build();
    let services = AiToolServices {
        definitions: backend.clone(),
        instances: backend.clone(),
        executions: backend.clone(),
        incidents: backend.clone(),
        catalog: backend.clone(),
        proposals: Arc::new(proposals),
    };
    let agents = AgentRegistry::builder()
        .with_builtin_agents()?
        .agent(acme_assistant())?
        .build();
    // No tool is registered by hand: the module's tools come in through `inventory`.
    let registry = Arc::new(ToolRegistry::builder().linked_tools()?.build(
        Arc::new(agents),
        Arc::new(InMemoryToolEnablementStore::new()),
    ));
    let governor = core.governor(registry.clone(), services).build();
    let enablement = core.enablement(registry.clone());

    let user = AiCaller::new(
        "ursula",
        TENANT,
        [Permission::READ_WORKFLOWS, Permission::PROPOSE_WORKFLOWS],
    );
    let admin = AiCaller::new("ada", TENANT, [Permission::ADMIN_AI]);
    let query = AiToolQuery {
        agent: Some(AGENT.into()),
        ..AiToolQuery::for_caller(user.clone())
    };
    let names = |tools: Vec<Arc<AiToolDefinition>>| tools.iter().map(|t| t.name.clone()).collect();
    let invoker = || governor.bind(ToolCallScope::new(user.clone(), AGENT));
    let call = |tool: &str, arguments: Value| AiProviderToolInvocation {
        call_id: format!("call-{tool}"),
        tool_name: tool.into(),
        arguments,
    };
    let rename = json!({
        "definitionId": "sample-order-approval", "baselineVersion": 2,
        "name": "Order approval (EU)", "rationale": "The workflow now serves the EU shop only."
    });

    let listed_before = names(registry.list(&query).await?);
    let rename_before = invoker().invoke(call(RENAME, rename.clone())).await;
    let enable_rename = || EnablementChange {
        tool_name: RENAME.into(),
        agent: None,
        enabled: true,
    };
    let enable_by_user = enablement
        .set(&user, enable_rename())
        .await
        .expect_err("only administrators enable tools");
    enablement.set(&admin, enable_rename()).await?;
    let listed_after = names(registry.list(&query).await?);
    let usage = invoker()
        .invoke(call(
            USAGE,
            json!({"definitionId": "sample-order-approval"}),
        ))
        .await;
    let rename_after = invoker().invoke(call(RENAME, rename)).await;
    let name_in_store_after = elsa_workflows::WorkflowDefinitionStore::find(
        backend.as_ref(),
        &tenant,
        "sample-order-approval",
        VersionOptions::Latest,
    )
    .await?
    .and_then(|d| d.name().map(str::to_owned));
    Ok(Observed {
        listed_before,
        rename_before,
        enable_by_user,
        listed_after,
        usage,
        rename_after,
        name_in_store_after,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seen = walk_through().await?;
    println!("tools listed before enablement: {:?}", seen.listed_before);
    println!(
        "{RENAME} before enablement: {}",
        seen.rename_before.to_model_text()
    );
    println!(
        "a user enabling it: {} {}",
        seen.enable_by_user.status(),
        seen.enable_by_user.code()
    );
    println!("tools listed after enablement: {:?}", seen.listed_after);
    println!("{USAGE}: {}", seen.usage.to_model_text());
    println!(
        "{RENAME} after enablement: {}",
        seen.rename_after.to_model_text()
    );
    println!(
        "the workflow's name is still {:?}: a person applies the proposal",
        seen.name_in_store_after
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::AiToolOutcome;

    use super::*;

    #[tokio::test]
    async fn the_proposal_tool_is_unavailable_until_an_administrator_enables_it() {
        let seen = walk_through().await.expect("the walk-through runs");
        assert_eq!(
            seen.listed_before,
            [USAGE],
            "only the read-only tool is on by default"
        );
        assert_eq!(seen.rename_before.outcome, AiToolOutcome::Denied);
        assert_eq!(
            seen.rename_before.error.as_ref().unwrap().code,
            "tool_disabled"
        );
        assert_eq!(
            (seen.enable_by_user.status(), seen.enable_by_user.code()),
            (403, "permission_denied")
        );
        assert_eq!(seen.listed_after, [USAGE, RENAME]);
        assert!(seen.usage.is_success());
        assert!(seen.usage.content["activityTypes"]["Elsa.Flowchart"].as_u64() >= Some(1));
        assert!(
            seen.rename_after.is_success(),
            "{}",
            seen.rename_after.to_model_text()
        );
        assert_eq!(seen.rename_after.content["status"], "Validated");
        assert_ne!(
            seen.name_in_store_after.as_deref(),
            Some("Order approval (EU)"),
            "the tool proposed, it did not write"
        );
    }
}
