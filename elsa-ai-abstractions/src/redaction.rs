//! Redaction for what leaves Weaver outside its redacted paths, such as a provider's logs.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// Replaces secrets in text. The host's redactor implements it, so that a provider can
/// redact what it logs without depending on the host.
pub trait AiTextRedactor: Send + Sync {
    /// `text` with every secret and credential the redactor knows replaced by its marker.
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;

    /// JSON text with the rules for JSON values applied as well (every value under a
    /// sensitive key is replaced); the result is JSON text. Without an implementation of
    /// its own, the text is redacted as free text.
    fn redact_json<'a>(&self, json: &'a RawValue) -> Cow<'a, str> {
        self.redact(json.get())
    }
}

/// A value that must never be printed, such as an MCP server's secret variable or header.
///
/// `Debug` shows `***`; the value is reachable only through [`SecretValue::expose`], and a
/// host registers it with its redactor before anything can echo it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must hand it on (a child's environment, a
    /// request header) and for registering it with the redactor.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Whether a header or variable of this name carries a credential (its name holds
/// `authorization`, `key`, `token`, `secret`, `password` or `cookie`, in any case): its value
/// is a secret even when it was configured as a plain value.
pub fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "authorization",
        "key",
        "token",
        "secret",
        "password",
        "cookie",
    ]
    .iter()
    .any(|word| name.contains(word))
}
