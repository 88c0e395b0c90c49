//! Providers that follow a script instead of calling a model. They are providers like any
//! other (the host holds policy only, and each provider lives in a crate of its own):
//!
//! - [`ScriptedProvider`] plays scripted model transcripts, for test suites, benchmarks and
//!   the quickstart;
//! - [`demo::DemoProvider`] is the `weaver` server's default `[provider]`, a documented script
//!   that lets the whole flow be tried with curl and no model.
//!
//! A [`ScriptedProvider`] behaves like a real provider at the boundary: it opens sessions,
//! reports assistant text, and runs every tool call through the invoker it is given
//! (`ToolStarted`, `invoker.invoke`, `ToolCompleted` with the returned result), so the
//! whole governance pipeline runs. It honours the turn's cancellation token between steps
//! and during delays.
//!
//! A script turned into a turn: text, a tool call run through the invoker the turn is given
//! (here a stand-in that echoes the arguments; a host passes its `ToolGovernor`), and a reply
//! computed from the tool's result.
//!
//! ```
//! use std::sync::Arc;
//!
//! use async_trait::async_trait;
//! use elsa_ai_abstractions::*;
//! use elsa_ai_scripted::{Script, ScriptStep, ScriptedProvider};
//! use futures::StreamExt;
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//!
//! /// Stands in for the host's governed invoker: names the definition the call asks for.
//! struct Echo;
//!
//! #[async_trait]
//! impl AiProviderToolInvoker for Echo {
//!     async fn invoke(&self, call: AiProviderToolInvocation) -> AiToolResult {
//!         AiToolResult::success(json!({"name": call.arguments["definitionId"]}))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let provider = ScriptedProvider::new(
//!     Script::new()
//!         .delta("Let me look. ")
//!         .tool_call_with_id(
//!             "call-1",
//!             "workflow.getDefinition",
//!             json!({"definitionId": "orders"}),
//!         )
//!         .computed(|turn| {
//!             let result = turn.last_result().map(|r| r.content["name"].clone());
//!             ScriptStep::reply(format!("It is called {}.", result.unwrap_or_default()))
//!         }),
//! );
//!
//! let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
//! let agent = AiAgentDefinition::new("workflow-author", "Helps write workflows.");
//! let session = provider
//!     .create_session(CreateAiSessionRequest {
//!         conversation_id: ConversationId::new("c1"),
//!         agent: agent.clone(),
//!         caller: caller.clone(),
//!     })
//!     .await?;
//! let turn = AiTurnRequest {
//!     session,
//!     agent,
//!     caller,
//!     message: "What is the orders workflow called?".into(),
//!     history: Vec::new(),
//!     context: Vec::new(),
//!     tools: Vec::new(),
//!     cancellation: CancellationToken::new(),
//! };
//! let events: Vec<AiProviderEvent> = provider.execute_turn(turn, Arc::new(Echo)).collect().await;
//!
//! assert_eq!(events[0], AiProviderEvent::AssistantDelta { text: "Let me look. ".into() });
//! let AiProviderEvent::ToolStarted { call_id, .. } = &events[1] else { panic!("{events:?}") };
//! assert_eq!(call_id, "call-1");
//! let AiProviderEvent::ToolCompleted { result, .. } = &events[2] else { panic!("{events:?}") };
//! assert_eq!(result.content["name"], "orders");
//! assert_eq!(
//!     events[events.len() - 2],
//!     AiProviderEvent::AssistantMessage { text: "It is called \"orders\".".into() }
//! );
//! assert_eq!(events.last(), Some(&AiProviderEvent::Completed));
//! # Ok::<(), AiError>(())
//! # }).unwrap();
//! ```

pub mod demo;
mod player;
mod script;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiProvider, AiProviderEvent, AiProviderInfo, AiProviderToolInvoker, AiSessionHandle,
    AiTurnRequest, CreateAiSessionRequest,
};
use futures::stream::BoxStream;
use parking_lot::Mutex;

use player::Player;
pub use script::{
    CompletedToolCall, ComputedStep, Script, ScriptStep, ScriptedToolCall, TurnSoFar,
};

/// Where a [`ScriptedProvider`] takes each turn's script from.
enum Scripts {
    /// The same script for every turn.
    Every(Script),
    /// One script per turn, in order.
    Queue(Mutex<VecDeque<Script>>),
    /// A script chosen from the turn request.
    Directed(Arc<dyn Fn(&AiTurnRequest) -> Script + Send + Sync>),
}

/// An [`AiProvider`] that plays [`Script`]s.
///
/// ```
/// use elsa_ai_abstractions::AiProvider;
/// use elsa_ai_scripted::{Script, ScriptedProvider};
///
/// let provider = ScriptedProvider::directed(|turn| {
///     Script::new().reply(format!("You said: {}", turn.message))
/// })
/// .named("demo");
/// assert_eq!(provider.name(), "demo");
/// assert!(provider.info().scripted);
/// ```
pub struct ScriptedProvider {
    name: String,
    scripts: Scripts,
    session_error: Option<AiError>,
    sessions: AtomicU64,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ScriptedProvider {
    /// The name a scripted provider reports unless [`named`](Self::named) otherwise.
    pub const DEFAULT_NAME: &'static str = "scripted";

    fn with(scripts: Scripts) -> Self {
        Self {
            name: Self::DEFAULT_NAME.to_owned(),
            scripts,
            session_error: None,
            sessions: AtomicU64::new(0),
        }
    }

    /// Plays `script` on every turn.
    pub fn new(script: Script) -> Self {
        Self::with(Scripts::Every(script))
    }

    /// Plays one script per turn, in order; a turn beyond the last fails with 500
    /// `script_exhausted`.
    pub fn turns(scripts: impl IntoIterator<Item = Script>) -> Self {
        Self::with(Scripts::Queue(Mutex::new(scripts.into_iter().collect())))
    }

    /// Builds each turn's script from its request (the message, context, tools).
    pub fn directed(director: impl Fn(&AiTurnRequest) -> Script + Send + Sync + 'static) -> Self {
        Self::with(Scripts::Directed(Arc::new(director)))
    }

    /// Reports `name` as the provider name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Refuses every session with `error`, like a runtime that is down.
    pub fn failing_sessions(mut self, error: AiError) -> Self {
        self.session_error = Some(error);
        self
    }

    fn script_for(&self, request: &AiTurnRequest) -> Result<Script, AiError> {
        match &self.scripts {
            Scripts::Every(script) => Ok(script.clone()),
            Scripts::Queue(queue) => queue.lock().pop_front().ok_or_else(|| {
                AiError::internal(
                    "script_exhausted",
                    "the scripted provider has no script left for this turn",
                )
            }),
            Scripts::Directed(director) => Ok(director(request)),
        }
    }
}

#[async_trait]
impl AiProvider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn info(&self) -> AiProviderInfo {
        AiProviderInfo {
            name: self.name.clone(),
            display_name: "Scripted transcripts (no model)".to_owned(),
            model: None,
            scripted: true,
        }
    }

    async fn create_session(
        &self,
        request: CreateAiSessionRequest,
    ) -> Result<AiSessionHandle, AiError> {
        if let Some(error) = &self.session_error {
            return Err(error.clone());
        }
        let number = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(AiSessionHandle {
            session_id: format!("{}-session-{number}", self.name),
            provider: self.name.clone(),
            conversation_id: request.conversation_id,
        })
    }

    fn execute_turn(
        &self,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> BoxStream<'static, AiProviderEvent> {
        match self.script_for(&request) {
            Ok(script) => Player::new(script, request, invoker).into_stream(),
            Err(error) => {
                futures::StreamExt::boxed(futures::stream::iter([AiProviderEvent::Failed {
                    error,
                }]))
            }
        }
    }
}
