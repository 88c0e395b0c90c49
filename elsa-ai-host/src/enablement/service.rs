use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiError, AuditAction, AuditOutcome, Clock, Permission,
    ToolEnablement,
};
use serde_json::json;

use crate::enablement::{EnablementDecisions, EnablementPolicy};
use crate::redaction::Redactor;
use crate::registry::ToolRegistry;

/// An administrator's request to turn a tool on or off in their tenant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnablementChange {
    /// The tool.
    pub tool_name: String,
    /// One agent, or every agent when `None`.
    pub agent: Option<String>,
    /// On or off.
    pub enabled: bool,
}

/// Changes tool enablement: requires `admin:ai`, refuses to enable Administrative tools, and
/// audits every change (actor, tenant, tool, agent, before and after) before it takes effect;
/// if the audit record cannot be written, nothing changes.
pub struct ToolEnablementService {
    registry: Arc<ToolRegistry>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ToolEnablementService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEnablementService")
            .finish_non_exhaustive()
    }
}

impl ToolEnablementService {
    /// A service over the registry's enablement store, auditing into `audit`; hosts call
    /// [`HostCore::enablement`](crate::HostCore::enablement).
    pub(crate) fn new(
        registry: Arc<ToolRegistry>,
        audit: Arc<dyn AiAuditSink>,
        redactor: Arc<Redactor>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            registry,
            audit,
            redactor,
            clock,
        }
    }

    /// The decisions recorded for the caller's tenant; requires `admin:ai`.
    pub async fn decisions(&self, caller: &AiCaller) -> Result<Vec<ToolEnablement>, AiError> {
        require_admin(caller)?;
        self.registry.enablement().list(&caller.tenant_id).await
    }

    /// Records the change in the caller's tenant and returns the stored decision.
    ///
    /// Errors: 403 `permission_denied` without `admin:ai`, 404 `tool_not_found` /
    /// `agent_not_found`, 403 `administrative_tool_disabled` when enabling an Administrative
    /// tool, 500 `audit_failed` when the audit record cannot be written (nothing changed).
    /// Refusals are audited as denials.
    pub async fn set(
        &self,
        caller: &AiCaller,
        change: EnablementChange,
    ) -> Result<ToolEnablement, AiError> {
        if let Err(denied) = require_admin(caller) {
            return self.refuse(caller, &change, denied).await;
        }
        let Some(tool) = self
            .registry
            .registered_for(&change.tool_name, &caller.tenant_id)
        else {
            return Err(AiError::NotFound {
                code: "tool_not_found".into(),
                message: format!("tool '{}' not found", change.tool_name),
            });
        };
        // A decision is kept under the canonical name, whichever name the change used, so a
        // tool has one enablement state.
        let called_as = (*change.tool_name != **tool.name()).then(|| change.tool_name.clone());
        let change = EnablementChange {
            tool_name: tool.name().to_string(),
            ..change
        };
        // A disabled agent may still be configured; an unknown one may not.
        if let Some(agent) = &change.agent
            && self.registry.agents().get(agent).is_none()
        {
            return Err(AiError::NotFound {
                code: "agent_not_found".into(),
                message: format!("agent '{agent}' not found"),
            });
        }
        if change.enabled
            && let Err(denied) = EnablementPolicy::may_enable(tool.definition())
        {
            return self.refuse(caller, &change, denied).await;
        }

        let store = self.registry.enablement();
        // Read afresh, not as kept: the audit record's `before` is the store's.
        let decisions = EnablementDecisions::new(store.list(&caller.tenant_id).await?);
        let before = decisions.is_enabled(tool.definition(), change.agent.as_deref());
        let decision = ToolEnablement {
            tenant_id: caller.tenant_id.clone(),
            tool_name: change.tool_name.clone(),
            agent: change.agent.clone(),
            enabled: change.enabled,
            changed_by: caller.actor_id.clone(),
            changed_at: self.clock.now(),
        };
        let after = change.enabled && EnablementPolicy::may_enable(tool.definition()).is_ok();
        let mut details = json!({
            "tool": change.tool_name,
            "agent": change.agent,
            "decision": change.enabled,
            "before": {"enabled": before},
            "after": {"enabled": after},
        });
        if let Some(called_as) = called_as {
            details["calledAs"] = json!(called_as);
        }
        let summary = format!(
            "{} {} tool '{}'{}",
            caller.actor_id,
            if change.enabled {
                "enabled"
            } else {
                "disabled"
            },
            change.tool_name,
            change
                .agent
                .as_deref()
                .map(|a| format!(" for agent '{a}'"))
                .unwrap_or_default()
        );
        // Audit before effect: a change that cannot be audited does not happen.
        self.record(
            caller,
            &change,
            AuditOutcome::Success,
            summary,
            details.clone(),
        )
        .await?;
        if let Err(error) = store.set(&decision).await {
            let failed = json!({"change": details, "error": error.to_body()});
            // The store error is what the caller must see; the failure record is best effort.
            let _ = self
                .record(
                    caller,
                    &change,
                    AuditOutcome::Failure,
                    format!("enablement change of '{}' failed", change.tool_name),
                    failed,
                )
                .await;
            return Err(error);
        }
        Ok(decision)
    }

    async fn refuse(
        &self,
        caller: &AiCaller,
        change: &EnablementChange,
        denied: AiError,
    ) -> Result<ToolEnablement, AiError> {
        let details = json!({
            "tool": change.tool_name,
            "agent": change.agent,
            "decision": change.enabled,
            "error": denied.to_body(),
        });
        let summary = format!(
            "enablement change of '{}' denied: {}",
            change.tool_name,
            denied.code()
        );
        self.record(caller, change, AuditOutcome::Denied, summary, details)
            .await?;
        Err(denied)
    }

    async fn record(
        &self,
        caller: &AiCaller,
        change: &EnablementChange,
        outcome: AuditOutcome,
        summary: String,
        details: serde_json::Value,
    ) -> Result<(), AiError> {
        let mut event = AiAuditEvent::new(
            caller.tenant_id.clone(),
            caller.actor_id.clone(),
            AuditAction::TOOL_ENABLEMENT_CHANGED,
            outcome,
            summary,
        );
        event.timestamp = self.clock.now();
        event.tool_name = Some(change.tool_name.as_str().into());
        event.details = details.into();
        self.redactor.redact_audit_event(&mut event);
        self.audit.record(event).await.map_err(|error| {
            AiError::audit_failed(
                &error,
                format!(
                    "the enablement change was not made because it could not be audited: {}",
                    error.message()
                ),
            )
        })
    }
}

fn require_admin(caller: &AiCaller) -> Result<(), AiError> {
    caller.require(&Permission::ADMIN_AI, "changing tool enablement")
}
