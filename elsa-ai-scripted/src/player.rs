//! Plays one script as a stream of provider events.

use std::collections::VecDeque;
use std::sync::Arc;

use elsa_ai_abstractions::{
    AiError, AiProviderEvent, AiProviderToolInvocation, AiProviderToolInvoker, AiTurnRequest,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use super::script::{CompletedToolCall, Script, ScriptStep, ScriptedToolCall, TurnSoFar};

/// What is left to do.
enum Next {
    Step(ScriptStep),
    /// The `ToolStarted` of this call has been reported; run it.
    Invoke(AiProviderToolInvocation),
}

pub(super) struct Player {
    next: VecDeque<Next>,
    events: VecDeque<AiProviderEvent>,
    turn: TurnSoFar,
    invoker: Arc<dyn AiProviderToolInvoker>,
    cancellation: CancellationToken,
    generated_ids: u32,
    done: bool,
}

impl Player {
    pub fn new(
        script: Script,
        request: AiTurnRequest,
        invoker: Arc<dyn AiProviderToolInvoker>,
    ) -> Self {
        Self {
            next: script.into_steps().into_iter().map(Next::Step).collect(),
            events: VecDeque::new(),
            cancellation: request.cancellation.clone(),
            turn: TurnSoFar {
                request,
                calls: Vec::new(),
            },
            invoker,
            generated_ids: 0,
            done: false,
        }
    }

    pub fn into_stream(self) -> BoxStream<'static, AiProviderEvent> {
        futures::stream::unfold(self, |mut player| async move {
            let event = player.next_event().await?;
            Some((event, player))
        })
        .boxed()
    }

    async fn next_event(&mut self) -> Option<AiProviderEvent> {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            if self.cancellation.is_cancelled() {
                return Some(self.finish(AiProviderEvent::Failed {
                    error: AiError::unavailable("turn_cancelled", "the turn was cancelled"),
                }));
            }
            match self.next.pop_front() {
                None => return Some(self.finish(AiProviderEvent::Completed)),
                Some(Next::Step(step)) => self.play(step, 0).await,
                Some(Next::Invoke(invocation)) => self.invoke(invocation).await,
            }
        }
    }

    fn finish(&mut self, event: AiProviderEvent) -> AiProviderEvent {
        self.done = true;
        self.next.clear();
        event
    }

    async fn play(&mut self, step: ScriptStep, depth: u8) {
        match step {
            ScriptStep::Delta(text) => self
                .events
                .push_back(AiProviderEvent::AssistantDelta { text }),
            ScriptStep::Message(text) => {
                self.events
                    .push_back(AiProviderEvent::AssistantMessage { text });
            }
            ScriptStep::Sequence(steps) => {
                for step in steps.into_iter().rev() {
                    self.next.push_front(Next::Step(step));
                }
            }
            ScriptStep::ToolCall(call) => self.start_call(call),
            ScriptStep::Delay(duration) => {
                tokio::select! {
                    () = tokio::time::sleep(duration) => {}
                    () = self.cancellation.cancelled() => {}
                }
            }
            ScriptStep::Fail(error) => {
                let event = self.finish(AiProviderEvent::Failed { error });
                self.events.push_back(event);
            }
            ScriptStep::Computed(compute) => {
                let step = (compute.0)(&self.turn);
                if depth >= MAX_COMPUTE_DEPTH && matches!(step, ScriptStep::Computed(_)) {
                    let event = self.finish(AiProviderEvent::Failed {
                        error: AiError::internal(
                            "script_invalid",
                            "a computed script step kept computing further steps",
                        ),
                    });
                    self.events.push_back(event);
                    return;
                }
                Box::pin(self.play(step, depth + 1)).await;
            }
        }
    }

    fn start_call(&mut self, call: ScriptedToolCall) {
        let call_id = call.call_id.unwrap_or_else(|| {
            self.generated_ids += 1;
            format!(
                "call-{}-{}",
                self.turn.request.session.session_id, self.generated_ids
            )
        });
        self.events.push_back(AiProviderEvent::ToolStarted {
            call_id: call_id.clone(),
            tool_name: call.tool_name.clone(),
            arguments: call.arguments.clone(),
        });
        self.next.push_front(Next::Invoke(AiProviderToolInvocation {
            call_id,
            tool_name: call.tool_name,
            arguments: call.arguments,
        }));
    }

    async fn invoke(&mut self, invocation: AiProviderToolInvocation) {
        // Like a real provider, wait for the result: the invoker hands the turn's
        // cancellation to the tool, which stops early.
        let result = self.invoker.invoke(invocation.clone()).await;
        self.events.push_back(AiProviderEvent::ToolCompleted {
            call_id: invocation.call_id.clone(),
            tool_name: invocation.tool_name.clone(),
            result: result.clone(),
        });
        self.turn.calls.push(CompletedToolCall {
            call_id: invocation.call_id,
            tool_name: invocation.tool_name,
            arguments: invocation.arguments,
            result,
        });
    }
}

/// How often a computed step may compute another computed step.
const MAX_COMPUTE_DEPTH: u8 = 8;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use elsa_ai_abstractions::{
        AiAgentDefinition, AiCaller, AiProvider, AiSessionHandle, AiToolResult, ConversationId,
        Permission,
    };
    use parking_lot::Mutex;
    use serde_json::{Value, json};

    use super::*;
    use crate::ScriptedProvider;

    fn workflow_author() -> AiAgentDefinition {
        AiAgentDefinition::new("workflow-author", "Helps write workflows.")
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<AiProviderToolInvocation>>);

    #[async_trait]
    impl AiProviderToolInvoker for Recorder {
        async fn invoke(&self, invocation: AiProviderToolInvocation) -> AiToolResult {
            let echoed = json!({"echo": invocation.arguments.clone()});
            self.0.lock().push(invocation);
            AiToolResult::success(echoed)
        }
    }

    fn request(cancellation: CancellationToken) -> AiTurnRequest {
        let agent: AiAgentDefinition = workflow_author();
        AiTurnRequest {
            session: AiSessionHandle {
                session_id: "s1".into(),
                provider: "scripted".into(),
                conversation_id: ConversationId::new("c1"),
            },
            agent,
            caller: AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]),
            message: "hello".into(),
            history: Vec::new(),
            context: Vec::new(),
            tools: Vec::new(),
            cancellation,
        }
    }

    #[tokio::test]
    async fn a_script_plays_text_runs_tools_through_the_invoker_and_completes() {
        let invoker = Arc::new(Recorder::default());
        let script = Script::new()
            .delta("Looking. ")
            .tool_call_with_id("c-1", "demo.echo", json!({"id": "wf-1"}))
            .computed(|turn| {
                let echoed = turn
                    .result_of("demo.echo")
                    .map_or(Value::Null, |r| r.content.clone());
                ScriptStep::reply(format!("Got {}", echoed["echo"]["id"]))
            });
        let provider = ScriptedProvider::new(script);
        let events: Vec<AiProviderEvent> = provider
            .execute_turn(request(CancellationToken::new()), invoker.clone())
            .collect()
            .await;
        assert_eq!(
            events[0],
            AiProviderEvent::AssistantDelta {
                text: "Looking. ".into()
            }
        );
        assert_eq!(
            events[1],
            AiProviderEvent::ToolStarted {
                call_id: "c-1".into(),
                tool_name: "demo.echo".into(),
                arguments: json!({"id": "wf-1"}),
            }
        );
        let AiProviderEvent::ToolCompleted { result, .. } = &events[2] else {
            panic!("expected the tool result, got {:?}", events[2]);
        };
        assert_eq!(result.content, json!({"echo": {"id": "wf-1"}}));
        assert_eq!(
            invoker.0.lock().len(),
            1,
            "the call went through the invoker"
        );
        assert_eq!(
            events[events.len() - 2],
            AiProviderEvent::AssistantMessage {
                text: "Got \"wf-1\"".into()
            }
        );
        assert_eq!(events.last(), Some(&AiProviderEvent::Completed));
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_cuts_a_delay_short_and_fails_the_turn() {
        let token = CancellationToken::new();
        let provider = ScriptedProvider::new(
            Script::new()
                .delta("a")
                .delay(Duration::from_secs(3600))
                .tool_call("demo.echo", json!({})),
        );
        let invoker = Arc::new(Recorder::default());
        let mut events = provider.execute_turn(request(token.clone()), invoker.clone());
        assert!(matches!(
            events.next().await,
            Some(AiProviderEvent::AssistantDelta { .. })
        ));
        let canceller = tokio::spawn({
            let token = token.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                token.cancel();
            }
        });
        let started = tokio::time::Instant::now();
        let Some(AiProviderEvent::Failed { error }) = events.next().await else {
            panic!("a cancelled turn fails");
        };
        assert_eq!(error.code(), "turn_cancelled");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the delay was cut short"
        );
        assert!(events.next().await.is_none());
        assert!(
            invoker.0.lock().is_empty(),
            "nothing runs after cancellation"
        );
        canceller.await.unwrap();
    }

    #[tokio::test]
    async fn per_turn_scripts_run_out_and_failures_end_the_turn() {
        let provider = ScriptedProvider::turns([Script::new()
            .fail(AiError::unavailable("model_down", "down"))
            .message("never")]);
        let invoker = Arc::new(Recorder::default());
        let first: Vec<_> = provider
            .execute_turn(request(CancellationToken::new()), invoker.clone())
            .collect()
            .await;
        assert_eq!(first.len(), 1);
        assert!(
            matches!(&first[0], AiProviderEvent::Failed { error } if error.code() == "model_down")
        );
        let second: Vec<_> = provider
            .execute_turn(request(CancellationToken::new()), invoker)
            .collect()
            .await;
        assert!(
            matches!(&second[0], AiProviderEvent::Failed { error } if error.code() == "script_exhausted")
        );
    }

    #[tokio::test]
    async fn generated_call_ids_are_unique_and_sessions_can_be_refused() {
        let provider = ScriptedProvider::new(
            Script::new()
                .tool_call("demo.echo", json!({}))
                .tool_call("demo.echo", json!({})),
        );
        let invoker = Arc::new(Recorder::default());
        let _: Vec<_> = provider
            .execute_turn(request(CancellationToken::new()), invoker.clone())
            .collect()
            .await;
        let ids: Vec<String> = invoker.0.lock().iter().map(|i| i.call_id.clone()).collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);

        let down = ScriptedProvider::new(Script::new())
            .failing_sessions(AiError::unavailable("runtime_unavailable", "no runtime"));
        let error = down
            .create_session(elsa_ai_abstractions::CreateAiSessionRequest {
                conversation_id: ConversationId::new("c1"),
                agent: workflow_author(),
                caller: AiCaller::new("alice", "acme", []),
            })
            .await
            .unwrap_err();
        assert_eq!(error.status(), 503);
    }

    #[tokio::test]
    async fn a_computed_step_that_only_computes_fails_instead_of_looping() {
        fn forever() -> ScriptStep {
            ScriptStep::Computed(super::super::ComputedStep(Arc::new(|_| forever())))
        }
        let provider = ScriptedProvider::new(Script::new().step(forever()));
        let events: Vec<_> = provider
            .execute_turn(
                request(CancellationToken::new()),
                Arc::new(Recorder::default()),
            )
            .collect()
            .await;
        assert!(
            matches!(&events[0], AiProviderEvent::Failed { error } if error.code() == "script_invalid")
        );
    }
}
