//! Step 10: redact the result, then clamp it to the model-context budget.

use elsa_ai_abstractions::{AiError, AiToolResult};
use serde_json::Value;

use crate::clamp::ResultClamp;
use crate::redaction::Redactor;

/// Redacts the tool's content, or the error's message, before the model, the stream or the
/// audit trail sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RedactResult<'r> {
    pub redactor: &'r Redactor,
}

impl RedactResult<'_> {
    pub fn run(&self, result: Result<Value, AiError>) -> Result<Value, AiError> {
        match result {
            Ok(mut content) => {
                self.redactor.redact_value(&mut content);
                Ok(content)
            }
            Err(error) => Err(self.redact_error(error)),
        }
    }

    /// The error with its message redacted.
    pub fn redact_error(&self, error: AiError) -> AiError {
        self.redactor.redact_error(error)
    }
}

/// Clamps successful content to the budget (marking `truncated`); errors pass as results.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClampResult<'r> {
    pub clamp: &'r ResultClamp,
}

impl ClampResult<'_> {
    /// The result for a call that ran (or tried to): success or error.
    pub fn run(&self, result: Result<Value, AiError>) -> AiToolResult {
        match result {
            Ok(content) => {
                let clamped = self.clamp.clamp(content);
                AiToolResult {
                    truncated: clamped.truncated,
                    ..AiToolResult::success(clamped.value)
                }
            }
            Err(error) => AiToolResult::error(&error),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clamp::json_size;
    use crate::redaction::REDACTED;

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
            .unwrap();
        assert_eq!(content, json!({"connectionString": REDACTED, "n": 1}));
        let error = step
            .run(Err(AiError::internal(
                "db_failed",
                "login failed: Password=hunter2;",
            )))
            .unwrap_err();
        assert_eq!(error.message(), "login failed: Password=[REDACTED];");
        assert_eq!((error.status(), error.code()), (500, "db_failed"));
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
            .unwrap();
        assert_eq!(
            content["content"][0]["text"],
            format!("{{\"sessionKey\":\"{REDACTED}\",\"rows\":3}}")
        );
    }

    #[test]
    fn oversize_content_is_clamped_and_marked() {
        let clamp = ResultClamp::new(512);
        let step = ClampResult { clamp: &clamp };
        let big = json!({"items": (0..500).map(|i| json!({"i": i})).collect::<Vec<_>>()});
        let result = step.run(Ok(big));
        assert!(result.is_success() && result.truncated);
        assert!(json_size(&result.content) <= 512);
        assert!(result.content["_truncated"].is_object());
        let small = step.run(Ok(json!({"ok": true})));
        assert!(!small.truncated);
        let failed = step.run(Err(AiError::bad_request("invalid_arguments", "bad")));
        assert_eq!(failed.error.unwrap().status, 400);
    }
}
