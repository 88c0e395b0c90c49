//! What the provider logs passes the host's redactor first: session events carry model text
//! and tool arguments and results, and the CLI's error messages can quote either.

use std::fmt::Display;
use std::sync::Arc;

use elsa_ai_abstractions::AiTextRedactor;
use github_copilot_sdk::SessionEvent;
use parking_lot::RwLock;
use serde_json::value::to_raw_value;

/// Logged instead of text that may hold content while no redactor has been given: the
/// provider fails closed rather than log it unredacted.
pub(crate) const NOT_LOGGED: &str = "[not logged: no redactor]";

/// The redactor the provider's log lines go through, once a host has given one.
#[derive(Default)]
pub(crate) struct LogRedaction {
    redactor: RwLock<Option<Arc<dyn AiTextRedactor>>>,
}

impl LogRedaction {
    /// Redacts every later log line with `redactor`.
    pub(crate) fn set(&self, redactor: Arc<dyn AiTextRedactor>) {
        *self.redactor.write() = Some(redactor);
    }

    /// What `redact` makes with the redactor, or [`NOT_LOGGED`] without one.
    fn redacted(&self, redact: impl FnOnce(&dyn AiTextRedactor) -> String) -> String {
        match &*self.redactor.read() {
            Some(redactor) => redact(redactor.as_ref()),
            None => NOT_LOGGED.to_owned(),
        }
    }

    /// `text` redacted, or [`NOT_LOGGED`] without a redactor.
    pub(crate) fn text(&self, text: &str) -> String {
        self.redacted(|redactor| redactor.redact(text).into_owned())
    }

    /// An error's message (the SDK's errors quote what the CLI answered), redacted.
    pub(crate) fn error(&self, error: &dyn Display) -> String {
        self.text(&error.to_string())
    }

    /// Logs a session event at trace level: its type and its payload, redacted as JSON (so
    /// that a sensitive key's value goes too, whatever it looks like). The payload is only
    /// serialised when trace logging is on.
    pub(crate) fn trace_event(&self, session: &str, event: &SessionEvent) {
        if tracing::enabled!(tracing::Level::TRACE) {
            let data = self.redacted(|redactor| match to_raw_value(&event.data) {
                Ok(json) => redactor.redact_json(&json).into_owned(),
                // A `Value` always serialises; should it not, nothing of it is echoed.
                Err(_) => "[not logged: the payload did not serialise]".to_owned(),
            });
            tracing::trace!(session, event = %event.event_type, %data, "Copilot event");
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_host::{REDACTED, Redactor};
    use serde_json::json;

    use super::*;
    use crate::testing::TraceLog;

    const SECRET: &str = "sk-weaver-log-test-secret-0123";

    fn event_with_secret() -> SessionEvent {
        serde_json::from_value(json!({
            "id": "e", "timestamp": "2026-01-01T00:00:00Z", "parentId": null,
            "type": "assistant.message_delta",
            "data": {"messageId": "a", "deltaContent": format!("the key is {SECRET}")},
        }))
        .unwrap()
    }

    #[test]
    fn a_registered_secret_in_a_session_event_is_redacted_in_the_trace_log() {
        let redaction = LogRedaction::default();
        redaction.set(Arc::new(
            Redactor::builder().secret(SECRET).build().unwrap(),
        ));
        let log = TraceLog::capture();
        redaction.trace_event("weaver-s-1", &event_with_secret());
        let log = log.text();
        assert!(log.contains("assistant.message_delta"), "{log}");
        assert!(log.contains(&format!("the key is {REDACTED}")), "{log}");
        assert!(!log.contains(SECRET), "{log}");
    }

    #[test]
    fn a_sensitive_key_in_a_session_event_is_redacted_whatever_its_value() {
        let redaction = LogRedaction::default();
        redaction.set(Arc::new(Redactor::default()));
        let event: SessionEvent = serde_json::from_value(json!({
            "id": "e", "timestamp": "2026-01-01T00:00:00Z", "parentId": null,
            "type": "tool.execution_start",
            "data": {"toolName": "fetch", "arguments": {"cookie": "sid-plain-value", "auth": 4_242_424_242_u64}},
        }))
        .unwrap();
        let log = TraceLog::capture();
        redaction.trace_event("weaver-s-1", &event);
        let log = log.text();
        assert!(log.contains("fetch"), "{log}");
        assert!(
            !log.contains("sid-plain-value") && !log.contains("4242424242"),
            "{log}"
        );
        assert!(log.contains(REDACTED), "{log}");
    }

    #[test]
    fn without_a_redactor_no_content_is_logged() {
        let redaction = LogRedaction::default();
        let log = TraceLog::capture();
        redaction.trace_event("weaver-s-1", &event_with_secret());
        let log = log.text();
        assert!(log.contains("assistant.message_delta"), "{log}");
        assert!(
            log.contains(NOT_LOGGED) && !log.contains("the key is"),
            "{log}"
        );
        assert_eq!(redaction.error(&format!("failed: {SECRET}")), NOT_LOGGED);
    }
}
