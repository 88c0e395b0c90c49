//! Context resolution: the attachments of a chat request turned into compact, redacted,
//! size-bounded context a model may read.
//!
//! One [`AiContextProvider`] per attachment kind reads through the `elsa-workflows` service
//! traits only, checks the permission its kind needs and summarises what it found. The
//! [`ContextResolver`] runs the provider of each attachment's kind (only kinds the agent
//! allows), with the caller's permissions narrowed by the agent's, redacts the result, then
//! clamps it to the context budget (one per attachment, and one for the whole turn, so that
//! many attachments cannot fill a model's window), and audits every refusal (`context.denied`) before it
//! returns. Each resolution's `context.resolved` record comes back with the context, for the
//! caller to write before any of it is used: the orchestrator writes them together with the
//! turn's other opening records, in one group commit instead of one per attachment.

mod providers;
mod search;
mod summary;

use std::collections::BTreeMap;
use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditEvent, AiAuditSink, AiCaller, AiContextAttachment, AiContextProvider,
    AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind, AuditAction,
    AuditOutcome, Clock, ConversationId,
};
use elsa_workflows::{ActivityCatalog, WorkflowDefinitionStore, WorkflowInstanceStore};
use serde_json::json;

use crate::agents::AgentRegistry;
use crate::clamp::ResultClamp;
use crate::redaction::Redactor;
pub use providers::{
    ActivitySelectionContext, DiagnosticsScopeContext, TenantContext, TimeRangeContext,
    WorkflowDefinitionContext, WorkflowInstanceContext,
};
pub use search::{AttachmentCandidate, AttachmentSearch};

/// The providers of every attachment kind of SPEC §2, over the host's Elsa stores.
pub fn builtin_context_providers(
    definitions: Arc<dyn WorkflowDefinitionStore>,
    instances: Arc<dyn WorkflowInstanceStore>,
    catalog: Arc<dyn ActivityCatalog>,
) -> Vec<Arc<dyn AiContextProvider>> {
    vec![
        Arc::new(WorkflowDefinitionContext::new(definitions.clone())),
        Arc::new(WorkflowInstanceContext::new(instances.clone())),
        Arc::new(ActivitySelectionContext::new(definitions.clone(), catalog)),
        Arc::new(TenantContext::new(definitions.clone())),
        Arc::new(DiagnosticsScopeContext::new(definitions, instances)),
        Arc::new(TimeRangeContext),
    ]
}

/// The attachments of a request, resolved, with the audit records of their resolution.
#[derive(Debug)]
#[must_use = "the resolution records must be written before the context is used"]
pub struct ResolvedContext {
    /// The resolved attachments, redacted and clamped, in request order.
    pub attachments: Vec<AiResolvedContext>,
    /// One `context.resolved` record per attachment, redacted and not yet written: the
    /// caller writes them before any of the context reaches a model or a client.
    pub audit: Vec<AiAuditEvent>,
}

/// Builds a [`ContextResolver`].
pub struct ContextResolverBuilder {
    providers: BTreeMap<AttachmentKind, Arc<dyn AiContextProvider>>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clamp: ResultClamp,
    turn_limit: usize,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ContextResolverBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextResolverBuilder")
            .field("kinds", &self.providers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ContextResolverBuilder {
    /// Resolves `provider.kind()` attachments with `provider`, replacing an earlier provider
    /// of that kind (a host may override a built-in one).
    pub fn provider(mut self, provider: Arc<dyn AiContextProvider>) -> Self {
        self.providers.insert(provider.kind(), provider);
        self
    }

    /// Adds several providers (see [`provider`](Self::provider)).
    pub fn providers(
        self,
        providers: impl IntoIterator<Item = Arc<dyn AiContextProvider>>,
    ) -> Self {
        providers.into_iter().fold(self, Self::provider)
    }

    /// The budget of one resolved attachment, in bytes of compact JSON
    /// (default [`ContextResolver::DEFAULT_LIMIT`]).
    pub fn limit(mut self, bytes: usize) -> Self {
        self.clamp = ResultClamp::new(bytes);
        self
    }

    /// The budget of all of a turn's attachments together, in bytes of compact JSON (default
    /// [`ContextResolver::DEFAULT_TURN_LIMIT`]). Each attachment gets what the earlier ones
    /// left, down to [`ResultClamp::MIN_LIMIT`], so a later one is shortened, never dropped.
    pub fn turn_limit(mut self, bytes: usize) -> Self {
        self.turn_limit = bytes;
        self
    }

    /// The resolver.
    pub fn build(self) -> ContextResolver {
        ContextResolver {
            providers: self.providers,
            audit: self.audit,
            redactor: self.redactor,
            clamp: self.clamp,
            turn_limit: self.turn_limit,
            clock: self.clock,
        }
    }
}

/// Resolves a turn's attachments for one caller and agent; see the module docs.
pub struct ContextResolver {
    providers: BTreeMap<AttachmentKind, Arc<dyn AiContextProvider>>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clamp: ResultClamp,
    turn_limit: usize,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ContextResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextResolver")
            .field("kinds", &self.providers.keys().collect::<Vec<_>>())
            .field("limit", &self.clamp.limit())
            .field("turn_limit", &self.turn_limit)
            .finish_non_exhaustive()
    }
}

/// What to resolve: the turn's caller, agent, conversation and attachments.
#[derive(Clone, Copy, Debug)]
pub struct ContextRequest<'a> {
    /// Who asks.
    pub caller: &'a AiCaller,
    /// The agent of the turn; only the kinds it allows are resolved.
    pub agent: &'a AiAgentDefinition,
    /// The conversation, when it exists already.
    pub conversation_id: Option<&'a ConversationId>,
    /// The references to resolve.
    pub attachments: &'a [AiContextAttachment],
}

impl ContextResolver {
    /// The default budget of one resolved attachment: 16 KiB of compact JSON.
    pub const DEFAULT_LIMIT: usize = 16 * 1024;

    /// The default budget of a turn's attachments together: 24 KiB of compact JSON, about
    /// 6,000 tokens, which leaves a small model's window room for tools and answers.
    pub const DEFAULT_TURN_LIMIT: usize = 24 * 1024;

    /// A builder without providers, auditing into `audit`.
    pub(crate) fn builder(
        audit: Arc<dyn AiAuditSink>,
        redactor: Arc<Redactor>,
        clock: Arc<dyn Clock>,
    ) -> ContextResolverBuilder {
        ContextResolverBuilder {
            providers: BTreeMap::new(),
            audit,
            redactor,
            clamp: ResultClamp::new(Self::DEFAULT_LIMIT),
            turn_limit: Self::DEFAULT_TURN_LIMIT,
            clock,
        }
    }

    /// The kinds this resolver has a provider for.
    pub fn kinds(&self) -> impl Iterator<Item = AttachmentKind> + '_ {
        self.providers.keys().cloned()
    }

    /// Resolves every attachment in order, stopping at the first refusal.
    ///
    /// A kind the agent does not allow (or no provider resolves) is 400
    /// `unsupported_attachment`; providers answer 404 `not_found` for unknown, deleted and
    /// other tenants' references alike, 403 `permission_denied` for a missing permission and
    /// 400 for a malformed reference. A refusal is audited before it is returned (a refusal
    /// whose record cannot be written is 500 `audit_failed`); the `context.resolved` records
    /// of a success are returned unwritten in [`ResolvedContext::audit`].
    pub async fn resolve(&self, request: ContextRequest<'_>) -> Result<ResolvedContext, AiError> {
        let mut resolved = ResolvedContext {
            attachments: Vec::with_capacity(request.attachments.len()),
            audit: Vec::with_capacity(request.attachments.len()),
        };
        // The agent narrows what the caller may read, as it narrows what tools may do.
        let narrowed = AgentRegistry::narrowed_caller(request.caller, request.agent);
        let mut left = self.turn_limit;
        for attachment in request.attachments {
            let clamp = ResultClamp::new(self.clamp.limit().min(left));
            match self
                .resolve_one(&narrowed, &request, attachment, &clamp)
                .await
            {
                Ok(context) => {
                    left = left.saturating_sub(crate::json_size(&context.content));
                    resolved
                        .audit
                        .push(self.resolved_event(&request, attachment, &context));
                    resolved.attachments.push(context);
                }
                Err(error) => {
                    let error = self.redactor.redact_error(error);
                    self.audit_denied(&request, attachment, &error).await?;
                    return Err(error);
                }
            }
        }
        Ok(resolved)
    }

    async fn resolve_one(
        &self,
        caller: &AiCaller,
        request: &ContextRequest<'_>,
        attachment: &AiContextAttachment,
        clamp: &ResultClamp,
    ) -> Result<AiResolvedContext, AiError> {
        let kind = &attachment.kind;
        let provider = self
            .providers
            .get(kind)
            .filter(|_| request.agent.allows_context(kind))
            .ok_or_else(|| {
                AiError::bad_request(
                    "unsupported_attachment",
                    format!(
                        "agent '{}' does not accept {} attachments",
                        request.agent.name,
                        kind.as_str()
                    ),
                )
            })?;
        let mut context = provider
            .resolve(AiContextResolutionRequest {
                caller: caller.clone(),
                agent: request.agent.name.clone(),
                conversation_id: request.conversation_id.cloned(),
                attachment: attachment.clone(),
            })
            .await?;
        // Redact first, then clamp: a clamp could cut a secret in two, and half a secret is
        // no longer recognisable.
        context.title = self.redactor.redact_str(&context.title).into_owned();
        self.redactor.redact_value(&mut context.content);
        let clamped = clamp.clamp(std::mem::take(&mut context.content));
        context.content = clamped.value;
        context.truncated |= clamped.truncated;
        // The reference is the caller's own input; it is echoed redacted like everything else.
        context.kind = kind.clone();
        context.reference_id = self
            .redactor
            .redact_str(&attachment.reference_id)
            .into_owned();
        Ok(context)
    }

    fn audit_event(
        &self,
        request: &ContextRequest<'_>,
        action: AuditAction,
        outcome: AuditOutcome,
        summary: String,
        details: serde_json::Value,
    ) -> AiAuditEvent {
        let mut event = AiAuditEvent::new(
            request.caller.tenant_id.clone(),
            request.caller.actor_id.clone(),
            action,
            outcome,
            summary,
        );
        event.timestamp = self.clock.now();
        event.conversation_id = request.conversation_id.cloned();
        event.details = details.into();
        self.redactor.redact_audit_event(&mut event);
        event
    }

    fn resolved_event(
        &self,
        request: &ContextRequest<'_>,
        attachment: &AiContextAttachment,
        context: &AiResolvedContext,
    ) -> AiAuditEvent {
        self.audit_event(
            request,
            AuditAction::CONTEXT_RESOLVED,
            AuditOutcome::Success,
            format!("{} attachment resolved", attachment.kind.as_str()),
            json!({
                "agent": request.agent.name,
                "kind": attachment.kind,
                "referenceId": attachment.reference_id,
                "activityId": attachment.activity_id,
                "title": context.title,
                "truncated": context.truncated,
                "bytes": crate::json_size(&context.content),
            }),
        )
    }

    async fn audit_denied(
        &self,
        request: &ContextRequest<'_>,
        attachment: &AiContextAttachment,
        error: &AiError,
    ) -> Result<(), AiError> {
        let outcome = if error.status() >= 500 {
            AuditOutcome::Failure
        } else {
            AuditOutcome::Denied
        };
        let event = self.audit_event(
            request,
            AuditAction::CONTEXT_DENIED,
            outcome,
            format!(
                "{} attachment refused: {}",
                attachment.kind.as_str(),
                error.code()
            ),
            json!({
                "agent": request.agent.name,
                "kind": attachment.kind,
                "referenceId": attachment.reference_id,
                "activityId": attachment.activity_id,
                "error": error.to_body(),
            }),
        );
        self.record(event).await
    }

    async fn record(&self, event: AiAuditEvent) -> Result<(), AiError> {
        self.audit.record(event).await.map_err(|error| {
            tracing::error!(
                code = error.code(),
                "context audit record could not be written"
            );
            AiError::audit_failed(
                &error,
                "the context resolution could not be audited, so it was refused",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use chrono::{TimeZone, Utc};
    use elsa_ai_abstractions::Permission;
    use elsa_workflows::TimeRange;
    use serde_json::{Value, json};

    use super::*;
    use crate::audit::InMemoryAuditLog;
    use crate::redaction::REDACTED;
    use crate::testing::governance::{NoWorkflowData, all_permissions, test_agent};

    /// Returns big content full of secrets, to see the resolver redact and clamp it.
    struct Leaky;

    #[async_trait]
    impl AiContextProvider for Leaky {
        fn kind(&self) -> AttachmentKind {
            AttachmentKind::WorkflowDefinition
        }

        async fn resolve(
            &self,
            request: AiContextResolutionRequest,
        ) -> Result<AiResolvedContext, AiError> {
            let rows: Vec<Value> = (0..500)
                .map(|i| json!({"row": i, "password": format!("pw-{i}"), "note": "x".repeat(40)}))
                .collect();
            Ok(AiResolvedContext {
                kind: self.kind(),
                reference_id: request.attachment.reference_id,
                title: "uses ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
                content: json!({"rows": rows, "apiKey": "k-123456"}),
                truncated: false,
            })
        }
    }

    /// A resolver builder over `audit` with the built-in redaction rules.
    fn builder(audit: Arc<dyn AiAuditSink>) -> ContextResolverBuilder {
        crate::HostCore::builder(Arc::new(Redactor::default()), audit)
            .build()
            .context_resolver()
    }

    fn resolver(audit: Arc<InMemoryAuditLog>) -> ContextResolver {
        builder(audit)
            .providers(builtin_context_providers(
                Arc::new(NoWorkflowData),
                Arc::new(NoWorkflowData),
                Arc::new(NoWorkflowData),
            ))
            .build()
    }

    fn every_kind_agent() -> AiAgentDefinition {
        test_agent("all-kinds", &[], &all_permissions())
    }

    fn window(from_day: u32, to_day: u32) -> AiContextAttachment {
        AiContextAttachment {
            time_range: Some(TimeRange {
                from: Utc.with_ymd_and_hms(2024, 4, from_day, 0, 0, 0).unwrap(),
                to: Utc.with_ymd_and_hms(2024, 4, to_day, 0, 0, 0).unwrap(),
            }),
            ..AiContextAttachment::new(AttachmentKind::TimeRange, "window")
        }
    }

    async fn resolve(
        resolver: &ContextResolver,
        caller: &AiCaller,
        agent: &AiAgentDefinition,
        attachments: &[AiContextAttachment],
    ) -> Result<ResolvedContext, AiError> {
        resolver
            .resolve(ContextRequest {
                caller,
                agent,
                conversation_id: None,
                attachments,
            })
            .await
    }

    #[tokio::test]
    async fn time_ranges_need_a_valid_window_and_no_permission() {
        let audit = Arc::new(InMemoryAuditLog::new());
        let resolver = resolver(audit.clone());
        let agent = every_kind_agent();
        let nobody = AiCaller::new("alice", "acme", []);
        let resolved = resolve(&resolver, &nobody, &agent, &[window(18, 19)])
            .await
            .unwrap();
        assert_eq!(resolved.attachments[0].content["durationSeconds"], 86_400);
        assert_eq!(
            resolved.attachments[0].content["from"],
            "2024-04-18T00:00:00+00:00"
        );
        // A resolution's record is handed back for the orchestrator to write with the turn's
        // other records; refusals are written at once.
        let returned: Vec<(AuditAction, AuditOutcome)> = resolved
            .audit
            .iter()
            .map(|e| (e.action.clone(), e.outcome))
            .collect();
        assert_eq!(
            returned,
            [(AuditAction::CONTEXT_RESOLVED, AuditOutcome::Success)]
        );
        assert_eq!(
            resolved.audit[0].details["bytes"],
            crate::json_size(&resolved.attachments[0].content)
        );

        let inverted = resolve(&resolver, &nobody, &agent, &[window(19, 18)])
            .await
            .unwrap_err();
        assert_eq!(
            (inverted.status(), inverted.code()),
            (400, "invalid_time_range")
        );
        let missing = AiContextAttachment::new(AttachmentKind::TimeRange, "window");
        let missing = resolve(&resolver, &nobody, &agent, &[missing])
            .await
            .unwrap_err();
        assert_eq!(missing.code(), "missing_time_range");
        let actions: Vec<(AuditAction, AuditOutcome)> = audit
            .events(&"acme".into())
            .iter()
            .map(|e| (e.action.clone(), e.outcome))
            .collect();
        assert_eq!(
            actions,
            [
                (AuditAction::CONTEXT_DENIED, AuditOutcome::Denied),
                (AuditAction::CONTEXT_DENIED, AuditOutcome::Denied),
            ]
        );
    }

    #[tokio::test]
    async fn a_tenant_reference_must_name_the_callers_own_tenant() {
        let resolver = resolver(Arc::new(InMemoryAuditLog::new()));
        let agent = every_kind_agent();
        let alice = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
        let own = AiContextAttachment::new(AttachmentKind::Tenant, "acme");
        let resolved = resolve(&resolver, &alice, &agent, std::slice::from_ref(&own))
            .await
            .unwrap();
        assert_eq!(resolved.attachments[0].content["tenantId"], "acme");
        assert_eq!(resolved.attachments[0].content["definitionCount"], 0);

        let other = resolve(
            &resolver,
            &alice,
            &agent,
            &[AiContextAttachment::new(AttachmentKind::Tenant, "globex")],
        )
        .await
        .unwrap_err();
        let unknown = resolve(
            &resolver,
            &alice,
            &agent,
            &[AiContextAttachment::new(AttachmentKind::Tenant, "nobody")],
        )
        .await
        .unwrap_err();
        assert_eq!((other.status(), other.code()), (404, "not_found"));
        assert_eq!(
            other.message().replace("globex", "nobody"),
            unknown.message()
        );

        let reader = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOW_INSTANCES]);
        let denied = resolve(&resolver, &reader, &agent, &[own])
            .await
            .unwrap_err();
        assert_eq!((denied.status(), denied.code()), (403, "permission_denied"));
    }

    #[tokio::test]
    async fn the_agent_narrows_what_context_a_caller_may_read() {
        let resolver = resolver(Arc::new(InMemoryAuditLog::new()));
        // The caller may read instances; this agent may not.
        let agent = test_agent("no-instances", &[], &[Permission::READ_WORKFLOWS]);
        let caller = AiCaller::new("alice", "acme", all_permissions());
        let instance = AiContextAttachment::new(AttachmentKind::WorkflowInstance, "i-1");
        let error = resolve(&resolver, &caller, &agent, &[instance])
            .await
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (403, "permission_denied"));
    }

    #[tokio::test]
    async fn kinds_outside_the_agents_scope_are_unsupported() {
        let audit = Arc::new(InMemoryAuditLog::new());
        let resolver = resolver(audit.clone());
        let caller = AiCaller::new("alice", "acme", all_permissions());
        let author = crate::workflow_author();
        let error = resolve(&resolver, &caller, &author, &[window(18, 19)])
            .await
            .unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (400, "unsupported_attachment")
        );
        assert_eq!(
            audit.events(&"acme".into())[0].action,
            AuditAction::CONTEXT_DENIED
        );
        let empty = builder(audit).build();
        let error = resolve(&empty, &caller, &every_kind_agent(), &[window(18, 19)])
            .await
            .unwrap_err();
        assert_eq!(
            error.code(),
            "unsupported_attachment",
            "no provider for the kind"
        );
    }

    #[tokio::test]
    async fn resolved_context_is_redacted_then_clamped_before_anyone_sees_it() {
        let audit = Arc::new(InMemoryAuditLog::new());
        let resolver = builder(audit.clone())
            .provider(Arc::new(Leaky))
            .limit(2048)
            .build();
        let caller = AiCaller::new("alice", "acme", all_permissions());
        let attachment = AiContextAttachment::new(AttachmentKind::WorkflowDefinition, "wf");
        let resolved = resolve(&resolver, &caller, &every_kind_agent(), &[attachment])
            .await
            .unwrap();
        let context = &resolved.attachments[0];
        assert!(context.truncated);
        assert!(crate::json_size(&context.content) <= 2048);
        assert_eq!(context.content["apiKey"], REDACTED);
        let text = serde_json::to_string(context).unwrap();
        assert!(!text.contains("pw-"), "no password survives: {text}");
        assert!(!text.contains("ghp_"));
        let audited = serde_json::to_string(&resolved.audit).unwrap();
        assert!(!audited.contains("ghp_"));
        assert!(audited.contains("\"truncated\":true"));
    }

    #[tokio::test]
    async fn a_turns_attachments_share_one_budget_and_none_is_dropped() {
        let resolver = builder(Arc::new(InMemoryAuditLog::new()))
            .provider(Arc::new(Leaky))
            .limit(2048)
            .turn_limit(3000)
            .build();
        let caller = AiCaller::new("alice", "acme", all_permissions());
        let attachments: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|id| AiContextAttachment::new(AttachmentKind::WorkflowDefinition, id))
            .collect();
        let resolved = resolve(&resolver, &caller, &every_kind_agent(), &attachments)
            .await
            .unwrap();
        let sizes: Vec<usize> = resolved
            .attachments
            .iter()
            .map(|context| crate::json_size(&context.content))
            .collect();
        assert_eq!(sizes.len(), 3, "every attachment is kept");
        assert!(sizes[0] <= 2048, "the first gets its own limit: {sizes:?}");
        assert!(
            sizes[0] + sizes[1] <= 3000,
            "the second what is left: {sizes:?}"
        );
        assert!(
            sizes[2] <= ResultClamp::MIN_LIMIT,
            "the third the minimum: {sizes:?}"
        );
        assert!(resolved.attachments.iter().all(|context| context.truncated));
    }

    #[tokio::test]
    async fn a_refusal_that_cannot_be_audited_is_an_audit_failure() {
        let resolver = builder(Arc::new(crate::testing::governance::FailingAuditSink))
            .providers(builtin_context_providers(
                Arc::new(NoWorkflowData),
                Arc::new(NoWorkflowData),
                Arc::new(NoWorkflowData),
            ))
            .build();
        let caller = AiCaller::new("alice", "acme", []);
        let error = resolve(&resolver, &caller, &every_kind_agent(), &[window(19, 18)])
            .await
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (500, "audit_failed"));
    }
}
