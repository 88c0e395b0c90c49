//! Context resolution: the attachments of a chat request turned into compact, redacted,
//! size-bounded context a model may read.
//!
//! One [`AiContextProvider`] per attachment kind reads through the `elsa-workflows` service
//! traits only, checks the permission its kind needs and summarises what it found. The
//! [`ContextResolver`] runs the provider of each attachment's kind (only kinds the agent
//! allows), with the caller's permissions narrowed by the agent's, redacts the result, then
//! clamps it to the context budget, and audits every resolution (`context.resolved`) and
//! every refusal (`context.denied`).

mod providers;
mod summary;

use std::collections::BTreeMap;
use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAgentDefinition, AiAuditEvent, AiAuditSink, AiCaller, AiContextAttachment, AiContextProvider,
    AiContextResolutionRequest, AiError, AiResolvedContext, AttachmentKind, AuditAction,
    AuditOutcome, Clock, ConversationId, SystemClock,
};
use elsa_workflows::{ActivityCatalog, WorkflowDefinitionStore, WorkflowInstanceStore};
use serde_json::json;

use crate::{AgentRegistry, Redactor, ResultClamp};
pub use providers::{
    ActivitySelectionContext, DiagnosticsScopeContext, TenantContext, TimeRangeContext,
    WorkflowDefinitionContext, WorkflowInstanceContext,
};

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

/// Builds a [`ContextResolver`].
pub struct ContextResolverBuilder {
    providers: BTreeMap<AttachmentKind, Arc<dyn AiContextProvider>>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clamp: ResultClamp,
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

    /// The redactor for resolved context and audit records (default: built-in rules).
    pub fn redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The budget of one resolved attachment, in bytes of compact JSON
    /// (default [`ContextResolver::DEFAULT_LIMIT`]).
    pub fn limit(mut self, bytes: usize) -> Self {
        self.clamp = ResultClamp::new(bytes);
        self
    }

    /// Stamps audit records with `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The resolver.
    pub fn build(self) -> ContextResolver {
        ContextResolver {
            providers: self.providers,
            audit: self.audit,
            redactor: self.redactor,
            clamp: self.clamp,
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
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ContextResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextResolver")
            .field("kinds", &self.providers.keys().collect::<Vec<_>>())
            .field("limit", &self.clamp.limit())
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

    /// A builder without providers, auditing into `audit`.
    pub fn builder(audit: Arc<dyn AiAuditSink>) -> ContextResolverBuilder {
        ContextResolverBuilder {
            providers: BTreeMap::new(),
            audit,
            redactor: Arc::new(Redactor::default()),
            clamp: ResultClamp::new(Self::DEFAULT_LIMIT),
            clock: Arc::new(SystemClock),
        }
    }

    /// The kinds this resolver has a provider for.
    pub fn kinds(&self) -> impl Iterator<Item = AttachmentKind> + '_ {
        self.providers.keys().copied()
    }

    /// Resolves every attachment in order, stopping at the first refusal.
    ///
    /// A kind the agent does not allow (or no provider resolves) is 400
    /// `unsupported_attachment`; providers answer 404 `not_found` for unknown, deleted and
    /// other tenants' references alike, 403 `permission_denied` for a missing permission and
    /// 400 for a malformed reference. Each outcome is audited before it is returned; a
    /// resolution whose record cannot be written is 500 `audit_failed`.
    pub async fn resolve(
        &self,
        request: ContextRequest<'_>,
    ) -> Result<Vec<AiResolvedContext>, AiError> {
        let mut resolved = Vec::with_capacity(request.attachments.len());
        // The agent narrows what the caller may read, as it narrows what tools may do.
        let narrowed = AiCaller {
            permissions: AgentRegistry::effective_permissions(request.caller, request.agent),
            ..request.caller.clone()
        };
        for attachment in request.attachments {
            match self.resolve_one(&narrowed, &request, attachment).await {
                Ok(context) => {
                    self.audit_resolved(&request, attachment, &context).await?;
                    resolved.push(context);
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
    ) -> Result<AiResolvedContext, AiError> {
        let kind = attachment.kind;
        let provider = self
            .providers
            .get(&kind)
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
        let clamped = self.clamp.clamp(std::mem::take(&mut context.content));
        context.content = clamped.value;
        context.truncated |= clamped.truncated;
        // The reference is the caller's own input; it is echoed redacted like everything else.
        context.kind = kind;
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
        event.details = details;
        self.redactor.redact_audit_event(&mut event);
        event
    }

    async fn audit_resolved(
        &self,
        request: &ContextRequest<'_>,
        attachment: &AiContextAttachment,
        context: &AiResolvedContext,
    ) -> Result<(), AiError> {
        let event = self.audit_event(
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
        );
        self.record(event).await
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
            AiError::internal(
                "audit_failed",
                "the context resolution could not be audited, so it was refused",
            )
        })
    }
}
