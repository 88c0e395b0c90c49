//! Redaction for what leaves Weaver outside its redacted paths, such as a provider's logs.

use std::borrow::Cow;

/// Replaces secrets in text. The host's redactor implements it, so that a provider can
/// redact what it logs without depending on the host.
pub trait AiTextRedactor: Send + Sync {
    /// `text` with every secret and credential the redactor knows replaced by its marker.
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;
}
