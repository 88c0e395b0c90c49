//! The `ToolGovernor`: the [`AiProviderToolInvoker`] a provider calls, running the eleven
//! steps of SPEC §3 in order, each a small type of its own (see [`GovernanceStep`]).
//!
//! ```text
//!  1 ResolveActor ─ 2 ResolveAgentScope ─ 3 FindTool ─ 4 CheckEnablement ─ 5 CheckTenantBehavior
//!  ─ 6 CheckPermissions ─ 7 CheckMutabilityPolicy ─ 8 RedactArguments ─ 9 ExecuteTool
//!  ─ 10 RedactResult (+ clamp) ─ 11 EmitEvents
//! ```
//!
//! A check that refuses (steps 1–7) ends the call there: its error is redacted (step 10) and
//! reported (step 11) as an [`AiToolResult::denied`]; nothing after the refusing step runs.

mod events;
mod step;
mod steps;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use elsa_ai_abstractions::{
    AiAuditSink, AiCaller, AiContextAttachment, AiConversationStore, AiError,
    AiProviderToolInvocation, AiProviderToolInvoker, AiToolExecutionContext, AiToolResult,
    AiToolServices, Clock, ConversationId, GroundingLimits, ToolMutability,
};
use tokio::sync::OnceCell;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

use crate::clamp::ResultClamp;
use crate::redaction::Redactor;
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::telemetry::Metrics;
use crate::telemetry::tool_span;
pub use events::{ToolEvent, ToolEventSink};
use step::Refusal;
pub use step::{GovernanceStep, StepObserver};
use steps::{
    AgentScope, CallRecord, CheckEnablement, CheckMutabilityPolicy, CheckPermissions,
    CheckTenantBehavior, ClampResult, EmitEvents, ExecuteTool, FindTool, RedactArguments,
    RedactResult, ResolveActor, ResolveAgentScope,
};

/// Everything a turn binds its tool calls to: who, under which agent, in which conversation,
/// with which attachments, where tool events go and when to give up.
#[derive(Clone)]
pub struct ToolCallScope {
    /// The caller of the turn.
    pub caller: AiCaller,
    /// The agent the conversation runs under (shared by the turn's calls and their records).
    pub agent: Arc<str>,
    /// The conversation, if the calls come from a chat turn.
    pub conversation_id: Option<ConversationId>,
    /// The references attached to the turn, handed to every tool.
    pub attachments: Vec<AiContextAttachment>,
    /// Where `tool.started` / `tool.completed` / `tool.failed` are reported.
    pub events: Option<Arc<dyn ToolEventSink>>,
    /// The turn's cancellation; cancelling it cancels running tools.
    pub cancellation: CancellationToken,
    /// The span each call's `execute_tool` span is a child of (the chat turn's, whichever
    /// task the provider calls from); `None` uses the span current at the call.
    pub span: Option<Span>,
    /// Whether the host already checked that the caller owns the conversation for this turn
    /// (the orchestrator does at admission), so step 6 need not read it again.
    owner_verified: bool,
    /// Whether the calls are one chat turn's, whose repeated read-only calls are answered
    /// with a note instead of running again (see [`ToolCallScope::as_one_turn`]).
    one_turn: bool,
}

impl std::fmt::Debug for ToolCallScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallScope")
            .field("caller", &self.caller)
            .field("agent", &self.agent)
            .field("conversation_id", &self.conversation_id)
            .field("attachments", &self.attachments)
            .field("events", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolCallScope {
    /// A scope for `caller` under `agent`, without conversation, attachments or event sink.
    pub fn new(caller: AiCaller, agent: impl Into<Arc<str>>) -> Self {
        Self {
            caller,
            agent: agent.into(),
            conversation_id: None,
            attachments: Vec::new(),
            events: None,
            cancellation: CancellationToken::new(),
            span: None,
            owner_verified: false,
            one_turn: false,
        }
    }

    /// Marks the calls as one chat turn's: a read-only call repeating one that already
    /// succeeded in the turn (same tool, same arguments) is not run again; the model gets
    /// a `repeated_call` note saying it has that result, audited as a denial at step 9.
    /// Small models tend to call the same tool again after its result; this stops them
    /// without spending the turn's rounds. (An MCP client's calls are each a scope of their
    /// own and are never answered this way.)
    pub fn as_one_turn(mut self) -> Self {
        self.one_turn = true;
        self
    }

    /// Traces the calls as children of `span` (the chat turn's).
    pub fn with_span(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }

    /// Binds the calls to a conversation (whose ownership step 6 checks).
    pub fn with_conversation(mut self, conversation_id: ConversationId) -> Self {
        self.conversation_id = Some(conversation_id);
        self
    }

    /// Binds the calls to a conversation the host has already found the caller owns for
    /// this turn: step 6 takes that verdict instead of reading the conversation again.
    pub(crate) fn with_owned_conversation(mut self, conversation_id: ConversationId) -> Self {
        self.conversation_id = Some(conversation_id);
        self.owner_verified = true;
        self
    }

    /// Hands these attachments to every tool.
    pub fn with_attachments(mut self, attachments: Vec<AiContextAttachment>) -> Self {
        self.attachments = attachments;
        self
    }

    /// Reports tool events to `events`.
    pub fn with_events(mut self, events: Arc<dyn ToolEventSink>) -> Self {
        self.events = Some(events);
        self
    }

    /// Uses the turn's cancellation token.
    pub fn with_cancellation(mut self, cancellation: CancellationToken) -> Self {
        self.cancellation = cancellation;
        self
    }
}

struct Governor {
    registry: Arc<ToolRegistry>,
    services: Arc<AiToolServices>,
    audit: Arc<dyn AiAuditSink>,
    redactor: Arc<Redactor>,
    clamp: ResultClamp,
    default_timeout: Duration,
    conversations: Arc<dyn AiConversationStore>,
    observer: Option<Arc<dyn StepObserver>>,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    limits: GroundingLimits,
}

/// Builds a [`ToolGovernor`].
pub struct ToolGovernorBuilder {
    governor: Governor,
}

impl std::fmt::Debug for ToolGovernorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolGovernorBuilder")
            .finish_non_exhaustive()
    }
}

impl ToolGovernorBuilder {
    /// The default budget of a tool result in model context, in bytes of compact JSON.
    pub const DEFAULT_RESULT_LIMIT: usize = 32 * 1024;

    /// The default timeout of a tool that names none.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// The byte budget of a result in model context (see [`ResultClamp`]).
    pub fn result_limit(mut self, bytes: usize) -> Self {
        self.governor.clamp = ResultClamp::new(bytes);
        self
    }

    /// The timeout of tools whose definition names none.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.governor.default_timeout = timeout;
        self
    }

    /// The bounds of grounding results that tools apply themselves (default
    /// [`GroundingLimits::default`]).
    pub fn grounding_limits(mut self, limits: GroundingLimits) -> Self {
        self.governor.limits = limits;
        self
    }

    /// Reports each step of each call to `observer`.
    pub fn observer(mut self, observer: Arc<dyn StepObserver>) -> Self {
        self.governor.observer = Some(observer);
        self
    }

    /// Counts outcomes into `metrics` (default: the governor's own counters).
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.governor.metrics = metrics;
        self
    }

    /// The governor.
    pub fn build(self) -> ToolGovernor {
        ToolGovernor {
            governor: Arc::new(self.governor),
        }
    }
}

/// Governed tool execution: bind it to a turn and hand the invoker to the provider. The
/// crate documentation shows the wiring.
#[derive(Clone)]
pub struct ToolGovernor {
    governor: Arc<Governor>,
}

impl std::fmt::Debug for ToolGovernor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolGovernor")
            .field("registry", &self.governor.registry)
            .field("result_limit", &self.governor.clamp.limit())
            .field("default_timeout", &self.governor.default_timeout)
            .finish_non_exhaustive()
    }
}

impl ToolGovernor {
    /// A builder over the registry (which also supplies agents, enablement and policy), the
    /// Elsa services tools use, and what the host core shares; hosts call
    /// [`HostCore::governor`](crate::HostCore::governor).
    pub(crate) fn builder(
        registry: Arc<ToolRegistry>,
        services: AiToolServices,
        audit: Arc<dyn AiAuditSink>,
        redactor: Arc<Redactor>,
        clock: Arc<dyn Clock>,
        conversations: Arc<dyn AiConversationStore>,
    ) -> ToolGovernorBuilder {
        ToolGovernorBuilder {
            governor: Governor {
                registry,
                services: Arc::new(services),
                audit,
                redactor,
                clamp: ResultClamp::new(ToolGovernorBuilder::DEFAULT_RESULT_LIMIT),
                default_timeout: ToolGovernorBuilder::DEFAULT_TIMEOUT,
                conversations,
                observer: None,
                metrics: Arc::new(Metrics::new()),
                clock,
                limits: GroundingLimits::default(),
            },
        }
    }

    /// The invoker for one turn: every call it receives is governed under `scope`.
    pub fn bind(&self, scope: ToolCallScope) -> Arc<dyn AiProviderToolInvoker> {
        Arc::new(BoundToolInvoker {
            governor: self.governor.clone(),
            ownership: OnceCell::new_with(scope.owner_verified.then_some(Ok(()))),
            scope,
            narrowed: OnceLock::new(),
            answered: std::sync::Mutex::default(),
        })
    }

    /// The counters the governor updates.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.governor.metrics
    }

    /// The registry the governor enforces.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.governor.registry
    }
}

/// A governor bound to one turn.
struct BoundToolInvoker {
    governor: Arc<Governor>,
    scope: ToolCallScope,
    /// Step 6's ownership verdict, computed at most once per turn.
    ownership: OnceCell<Result<(), AiError>>,
    /// Step 2's narrowed caller, made at most once per turn.
    narrowed: OnceLock<Arc<AiCaller>>,
    /// The read-only calls of this turn that succeeded.
    /// A call repeating one is not run again (see [`BoundToolInvoker::earlier_call`]).
    answered: std::sync::Mutex<Vec<AnsweredCall>>,
}

/// A read-only call a turn already answered.
struct AnsweredCall {
    tool: Arc<str>,
    arguments: Arc<serde_json::Value>,
    call_id: Arc<str>,
}

// Written out rather than through `async_trait`: its future would hold the invocation and
// both spans beside the governed call's future, and that one allocation per call would grow
// past what the allocator serves from its fast per-thread cache.
impl AiProviderToolInvoker for BoundToolInvoker {
    fn invoke<'a, 'f>(
        &'a self,
        invocation: AiProviderToolInvocation,
    ) -> Pin<Box<dyn Future<Output = AiToolResult> + Send + 'f>>
    where
        'a: 'f,
        Self: 'f,
    {
        // No subscriber takes `info` spans: `tool_span` would make a disabled span, so its
        // name is not redacted for nothing.
        if !tracing::level_enabled!(tracing::Level::INFO) {
            return Box::pin(self.govern(invocation));
        }
        // The name comes from the model: it reaches the trace only after redaction.
        let parent = self.scope.span.clone().unwrap_or_else(Span::current);
        let span = tool_span(
            &parent,
            &self.governor.redactor.redact_str(&invocation.tool_name),
            &invocation.call_id,
        );
        Box::pin(self.govern(invocation).instrument(span))
    }
}

impl BoundToolInvoker {
    /// The note for a read-only call this turn already answered with the same arguments:
    /// running it again would only spend a round (small models tend to call the same tool
    /// again after its result), so the model is told it has the result instead.
    fn earlier_call(&self, tool: &str, arguments: &serde_json::Value) -> Option<AiError> {
        let answered = self.answered_lock();
        let first = &answered
            .iter()
            .find(|call| *call.tool == *tool && *call.arguments == *arguments)?
            .call_id;
        Some(AiError::conflict(
            "repeated_call",
            format!(
                "this turn already called '{tool}' with these arguments (call {first}); its \
                 result is in the conversation above: use it instead of calling again"
            ),
        ))
    }

    fn answered_lock(&self) -> std::sync::MutexGuard<'_, Vec<AnsweredCall>> {
        self.answered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn observe<T>(
        &self,
        call_id: &str,
        step: GovernanceStep,
        outcome: Result<T, AiError>,
    ) -> Result<T, Refusal> {
        if let Some(observer) = &self.governor.observer {
            observer.step_finished(call_id, step, outcome.as_ref().err());
        }
        outcome.map_err(|error| Refusal { step, error })
    }

    fn passed(&self, call_id: &str, step: GovernanceStep) {
        if let Some(observer) = &self.governor.observer {
            observer.step_finished(call_id, step, None);
        }
    }

    /// Steps 1–7: everything that may refuse the call before it touches its arguments.
    /// `registered` is the tool the called name reaches, if any (looked up once per call).
    async fn check<'s>(
        &'s self,
        call_id: &str,
        tool_name: &str,
        registered: Option<&'s RegisteredTool>,
        arguments: &serde_json::Value,
    ) -> Result<(&'s RegisteredTool, AgentScope<'s>), Refusal> {
        let g = &*self.governor;
        let scope = &self.scope;
        let actor = self.observe(
            call_id,
            GovernanceStep::ResolveActor,
            ResolveActor.run(&scope.caller),
        )?;
        let agent_scope = self.observe(
            call_id,
            GovernanceStep::ResolveAgentScope,
            ResolveAgentScope {
                agents: g.registry.agents(),
                narrowed: &self.narrowed,
            }
            .run(actor, &scope.agent, tool_name, registered),
        )?;
        let tool = self.observe(
            call_id,
            GovernanceStep::FindTool,
            FindTool.run(&agent_scope, tool_name, registered),
        )?;
        let enabled = CheckEnablement {
            registry: &g.registry,
        }
        .run(&agent_scope, tool)
        .await;
        self.observe(call_id, GovernanceStep::CheckEnablement, enabled)?;
        let definition = tool.definition();
        self.observe(
            call_id,
            GovernanceStep::CheckTenantBehavior,
            CheckTenantBehavior.run(&agent_scope.actor, definition, arguments),
        )?;
        let permitted = CheckPermissions {
            conversations: Some(g.conversations.as_ref()),
        }
        .run(
            &agent_scope,
            definition,
            scope.conversation_id.as_ref(),
            &self.ownership,
        )
        .await;
        self.observe(call_id, GovernanceStep::CheckPermissions, permitted)?;
        self.observe(
            call_id,
            GovernanceStep::CheckMutabilityPolicy,
            CheckMutabilityPolicy {
                policy: g.registry.policy(),
            }
            .run(definition, agent_scope.permissions()),
        )?;
        Ok((tool, agent_scope))
    }

    /// The eleven steps. This future is allocated for every call, so it is kept within what
    /// the allocator's per-thread cache serves (1 KiB; a tracing span around it may tip it
    /// over): the checks and the execution run in it, the report (the largest part) is a
    /// boxed future of its own, and each value is made in the narrowest block that needs it
    /// (a local in scope at an await keeps its space after it has moved on).
    async fn govern(&self, invocation: AiProviderToolInvocation) -> AiToolResult {
        let g = &*self.governor;
        let scope = &self.scope;
        g.metrics.tools.invoked();
        // Shared by the call's events and audit details instead of copied into each. Records
        // and metrics name a tool by its canonical name, whichever name the call used.
        let call_id: Arc<str> = invocation.call_id.into();
        let registered = g.registry.registered(&invocation.tool_name);
        let (tool_name, called_as): (Arc<str>, Option<Arc<str>>) = match registered {
            Some(tool) if **tool.name() == *invocation.tool_name => (Arc::clone(tool.name()), None),
            Some(tool) => (Arc::clone(tool.name()), Some(invocation.tool_name.into())),
            None => (invocation.tool_name.into(), None),
        };
        let record = CallRecord {
            call_id: &call_id,
            tool_name: &tool_name,
            called_as: called_as.as_ref(),
            caller: &scope.caller,
            agent: &scope.agent,
            conversation_id: scope.conversation_id.as_ref(),
            started: Instant::now(),
        };
        let emit = EmitEvents {
            audit: g.audit.as_ref(),
            events: scope.events.as_deref(),
            counters: &g.metrics.tools,
            redactor: &g.redactor,
            clock: g.clock.as_ref(),
        };
        let redact_result = RedactResult {
            redactor: &g.redactor,
        };
        let call_id: &str = record.call_id;

        let (tool, agent_scope) = match self
            .check(call_id, record.tool_name, registered, &invocation.arguments)
            .await
        {
            Ok(checked) => checked,
            Err(Refusal { step, error }) => {
                let refused = {
                    // A refused call's arguments are still only reported redacted.
                    let arguments = RedactArguments {
                        redactor: &g.redactor,
                    }
                    .run(invocation.arguments)
                    .wrapped(Arc::new);
                    let denied = redact_result.denied(&error);
                    self.passed(call_id, GovernanceStep::RedactResult);
                    emit.refused(&record, step, arguments, denied)
                };
                let result = Box::pin(refused).await;
                self.passed(call_id, GovernanceStep::EmitEvents);
                return result.into_inner();
            }
        };

        let arguments = RedactArguments {
            redactor: &g.redactor,
        }
        .run(invocation.arguments)
        .wrapped(Arc::new);
        self.passed(call_id, GovernanceStep::RedactArguments);
        let noted = scope.one_turn && tool.definition().mutability == ToolMutability::ReadOnly;
        if noted && let Some(error) = self.earlier_call(record.tool_name, &arguments) {
            let repeated = emit.refused(
                &record,
                GovernanceStep::ExecuteTool,
                arguments.clone(),
                redact_result.denied(&error),
            );
            let result = Box::pin(repeated).await;
            self.passed(call_id, GovernanceStep::EmitEvents);
            return result.into_inner();
        }
        emit.started(&record, &arguments).done().await;

        let execution = {
            let context = AiToolExecutionContext {
                call_id: Arc::clone(record.call_id),
                // Tools act with the caller's permissions narrowed by the agent: least
                // privilege.
                caller: agent_scope.narrowed,
                agent: Arc::clone(&scope.agent),
                conversation_id: scope.conversation_id.clone(),
                arguments: Arc::clone(arguments.get()),
                attachments: scope.attachments.clone(),
                services: g.services.clone(),
                // The tool's own token; the turn's reaches it through `ExecuteTool`.
                cancellation: CancellationToken::new(),
                limits: g.limits,
            };
            ExecuteTool {
                default_timeout: g.default_timeout,
                started: record.started,
            }
            .run(tool, &scope.cancellation, context)
        };
        let finished = {
            let executed = execution.await;
            let executed = self
                .observe(call_id, GovernanceStep::ExecuteTool, executed)
                .map_err(|r| r.error);
            let result = ClampResult { clamp: &g.clamp }.run(redact_result.run(executed));
            self.passed(call_id, GovernanceStep::RedactResult);
            if noted && result.is_success() {
                self.answered_lock().push(AnsweredCall {
                    tool: Arc::clone(record.tool_name),
                    arguments: Arc::clone(arguments.get()),
                    call_id: Arc::clone(record.call_id),
                });
            }
            emit.finished(&record, tool.definition().audit_behavior, arguments, result)
        };
        let result = Box::pin(finished).await;
        self.passed(call_id, GovernanceStep::EmitEvents);
        result.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::AiToolOutcome;
    use serde_json::json;

    use super::*;
    use crate::testing::governance::{
        GovernanceHarness, TEST_AGENT, TEST_TENANT, TestTool, invocation, proposal_tool, read_tool,
    };

    #[tokio::test]
    async fn a_turns_repeated_read_only_call_is_answered_with_a_note_not_run_again() {
        let read = Arc::new(TestTool::echo(read_tool("demo.read")));
        let propose = Arc::new(TestTool::echo(proposal_tool("demo.propose")));
        let harness = GovernanceHarness::builder()
            .tool(read.clone())
            .tool(propose.clone())
            .build();
        harness.decide("demo.propose", None, true).await;
        let turn = harness
            .governor
            .bind(harness.scope(harness.caller()).as_one_turn());
        let first = turn
            .invoke(invocation("demo.read", json!({"id": "wf-1"})))
            .await;
        assert_eq!(first.outcome, AiToolOutcome::Success);
        let again = turn
            .invoke(invocation("demo.read", json!({"id": "wf-1"})))
            .await;
        assert_eq!(again.outcome, AiToolOutcome::Denied);
        let note = again.error.as_ref().expect("a typed note");
        assert_eq!(note.code, "repeated_call");
        assert!(
            note.message.contains("already called 'demo.read'"),
            "{}",
            note.message
        );
        assert_eq!(read.calls(), 1, "the tool ran once");

        // Other arguments, a proposal tool and another scope all run.
        let other = turn
            .invoke(invocation("demo.read", json!({"id": "wf-2"})))
            .await;
        assert_eq!(other.outcome, AiToolOutcome::Success);
        for _ in 0..2 {
            let proposed = turn
                .invoke(invocation("demo.propose", json!({"id": "wf-1"})))
                .await;
            assert_eq!(proposed.outcome, AiToolOutcome::Success);
        }
        assert_eq!(propose.calls(), 2, "only read-only calls are noted");
        let mcp_like = harness.governor.bind(harness.scope(harness.caller()));
        for _ in 0..2 {
            let result = mcp_like
                .invoke(invocation("demo.read", json!({"id": "wf-1"})))
                .await;
            assert_eq!(result.outcome, AiToolOutcome::Success);
        }
        assert_eq!(read.calls(), 4);

        // The note is audited as what it is: a denial at step 9 with its code.
        let audited = harness.audit.events(&TEST_TENANT.into());
        let repeated: Vec<_> = audited
            .iter()
            .filter(|e| e.details["error"]["code"] == "repeated_call")
            .collect();
        assert_eq!(repeated.len(), 1);
        assert_eq!(repeated[0].details["step"], "executeTool");
    }

    #[tokio::test]
    async fn a_turn_whose_conversation_the_host_checked_is_not_read_again() {
        let harness = GovernanceHarness::builder()
            .definition(read_tool("demo.read"))
            .build();
        // Not in the store: only the host's verdict lets the call through.
        let scope = ToolCallScope::new(harness.caller(), TEST_AGENT)
            .with_owned_conversation(ConversationId::new("checked-at-admission"));
        let invoker = harness.governor.bind(scope);
        for _ in 0..2 {
            let result = invoker.invoke(invocation("demo.read", json!({}))).await;
            assert_eq!(result.outcome, AiToolOutcome::Success, "{result:?}");
        }
        assert_eq!(harness.conversations.finds(), 0);

        // The same conversation bound the ordinary way is looked up, and refused.
        let scope = ToolCallScope::new(harness.caller(), TEST_AGENT)
            .with_conversation(ConversationId::new("checked-at-admission"));
        let result = harness
            .governor
            .bind(scope)
            .invoke(invocation("demo.read", json!({})))
            .await;
        assert_eq!(harness.conversations.finds(), 1);
        assert_eq!(
            result.error.as_ref().map(|e| e.code.as_str()),
            Some("conversation_not_found")
        );
    }
}
