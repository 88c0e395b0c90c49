//! Step 10: redact the result, then clamp it to the model-context budget.

use elsa_ai_abstractions::{AiError, AiToolResult};
use serde_json::Value;

use crate::clamp::ResultClamp;
use crate::redaction::{Redacted, Redactor};

/// Redacts the tool's content, or the error it failed with, before the model, the stream or
/// the audit trail sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RedactResult<'r> {
    pub redactor: &'r Redactor,
}

/// What step 10 hands on: the redacted content with the length of its compact JSON text
/// (found on the way, for the clamp), or the error as the redacted result the model receives.
#[derive(Debug)]
pub(crate) enum RedactedOutcome {
    Content {
        content: Redacted<Value>,
        size: usize,
    },
    Failed(Redacted<AiToolResult>),
}

impl RedactResult<'_> {
    pub fn run(&self, result: Result<Value, AiError>) -> RedactedOutcome {
        match result {
            Ok(content) => {
                let (content, size) = self.redactor.redacted_measured(content);
                RedactedOutcome::Content { content, size }
            }
            Err(error) => RedactedOutcome::Failed(
                self.redactor
                    .redacted_tool_result(AiToolResult::error(&error)),
            ),
        }
    }

    /// A refusal as the redacted result the model receives.
    pub fn denied(&self, error: &AiError) -> Redacted<AiToolResult> {
        self.redactor
            .redacted_tool_result(AiToolResult::denied(error))
    }
}

/// Clamps successful content to the budget (marking `truncated`); errors pass as results.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClampResult<'r> {
    pub clamp: &'r ResultClamp,
}

impl ClampResult<'_> {
    /// The result for a call that ran (or tried to): success or error.
    pub fn run(&self, result: RedactedOutcome) -> Redacted<AiToolResult> {
        match result {
            RedactedOutcome::Content { content, size } => {
                let clamped = self.clamp.clamp_measured(content.into_inner(), size);
                // Clamping cuts what was redacted and adds only its own note.
                Redacted::assembled(AiToolResult {
                    truncated: clamped.truncated,
                    ..AiToolResult::success(clamped.value)
                })
            }
            RedactedOutcome::Failed(failed) => failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clamp::json_size;
    use crate::redaction::REDACTED;

    impl RedactedOutcome {
        fn content(self) -> Redacted<Value> {
            match self {
                Self::Content { content, .. } => content,
                Self::Failed(failed) => panic!("content expected: {failed:?}"),
            }
        }

        fn failed(self) -> Redacted<AiToolResult> {
            match self {
                Self::Failed(failed) => failed,
                Self::Content { content, .. } => panic!("a failure expected: {content:?}"),
            }
        }
    }

    #[test]
    fn content_and_error_messages_are_redacted() {
        let redactor = Redactor::default();
        let step = RedactResult {
            redactor: &redactor,
        };
        let content = step
            .run(Ok(
                json!({"connectionString": "Server=x;Password=y", "n": 1}),
            ))
            .content();
        assert_eq!(*content, json!({"connectionString": REDACTED, "n": 1}));
        let failed = step
            .run(Err(AiError::internal(
                "Bearer abcdef123456",
                "login failed: Password=hunter2;",
            )))
            .failed();
        let error = failed.error.as_ref().unwrap();
        assert_eq!(error.message, "login failed: Password=[REDACTED];");
        assert_eq!(
            (error.status, error.code.as_str()),
            (500, "Bearer [REDACTED]")
        );
    }

    #[test]
    fn json_in_a_text_block_has_its_sensitive_keys_redacted() {
        // MCP servers commonly return their JSON result as a text block.
        let redactor = Redactor::default();
        let step = RedactResult {
            redactor: &redactor,
        };
        let content = step
            .run(Ok(json!({"content": [
                {"type": "text", "text": "{\"sessionKey\":\"abc\",\"rows\":3}"}
            ]})))
            .content();
        assert_eq!(
            content["content"][0]["text"],
            format!("{{\"sessionKey\":\"{REDACTED}\",\"rows\":3}}")
        );
    }

    #[test]
    fn oversize_content_is_clamped_and_marked() {
        let clamp = ResultClamp::new(512);
        let step = ClampResult { clamp: &clamp };
        let redactor = Redactor::default();
        let redact = RedactResult {
            redactor: &redactor,
        };
        let big = json!({"items": (0..500).map(|i| json!({"i": i})).collect::<Vec<_>>()});
        let result = step.run(redact.run(Ok(big)));
        assert!(result.is_success() && result.truncated);
        assert!(json_size(&result.content) <= 512);
        assert!(result.content["_truncated"].is_object());
        let small = step.run(redact.run(Ok(json!({"ok": true}))));
        assert!(!small.truncated);
        let failed = step.run(RedactedOutcome::Failed(redactor.redacted_tool_result(
            AiToolResult::error(&AiError::bad_request("invalid_arguments", "bad")),
        )));
        assert_eq!(failed.error.as_ref().unwrap().status, 400);
    }
}
