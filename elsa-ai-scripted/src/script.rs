//! Scripts: what a [`ScriptedProvider`](super::ScriptedProvider) plays, as data.

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{AiError, AiToolResult, AiTurnRequest};
use serde_json::Value;

/// One model transcript: the steps of a turn, played in order. A turn whose script runs
/// out of steps completes.
///
/// ```
/// use std::time::Duration;
///
/// use elsa_ai_scripted::{Script, ScriptStep};
/// use serde_json::json;
///
/// let script = Script::new()
///     .delta("Let me look that up. ")
///     .tool_call("workflow.getDefinition", json!({"definitionId": "orders"}))
///     .delay(Duration::from_millis(50))
///     .computed(|turn| {
///         let name = turn.last_result().map(|r| r.content["name"].to_string());
///         ScriptStep::reply(format!("The workflow is called {}.", name.unwrap_or_default()))
///     });
/// assert_eq!(script.steps().len(), 4);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Script {
    steps: Vec<ScriptStep>,
}

impl Script {
    /// An empty script: the turn completes at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends any step.
    pub fn step(mut self, step: ScriptStep) -> Self {
        self.steps.push(step);
        self
    }

    /// Appends a piece of assistant text.
    pub fn delta(self, text: impl Into<String>) -> Self {
        self.step(ScriptStep::Delta(text.into()))
    }

    /// Appends the assistant's complete message.
    pub fn message(self, text: impl Into<String>) -> Self {
        self.step(ScriptStep::Message(text.into()))
    }

    /// Appends a reply as a model streams it: one delta per word, then the whole message.
    pub fn reply(self, text: impl Into<String>) -> Self {
        self.step(ScriptStep::reply(text))
    }

    /// Appends a tool call with a generated call id.
    pub fn tool_call(self, tool_name: impl Into<String>, arguments: Value) -> Self {
        self.step(ScriptStep::tool_call(tool_name, arguments))
    }

    /// Appends a tool call with the given call id.
    pub fn tool_call_with_id(
        self,
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.step(ScriptStep::ToolCall(ScriptedToolCall {
            call_id: Some(call_id.into()),
            tool_name: tool_name.into(),
            arguments,
        }))
    }

    /// Appends a pause (cut short when the turn is cancelled).
    pub fn delay(self, duration: Duration) -> Self {
        self.step(ScriptStep::Delay(duration))
    }

    /// Appends a failure: the turn ends with it.
    pub fn fail(self, error: AiError) -> Self {
        self.step(ScriptStep::Fail(error))
    }

    /// Appends a step computed when it is reached, from the turn so far (the request and
    /// the results of earlier tool calls).
    pub fn computed(
        self,
        compute: impl Fn(&TurnSoFar) -> ScriptStep + Send + Sync + 'static,
    ) -> Self {
        self.step(ScriptStep::Computed(ComputedStep(Arc::new(compute))))
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[ScriptStep] {
        &self.steps
    }

    pub(super) fn into_steps(self) -> Vec<ScriptStep> {
        self.steps
    }
}

/// One step of a [`Script`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ScriptStep {
    /// Report a piece of assistant text.
    Delta(String),
    /// Report the assistant's complete message.
    Message(String),
    /// Several steps in a row (as [`ScriptStep::reply`] builds them).
    Sequence(Vec<ScriptStep>),
    /// Call a tool through the invoker: `ToolStarted`, the governed call, `ToolCompleted`.
    ToolCall(ScriptedToolCall),
    /// Wait; cut short when the turn is cancelled.
    Delay(Duration),
    /// End the turn with this error.
    Fail(AiError),
    /// Compute the step when it is reached.
    Computed(ComputedStep),
}

impl ScriptStep {
    /// A tool call with a generated call id.
    pub fn tool_call(tool_name: impl Into<String>, arguments: Value) -> Self {
        Self::ToolCall(ScriptedToolCall {
            call_id: None,
            tool_name: tool_name.into(),
            arguments,
        })
    }

    /// A reply as a model streams it: one delta per word (keeping the spaces), then the
    /// whole message.
    pub fn reply(text: impl Into<String>) -> Self {
        let text = text.into();
        let mut steps: Vec<ScriptStep> = text
            .split_inclusive(' ')
            .map(|word| ScriptStep::Delta(word.to_owned()))
            .collect();
        steps.push(ScriptStep::Message(text));
        Self::Sequence(steps)
    }
}

/// A tool call a script makes.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedToolCall {
    /// The call id; `None` generates a unique one.
    pub call_id: Option<String>,
    /// The Weaver tool name.
    pub tool_name: String,
    /// The arguments, as a model would produce them.
    pub arguments: Value,
}

/// A step computed from the turn so far; see [`Script::computed`].
#[derive(Clone)]
pub struct ComputedStep(pub(super) Arc<dyn Fn(&TurnSoFar) -> ScriptStep + Send + Sync>);

impl std::fmt::Debug for ComputedStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComputedStep(..)")
    }
}

/// What a computed step can see: the turn request and every tool call made so far.
#[derive(Clone, Debug)]
pub struct TurnSoFar {
    /// The request the provider received (message, history, context, tools).
    pub request: AiTurnRequest,
    /// The tool calls made so far, in order, with the results the invoker returned.
    pub calls: Vec<CompletedToolCall>,
}

impl TurnSoFar {
    /// The result of the latest tool call.
    pub fn last_result(&self) -> Option<&AiToolResult> {
        self.calls.last().map(|call| &call.result)
    }

    /// The result of the latest call of `tool_name`.
    pub fn result_of(&self, tool_name: &str) -> Option<&AiToolResult> {
        self.calls
            .iter()
            .rev()
            .find(|call| call.tool_name == tool_name)
            .map(|call| &call.result)
    }
}

/// A tool call a script made, with its result.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletedToolCall {
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub tool_name: String,
    /// The arguments the script passed.
    pub arguments: Value,
    /// What the invoker returned.
    pub result: AiToolResult,
}
