//! Step 8: redact the arguments.

use serde_json::Value;

use crate::redaction::{Redacted, Redactor};

/// Redacts the arguments before anything else sees them: the tool, the stream and the
/// audit trail all get the redacted arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RedactArguments<'r> {
    pub redactor: &'r Redactor,
}

impl RedactArguments<'_> {
    pub fn run(&self, arguments: Value) -> Redacted<Value> {
        self.redactor.redacted(arguments)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::redaction::REDACTED;

    #[test]
    fn secrets_in_arguments_are_replaced_and_the_shape_kept() {
        let redactor = Redactor::default();
        let step = RedactArguments {
            redactor: &redactor,
        };
        let redacted =
            step.run(json!({"id": "wf-1", "apiKey": "k", "note": "Bearer abcdef123456"}));
        assert_eq!(
            *redacted,
            json!({"id": "wf-1", "apiKey": REDACTED, "note": "Bearer [REDACTED]"})
        );
    }
}
