//! Step 9: validate the arguments and execute the tool.

use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use elsa_ai_abstractions::{AiError, AiToolExecutionContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tokio::time::error::Elapsed;
use tokio_util::sync::CancellationToken;

use crate::registry::RegisteredTool;

/// Validates the (redacted) arguments against the tool's compiled input schema (400
/// `invalid_arguments`), then runs the tool under its timeout (the definition's, else the
/// governor default, counted from the start of the call; 503 `tool_timeout`) and the turn's
/// cancellation (503 `tool_cancelled`). In both cases the tool's cancellation token is
/// cancelled. A panicking tool is a 500 `tool_panicked`, never a crash.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExecuteTool {
    pub default_timeout: Duration,
    /// When the call started: the timeout runs from there, without a clock read of its own.
    pub started: Instant,
}

impl ExecuteTool {
    pub fn timeout_for(&self, tool: &RegisteredTool) -> Duration {
        tool.definition().timeout.unwrap_or(self.default_timeout)
    }

    /// Validates and starts the call now, then races it against its timeout and the turn's
    /// cancellation `turn` when awaited. `context.cancellation` is the tool's own token,
    /// not the turn's: making a child of the turn's token locks it twice per call, and the
    /// turn still reaches the tool, because a tool that is still running is raced against
    /// `turn`, which then cancels the tool's token. Only what the race needs is kept across
    /// the await, not the execution context, which keeps the governor's future small.
    pub fn run<'a>(
        &self,
        tool: &'a RegisteredTool,
        turn: &'a CancellationToken,
        context: AiToolExecutionContext,
    ) -> impl Future<Output = Result<Value, AiError>> + 'a {
        let timeout = self.timeout_for(tool);
        let deadline = self.started.checked_add(timeout).unwrap_or_else(far_future);
        let name = &tool.definition().name;
        let started = Self::start(tool, turn, context);
        async move {
            let Started { execution, own } = started?;
            let finished = |finished: Result<std::thread::Result<_>, Elapsed>| match finished {
                Ok(Ok(result)) => result,
                Ok(Err(_panic)) => Err(AiError::internal(
                    "tool_panicked",
                    format!("tool '{name}' failed unexpectedly"),
                )),
                Err(_elapsed) => {
                    own.cancel();
                    Err(AiError::unavailable(
                        "tool_timeout",
                        format!(
                            "tool '{name}' did not finish within {} ms",
                            timeout.as_millis()
                        ),
                    ))
                }
            };
            let execution = AssertUnwindSafe(execution).catch_unwind();
            let mut execution = pin!(tokio::time::timeout_at(deadline, execution));
            // Most tools answer on their first poll: they then need no waiter on the turn's
            // cancellation (registering and removing one takes its lock twice).
            if let Poll::Ready(done) = futures::poll!(execution.as_mut()) {
                return finished(done);
            }
            tokio::select! {
                biased;
                () = turn.cancelled() => {
                    own.cancel();
                    Err(cancelled(name))
                }
                done = execution => finished(done),
            }
        }
    }

    /// Validates the arguments and makes the tool's future (which runs nothing until it is
    /// polled).
    fn start<'a>(
        tool: &'a RegisteredTool,
        turn: &CancellationToken,
        context: AiToolExecutionContext,
    ) -> Result<Started<'a>, AiError> {
        tool.validate_arguments(&context.arguments)?;
        // A turn cancelled before the call runs no tool (as the biased select would).
        if turn.is_cancelled() {
            return Err(cancelled(&tool.definition().name));
        }
        let own = context.cancellation.clone();
        Ok(Started {
            execution: tool.tool().execute(context),
            own,
        })
    }
}

/// A tool call made but not yet polled.
struct Started<'a> {
    execution: BoxFuture<'a, Result<Value, AiError>>,
    /// The tool's own cancellation, handed to it in its context.
    own: CancellationToken,
}

/// A deadline no call reaches, for a timeout too long to add to an instant.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

fn cancelled(name: &str) -> AiError {
    AiError::unavailable(
        "tool_cancelled",
        format!("tool '{name}' was cancelled with its turn"),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::testing::governance::{GovernanceHarness, TestTool, execution_context, read_tool};

    #[tokio::test]
    async fn schema_invalid_arguments_are_refused_before_the_tool_runs() {
        let mut definition = read_tool("demo.read");
        definition.input_schema = json!({
            "type": "object",
            "properties": {"id": {"type": "string"}, "limit": {"type": "integer", "maximum": 10}},
            "required": ["id"],
            "additionalProperties": false
        });
        let tool = Arc::new(TestTool::echo(definition));
        let harness = GovernanceHarness::builder().tool(tool.clone()).build();
        let registered = harness.registry.registered("demo.read").unwrap();
        let step = ExecuteTool {
            default_timeout: Duration::from_secs(5),
            started: Instant::now(),
        };
        let turn = CancellationToken::new();
        let error = step
            .run(
                registered,
                &turn,
                execution_context(&harness, json!({"limit": 99, "secretValue": "hunter2"})),
            )
            .await
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (400, "invalid_arguments"));
        assert!(error.message().contains("/limit"), "{}", error.message());
        assert!(
            !error.message().contains("hunter2"),
            "values are never echoed: {}",
            error.message()
        );
        assert_eq!(tool.calls(), 0);
        let ok = step
            .run(
                registered,
                &turn,
                execution_context(&harness, json!({"id": "x"})),
            )
            .await
            .unwrap();
        assert_eq!(ok, json!({"id": "x"}));
    }

    #[tokio::test]
    async fn a_slow_tool_times_out_and_its_token_is_cancelled() {
        let mut definition = read_tool("demo.slow");
        definition.timeout = Some(Duration::from_millis(20));
        let slow = Arc::new(TestTool::sleeping(definition, Duration::from_secs(30)));
        let harness = GovernanceHarness::builder().tool(slow.clone()).build();
        let step = ExecuteTool {
            default_timeout: Duration::from_secs(5),
            started: Instant::now(),
        };
        let registered = harness.registry.registered("demo.slow").unwrap();
        assert_eq!(step.timeout_for(registered), Duration::from_millis(20));
        let turn = CancellationToken::new();
        let error = step
            .run(registered, &turn, execution_context(&harness, json!({})))
            .await
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (503, "tool_timeout"));
        // The future is dropped; work the tool spawned sees its token cancelled.
        assert!(slow.last_context().unwrap().cancellation.is_cancelled());
    }

    #[tokio::test]
    async fn the_turns_cancellation_stops_the_tool() {
        let slow = Arc::new(TestTool::sleeping(
            read_tool("demo.slow"),
            Duration::from_secs(30),
        ));
        let harness = GovernanceHarness::builder().tool(slow.clone()).build();
        let step = ExecuteTool {
            default_timeout: Duration::from_secs(30),
            started: Instant::now(),
        };
        let turn = CancellationToken::new();
        let context = execution_context(&harness, json!({}));
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            turn.cancel();
        };
        let registered = harness.registry.registered("demo.slow").unwrap();
        let (result, ()) = tokio::join!(step.run(registered, &turn, context), cancel);
        assert_eq!(result.unwrap_err().code(), "tool_cancelled");
        // Work the tool spawned sees its own token cancelled with the turn.
        assert!(slow.last_context().unwrap().cancellation.is_cancelled());
    }

    #[tokio::test]
    async fn a_turn_cancelled_before_the_call_runs_no_tool() {
        let tool = Arc::new(TestTool::echo(read_tool("demo.read")));
        let harness = GovernanceHarness::builder().tool(tool.clone()).build();
        let step = ExecuteTool {
            default_timeout: Duration::from_secs(5),
            started: Instant::now(),
        };
        let turn = CancellationToken::new();
        turn.cancel();
        let context = execution_context(&harness, json!({}));
        let registered = harness.registry.registered("demo.read").unwrap();
        let error = step.run(registered, &turn, context).await.unwrap_err();
        assert_eq!((error.status(), error.code()), (503, "tool_cancelled"));
        assert_eq!(tool.calls(), 0, "the tool never ran");
    }

    #[tokio::test]
    async fn tool_errors_pass_through_and_panics_become_errors() {
        let failing =
            TestTool::failing(read_tool("demo.fail"), AiError::not_found("definition 'x'"));
        let panicking = TestTool::panicking(read_tool("demo.panic"));
        let harness = GovernanceHarness::builder()
            .tool(Arc::new(failing))
            .tool(Arc::new(panicking))
            .build();
        let step = ExecuteTool {
            default_timeout: Duration::from_secs(5),
            started: Instant::now(),
        };
        let fail = harness.registry.registered("demo.fail").unwrap();
        let turn = CancellationToken::new();
        assert_eq!(
            step.run(fail, &turn, execution_context(&harness, json!({})))
                .await
                .unwrap_err()
                .status(),
            404
        );
        let panic = harness.registry.registered("demo.panic").unwrap();
        let error = step
            .run(panic, &turn, execution_context(&harness, json!({})))
            .await
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (500, "tool_panicked"));
    }
}
