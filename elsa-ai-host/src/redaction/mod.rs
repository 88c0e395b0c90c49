//! Redaction of secrets at every boundary: one [`Redactor`] for model context, tool
//! arguments and results, stream events, audit records and proposal rationale.
//!
//! Three rules, applied in one walk that never changes a value's shape (same keys, same
//! array lengths, strings stay strings):
//!
//! * **Sensitive keys**: the value of any object key naming a secret (`password`, `secret`,
//!   `token`, `apiKey`, `connectionString`, `authorization`, `privateKey`, `clientSecret`,
//!   `accessKey`, `credentials`, `cookie`, … matched case- and separator-insensitively, so
//!   `api_key`, `API-KEY` and `ApiKey` are one key) is replaced; inside such a value every
//!   scalar is replaced and objects and arrays keep their structure.
//! * **Credential shapes** anywhere in a string: bearer tokens, JWTs, PEM private key
//!   blocks, AWS access key ids, GitHub/GitLab/Slack/npm/Google/Stripe/OpenAI-style keys,
//!   `password=…`-style assignments (connection strings, query strings, logs, embedded JSON),
//!   `Authorization:` header values and `scheme://user:password@host` passwords. Only the
//!   secret part is replaced.
//! * **Registered secrets**: exact strings a host registers (API keys from its configuration)
//!   are replaced wherever they occur.
//!
//! Every replacement is the fixed marker [`REDACTED`]. Strings are ASCII-lowercased into a
//! reused buffer (which keeps byte offsets) and scanned in one pass of a multi-pattern
//! automaton over lowercase literal anchors (`bearer`, `eyj`, `-----begin `, `akia`, `ghp_`,
//! `password`, `://`, the registered secrets, …), so that matching is case-insensitive yet
//! keeps the automaton's SIMD prefilter; only anchor hits are verified, on the original text
//! (case-sensitive where the real format is), and text without anchors allocates nothing
//! beyond the buffer. Object keys are not rewritten.
//!
//! JSON held as text is redacted as text, to the same result, by [`Redactor::redact_json`].
//! A string (or free text) that is itself a JSON object or array, as MCP servers return
//! their results in text blocks, gets the rules for JSON values before the text rules, so
//! that the key rules see inside it.

mod json_text;
mod keys;
mod marker;
mod patterns;
#[cfg(test)]
mod properties;
mod sink;

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};
use elsa_ai_abstractions::{AiAuditEvent, AiError, AiTextRedactor, AiToolResult, StreamPayload};
use serde_json::Value;

use json_text::JsonSearch;
use keys::SensitiveKeys;
pub use marker::Redacted;
use patterns::{Anchor, BUILT_IN};
pub use sink::RedactingAuditSink;

/// The marker that replaces every redacted value or secret span.
pub const REDACTED: &str = "[REDACTED]";

/// Why a [`Redactor`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedactorError {
    /// A registered secret is too short to redact without destroying ordinary text.
    #[error("a registered secret must be at least {min} bytes long (got {len})")]
    SecretTooShort {
        /// The secret's length in bytes.
        len: usize,
        /// The minimum length.
        min: usize,
    },
    /// The pattern automaton could not be built (for example, too many or too long secrets).
    #[error("the redaction patterns could not be compiled: {0}")]
    Patterns(String),
}

/// Builds a [`Redactor`] with host-registered secrets.
#[derive(Clone, Debug, Default)]
pub struct RedactorBuilder {
    secrets: Vec<String>,
}

impl RedactorBuilder {
    /// The shortest secret a host may register, in bytes.
    pub const MIN_SECRET_LEN: usize = 6;

    /// Registers a value that must be replaced wherever it occurs (matched exactly).
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.secrets.push(secret.into());
        self
    }

    /// Registers several secrets.
    pub fn secrets<S: Into<String>>(mut self, secrets: impl IntoIterator<Item = S>) -> Self {
        self.secrets.extend(secrets.into_iter().map(Into::into));
        self
    }

    /// Compiles the patterns.
    pub fn build(self) -> Result<Redactor, RedactorError> {
        if let Some(short) = self.secrets.iter().find(|s| s.len() < Self::MIN_SECRET_LEN) {
            return Err(RedactorError::SecretTooShort {
                len: short.len(),
                min: Self::MIN_SECRET_LEN,
            });
        }
        // Secrets equal up to ASCII case share one lowercase pattern; verification picks the
        // exact one.
        let mut secrets: Vec<Vec<String>> = Vec::new();
        let mut folded_secrets: Vec<String> = Vec::new();
        for secret in self.secrets {
            let folded = secret.to_ascii_lowercase();
            match folded_secrets.iter().position(|f| *f == folded) {
                Some(group) if !secrets[group].contains(&secret) => secrets[group].push(secret),
                Some(_) => {}
                None => {
                    folded_secrets.push(folded);
                    secrets.push(vec![secret]);
                }
            }
        }
        let mut literals: Vec<String> = BUILT_IN
            .iter()
            .map(|(literal, _)| literal.to_ascii_lowercase())
            .collect();
        let mut kinds: Vec<Anchor> = BUILT_IN.iter().map(|(_, anchor)| *anchor).collect();
        // The registered secrets alone, for where a built-in anchor hides one (see
        // `Redactor::secret_hidden_by`).
        let longest_secret = folded_secrets.iter().map(String::len).max().unwrap_or(0);
        let secret_anchors = if folded_secrets.is_empty() {
            None
        } else {
            Some(
                // Standard matching reports overlapping matches: every secret at a position.
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .ascii_case_insensitive(true)
                    .build(&folded_secrets)
                    .map_err(|e| RedactorError::Patterns(e.to_string()))?,
            )
        };
        for (group, folded) in folded_secrets.into_iter().enumerate() {
            literals.push(folded);
            kinds.push(Anchor::Secret(group));
        }
        let anchors = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&literals)
            .map_err(|e| RedactorError::Patterns(e.to_string()))?;
        let json_search = JsonSearch::new(&literals, &kinds)?;
        // Short texts skip folding: a case-insensitive DFA without prefilter starts cheapest.
        let short_anchors = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            .kind(Some(AhoCorasickKind::DFA))
            .prefilter(false)
            .build(&literals)
            .map_err(|e| RedactorError::Patterns(e.to_string()))?;
        let keys = SensitiveKeys::new().map_err(RedactorError::Patterns)?;
        let mut secret_starts = [false; 256];
        for secret in secrets.iter().flatten() {
            if let Some(&first) = secret.as_bytes().first() {
                secret_starts[usize::from(first)] = true;
            }
        }
        Ok(Redactor {
            anchors,
            short_anchors,
            json_search,
            secret_anchors,
            longest_secret,
            secret_starts,
            kinds,
            secrets,
            keys,
        })
    }
}

/// The one redaction service; cheap to share behind an `Arc`.
///
/// ```
/// use elsa_ai_host::{Redactor, REDACTED};
/// use serde_json::json;
///
/// let redactor = Redactor::builder().secret("sk-host-configured-key").build()?;
/// let mut value = json!({
///     "apiKey": "abc",
///     "note": "Server=db;Password=hunter2;",
///     "echo": "uses sk-host-configured-key",
/// });
/// redactor.redact_value(&mut value);
/// assert_eq!(value["apiKey"], REDACTED);
/// assert_eq!(value["note"], "Server=db;Password=[REDACTED];");
/// assert_eq!(value["echo"], "uses [REDACTED]");
/// # Ok::<(), elsa_ai_host::RedactorError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Redactor {
    /// For long text, run over its lowercased copy: the automaton with its SIMD prefilter.
    anchors: AhoCorasick,
    /// For short text, run over the text itself: the same patterns as a case-insensitive DFA.
    short_anchors: AhoCorasick,
    /// For JSON text ([`Redactor::redact_json`]), run over its lowercased copy: the anchors
    /// and the literals of sensitive keys.
    json_search: JsonSearch,
    /// The registered secrets only (pattern `i` is group `i`); `None` without any.
    secret_anchors: Option<AhoCorasick>,
    /// The length of the longest registered secret, in bytes.
    longest_secret: usize,
    /// The bytes registered secrets start with.
    secret_starts: [bool; 256],
    kinds: Vec<Anchor>,
    secrets: Vec<Vec<String>>,
    keys: SensitiveKeys,
}

/// The shortest text any anchor can match in (`://`, `eyJ`, `pwd`, `sk-`).
const MIN_ANCHOR_LEN: usize = 3;

/// Texts up to this length are scanned by the case-insensitive DFA without folding.
const SHORT_TEXT: usize = 64;

/// Remembers recent key decisions during one walk: JSON documents repeat the same keys in
/// every record, and a comparison is cheaper than the matcher. The table is only filled in
/// once a walk has met more keys than a tool's arguments usually hold: clearing its 64
/// slots costs more than deciding a handful of keys directly.
struct KeyCache<'a> {
    slots: Option<[(&'a str, bool); 64]>,
    uncached: usize,
}

impl<'a> KeyCache<'a> {
    /// Keys decided directly before the table is made.
    const DIRECT: usize = 8;

    fn new() -> Self {
        Self {
            slots: None,
            uncached: 0,
        }
    }

    fn is_sensitive(&mut self, keys: &SensitiveKeys, key: &'a str) -> bool {
        if self.uncached < Self::DIRECT {
            self.uncached += 1;
            return keys.is_sensitive(key);
        }
        let slots = self.slots.get_or_insert([("", false); 64]);
        let bytes = key.as_bytes();
        let first = bytes.first().copied().unwrap_or(0) as usize;
        let last = bytes.last().copied().unwrap_or(0) as usize;
        let middle = bytes.get(bytes.len() / 2).copied().unwrap_or(0) as usize;
        let slot = &mut slots[(bytes.len() * 31 + first * 7 + last * 3 + middle) & 63];
        if slot.0 == key {
            return slot.1;
        }
        let sensitive = keys.is_sensitive(key);
        *slot = (key, sensitive);
        sensitive
    }
}

/// Strings of one walk waiting for their anchor search: their bytes back to back, and each
/// string with the end of its bytes in the batch.
#[derive(Default)]
struct TextBatch<'a> {
    bytes: Vec<u8>,
    texts: Vec<(&'a mut String, usize)>,
}

impl<'a> TextBatch<'a> {
    /// Batches are searched once they hold this many bytes: large enough that a search's
    /// start-up cost is spread thin, small enough to stay in cache.
    const FLUSH_AT: usize = 32 * 1024;

    fn push(&mut self, text: &'a mut String) {
        self.bytes.extend_from_slice(text.as_bytes());
        self.texts.push((text, self.bytes.len()));
    }
}

/// The state of one [`Redactor::redact_value`] walk outside its stack.
struct Walk<'a> {
    changed: bool,
    keys: KeyCache<'a>,
    batch: TextBatch<'a>,
    scratch: Vec<u8>,
    /// How many more short strings are redacted where they are met instead of batched.
    direct: usize,
}

/// The first strings of a walk are redacted one by one: a tool's arguments or result hold a
/// handful of short strings, for which filling a batch costs more than searching each.
const DIRECT_STRINGS: usize = 16;

impl<'a> Walk<'a> {
    /// A value under a key that is not sensitive: a string is redacted (one of the walk's
    /// first short ones) or joins the batch, a container waits on the stack, other scalars
    /// stay as they are.
    #[inline]
    fn visit(
        &mut self,
        redactor: &Redactor,
        value: &'a mut Value,
        containers: &mut Vec<&'a mut Value>,
    ) {
        match value {
            Value::String(text) => {
                if text.len() < MIN_ANCHOR_LEN {
                    return;
                }
                let direct = self.direct > 0 && text.len() <= SHORT_TEXT;
                // A JSON document in a string needs its keys read, which the batch's anchor
                // search does not do.
                if direct || json_text::may_be_document(text) {
                    self.direct -= usize::from(direct);
                    if let Some(redacted) = redactor.redact_text(text, &mut self.scratch) {
                        *text = redacted;
                        self.changed = true;
                    }
                } else {
                    self.batch.push(text);
                    if self.batch.bytes.len() >= TextBatch::FLUSH_AT {
                        self.changed |= redactor.redact_batch(&mut self.batch, &mut self.scratch);
                    }
                }
            }
            Value::Array(_) | Value::Object(_) => containers.push(value),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// The first byte of `text`, or 0.
#[inline]
fn first_byte(text: &str) -> u8 {
    text.as_bytes().first().copied().unwrap_or(0)
}

/// A byte read from where the walk will look at `value` next: a string's first byte, the
/// first key of an object, the first item of an array.
#[inline]
fn touch(value: &Value) -> u8 {
    match value {
        Value::String(text) => first_byte(text),
        Value::Object(map) => map.keys().next().map_or(0, |key| first_byte(key)),
        Value::Array(items) => u8::from(items.first().is_some_and(Value::is_string)),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// Replaces every scalar of a value under a sensitive key with the marker (nulls stay;
/// objects and arrays keep their structure); returns whether anything changed.
fn redact_all(value: &mut Value) -> bool {
    let mut changed = false;
    let mut pending: Vec<&mut Value> = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next.take().or_else(|| pending.pop()) {
        match value {
            Value::Null => {}
            Value::Bool(_) | Value::Number(_) => {
                *value = Value::String(REDACTED.to_owned());
                changed = true;
            }
            Value::String(text) => {
                if text != REDACTED {
                    REDACTED.clone_into(text);
                    changed = true;
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(map) => pending.extend(map.values_mut()),
        }
    }
    changed
}

impl Redactor {
    /// A builder for a redactor with registered secrets.
    pub fn builder() -> RedactorBuilder {
        RedactorBuilder::default()
    }

    /// Whether an object key names a sensitive value.
    pub fn is_sensitive_key(&self, key: &str) -> bool {
        self.keys.is_sensitive(key)
    }

    /// Redacts free text (prompts, rationale, error messages); borrowed when nothing matched.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_text(text, &mut Vec::new()) {
            Some(redacted) => Cow::Owned(redacted),
            None => Cow::Borrowed(text),
        }
    }

    /// Redacts a JSON value in place, keeping its shape; returns whether anything changed.
    ///
    /// The walk decides sensitive keys as it goes and gathers the other strings into
    /// batches (see `TextBatch`): one automaton pass over a batch finds the few strings
    /// holding an anchor, and only those are redacted one by one. Only arrays and objects
    /// wait on the walk's stack; their scalars are dealt with where they are met.
    pub fn redact_value(&self, value: &mut Value) -> bool {
        // A number, boolean or null holds no text: no walk to set up (tool results often are
        // one).
        if matches!(value, Value::Null | Value::Bool(_) | Value::Number(_)) {
            return false;
        }
        let mut walk = Walk {
            changed: false,
            keys: KeyCache::new(),
            batch: TextBatch::default(),
            scratch: Vec::new(),
            direct: DIRECT_STRINGS,
        };
        let mut containers: Vec<&mut Value> = Vec::new();
        // The root is walked without a trip through the stack: a flat object needs none.
        let mut root = Some(value);
        while let Some(container) = root.take().or_else(|| containers.pop()) {
            match container {
                Value::Array(items) => {
                    for item in items {
                        walk.visit(self, item, &mut containers);
                    }
                }
                Value::Object(map) => {
                    // Keys and strings sit in allocations of their own, rarely in cache: one
                    // read of each, independent of one another, lets the processor fetch
                    // them together instead of one miss after the other as the checks go.
                    std::hint::black_box(
                        map.iter()
                            .fold(0u8, |acc, (key, item)| acc ^ first_byte(key) ^ touch(item)),
                    );
                    for (key, item) in map.iter_mut() {
                        if walk.keys.is_sensitive(&self.keys, key) {
                            walk.changed |= redact_all(item);
                        } else {
                            walk.visit(self, item, &mut containers);
                        }
                    }
                }
                scalar => walk.visit(self, scalar, &mut containers),
            }
        }
        walk.changed | self.redact_batch(&mut walk.batch, &mut walk.scratch)
    }

    /// Redacts the strings of `batch` that hold an anchor and empties the batch; returns
    /// whether any changed.
    ///
    /// A string without an anchor match of its own needs nothing (that is where
    /// [`Self::redact_pass`] stops), so one search over the batch's bytes marks the strings
    /// to redact. A match that starts in one string may run into the next and hide a match
    /// there: the search resumes at the start of the string after the one it marked, so
    /// every string is searched from its own start until a match is found in or before it.
    fn redact_batch(&self, batch: &mut TextBatch<'_>, scratch: &mut Vec<u8>) -> bool {
        let mut changed = false;
        let (automaton, haystack) = if batch.bytes.len() <= SHORT_TEXT {
            (&self.short_anchors, batch.bytes.as_slice())
        } else {
            batch.bytes.make_ascii_lowercase();
            (&self.anchors, batch.bytes.as_slice())
        };
        let mut next = 0;
        let mut pos = 0;
        while let Some(found) = automaton.find(Input::new(haystack).range(pos..)) {
            // The string the match starts in: the first whose end lies past the start.
            while batch.texts[next].1 <= found.start() {
                next += 1;
            }
            let begin = next
                .checked_sub(1)
                .map_or(0, |before| batch.texts[before].1);
            let (text, end) = &mut batch.texts[next];
            pos = *end;
            // The string's own bytes in the batch (folded, or as they are for the DFA) are
            // what its first pass would search; no match starts in it before this one.
            let own = &haystack[begin..*end];
            if let Some(redacted) =
                self.redact_text_from(text, automaton, own, found.start() - begin, scratch)
            {
                **text = redacted;
                changed = true;
            }
            next += 1;
            if next == batch.texts.len() {
                break;
            }
        }
        batch.bytes.clear();
        batch.texts.clear();
        changed
    }

    /// The value redacted (see [`Self::redact_value`]), marked as such.
    pub fn redacted(&self, mut value: Value) -> Redacted<Value> {
        self.redact_value(&mut value);
        Redacted::assembled(value)
    }

    /// An event's payload redacted through its JSON text, which the payload keeps for the
    /// journal and every subscriber: the text is searched as bytes (see
    /// [`Self::redact_json`]), several times faster than walking the value, and only a
    /// payload whose text holds something to redact is walked (see [`Self::redact_value`]).
    pub fn redacted_payload(&self, value: Value) -> Redacted<StreamPayload> {
        let payload = StreamPayload::from(value);
        // A `Value` always encodes; should it not, the walk decides.
        if payload
            .json()
            .is_ok_and(|text| self.json_needs_nothing(text))
        {
            return Redacted::assembled(payload);
        }
        let mut value = payload.into_value();
        self.redact_value(&mut value);
        Redacted::assembled(StreamPayload::from(value))
    }

    /// The value redacted through its JSON text as [`Self::redacted_payload`] is, with the
    /// length of the redacted value's compact JSON text (what the result clamp measures).
    pub(crate) fn redacted_measured(&self, mut value: Value) -> (Redacted<Value>, usize) {
        // A number, boolean or null holds no text (tool results often are one): measured
        // without writing it out.
        if matches!(value, Value::Null | Value::Bool(_) | Value::Number(_)) {
            let size = crate::clamp::json_size(&value);
            return (Redacted::assembled(value), size);
        }
        if let Ok(text) = serde_json::to_string(&value)
            && self.json_needs_nothing(&text)
        {
            return (Redacted::assembled(value), text.len());
        }
        self.redact_value(&mut value);
        let size = crate::clamp::json_size(&value);
        (Redacted::assembled(value), size)
    }

    /// A tool result redacted: its content, and its error's code and message (a tool or an
    /// MCP server chooses both), marked as such.
    pub fn redacted_tool_result(&self, mut result: AiToolResult) -> Redacted<AiToolResult> {
        self.redact_value(&mut result.content);
        if let Some(error) = &mut result.error {
            for text in [&mut error.code, &mut error.message] {
                if let Cow::Owned(redacted) = self.redact_str(text) {
                    *text = redacted;
                }
            }
        }
        Redacted::assembled(result)
    }

    /// A redacted copy of a JSON value.
    pub fn redacted_value(&self, value: &Value) -> Value {
        let mut copy = value.clone();
        self.redact_value(&mut copy);
        copy
    }

    /// Redacts an audit record's summary, tool name and details before it reaches a sink.
    pub fn redact_audit_event(&self, event: &mut AiAuditEvent) {
        if let Some(summary) = self.redact_text(&event.summary, &mut Vec::new()) {
            event.summary = summary;
        }
        // A tool name comes from the request (a model's call, an administrator's change):
        // it may carry whatever the caller typed.
        if let Some(tool) = &event.tool_name
            && let Some(redacted) = self.redact_text(tool, &mut Vec::new())
        {
            event.tool_name = Some(redacted.into());
        }
        self.redact_value(event.details.json_mut());
    }

    /// The error with its message redacted (code, status and diagnostics unchanged).
    pub fn redact_error(&self, error: AiError) -> AiError {
        let message = match self.redact_str(error.message()) {
            Cow::Borrowed(_) => return error,
            Cow::Owned(message) => message,
        };
        error.with_message(message)
    }

    /// The redacted text, or `None` when nothing in it needed redaction. `folded` is scratch
    /// space for the lowercased text, reused across calls.
    ///
    /// A replacement changes the neighbourhood of what surrounds it: an access key glued to a
    /// registered secret is a free-standing key once the secret is the marker. So passes
    /// repeat until one changes nothing (each pass only turns text that is not a marker into
    /// markers; the bound is a guard), and redacting twice changes nothing.
    ///
    /// Text that is a JSON object or array (an MCP server's text block, a stored payload)
    /// first gets the rules for JSON values, so that the key rules see inside it.
    fn redact_text(&self, text: &str, folded: &mut Vec<u8>) -> Option<String> {
        let embedded = self.redact_embedded_json(text);
        let text = embedded.as_deref().unwrap_or(text);
        match self.redact_pass(text, folded) {
            Some(redacted) => Some(self.redact_again(redacted, folded)),
            None => embedded,
        }
    }

    /// [`Self::redact_text`] whose first pass searches `haystack` (the text's bytes as
    /// `automaton` wants them, see [`Self::redact_pass`]) from `from`, where no anchor
    /// match starts before `from`: the walk's batch search has already found the first.
    fn redact_text_from(
        &self,
        text: &str,
        automaton: &AhoCorasick,
        haystack: &[u8],
        from: usize,
        folded: &mut Vec<u8>,
    ) -> Option<String> {
        let redacted = self.redact_pass_in(text, automaton, haystack, from)?;
        Some(self.redact_again(redacted, folded))
    }

    /// The passes of [`Self::redact_text`] after the first changed `redacted`.
    fn redact_again(&self, mut redacted: String, folded: &mut Vec<u8>) -> String {
        const MAX_PASSES: usize = 8;
        for _ in 1..MAX_PASSES {
            match self.redact_pass(&redacted, folded) {
                Some(again) => redacted = again,
                None => break,
            }
        }
        redacted
    }

    /// One left-to-right pass of [`Self::redact_text`].
    fn redact_pass(&self, text: &str, folded: &mut Vec<u8>) -> Option<String> {
        let bytes = text.as_bytes();
        if bytes.len() < MIN_ANCHOR_LEN {
            return None;
        }
        let (automaton, haystack) = if bytes.len() <= SHORT_TEXT {
            (&self.short_anchors, bytes)
        } else {
            folded.clear();
            folded.extend(bytes.iter().map(u8::to_ascii_lowercase));
            (&self.anchors, folded.as_slice())
        };
        self.redact_pass_in(text, automaton, haystack, 0)
    }

    /// One pass over `text` whose anchors `automaton` finds in `haystack` (`text` itself
    /// for [`Redactor::short_anchors`], its ASCII-lowercased bytes for
    /// [`Redactor::anchors`]), searching from `from`.
    fn redact_pass_in(
        &self,
        text: &str,
        automaton: &AhoCorasick,
        haystack: &[u8],
        from: usize,
    ) -> Option<String> {
        let bytes = text.as_bytes();
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut pos = from;
        while pos < bytes.len() {
            let Some(found) = automaton.find(Input::new(haystack).range(pos..)) else {
                break;
            };
            let anchor = self.kinds[found.pattern().as_usize()];
            let mut span =
                patterns::verify(anchor, bytes, found.start(), found.end(), &self.secrets).filter(
                    |span| {
                        span.start >= copied
                            && span.end > span.start
                            && text.is_char_boundary(span.start)
                            && text.is_char_boundary(span.end)
                    },
                );
            // The search goes on after this anchor's start (or its span): a registered secret
            // starting in between would be passed over.
            let passed = span.as_ref().map_or(found.start() + 1, |span| span.start);
            if passed > found.start()
                && let Some(secret) = self.secret_hidden_by(bytes, found.start(), passed)
            {
                span = Some(secret);
            }
            // A value redacted before stays as it is: redacting twice changes nothing, so
            // layers may each redact what passes them.
            if let Some(span) = &span
                && bytes[span.start..].starts_with(REDACTED.as_bytes())
            {
                pos = span.start + REDACTED.len();
                continue;
            }
            match span {
                Some(span) => {
                    let buffer = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    buffer.push_str(&text[copied..span.start]);
                    buffer.push_str(REDACTED);
                    copied = span.end;
                    pos = span.end.max(found.start() + 1);
                }
                None => pos = found.start() + 1,
            }
        }
        out.map(|mut buffer| {
            buffer.push_str(&text[copied..]);
            buffer
        })
    }
}

#[cfg(any(test, feature = "testing"))]
impl Redactor {
    /// How many anchor matches one search of the raw `bytes` finds: the pass every string's
    /// bytes go through, without walking a document, folding case or verifying a match. The
    /// redaction bench's baseline.
    pub(crate) fn anchor_matches(&self, bytes: &[u8]) -> usize {
        self.anchors.find_iter(bytes).count()
    }
}

impl Redactor {
    /// The first registered secret starting in `from..to` of `text`, where the longest anchor
    /// matched at `from` did not cover it: a secret equal to a built-in keyword up to case, or
    /// starting with part of one; a secret between a keyword and its value (a URL's user
    /// name before the password); a shorter secret under a longer one that differs in case.
    fn secret_hidden_by(&self, text: &[u8], from: usize, to: usize) -> Option<Range<usize>> {
        let automaton = self.secret_anchors.as_ref()?;
        // A registered secret matches exactly, so it starts with one of their first bytes.
        if !text
            .get(from..to)?
            .iter()
            .any(|&b| self.secret_starts[usize::from(b)])
        {
            return None;
        }
        // Overlapping matches come in the order they end; one starting before `to` ends
        // before `to + longest_secret`.
        let end = text.len().min(to + self.longest_secret);
        automaton
            .find_overlapping_iter(Input::new(text).range(from..end))
            .filter(|found| found.start() < to)
            .filter_map(|found| {
                let group = found.pattern().as_usize();
                patterns::verify(
                    Anchor::Secret(group),
                    text,
                    found.start(),
                    found.end(),
                    &self.secrets,
                )
            })
            .min_by_key(|span| (span.start, std::cmp::Reverse(span.end)))
    }
}

/// Providers redact what they log with the host's rules and registered secrets.
impl AiTextRedactor for Redactor {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_str(text)
    }

    fn redact_json<'a>(&self, json: &'a serde_json::value::RawValue) -> Cow<'a, str> {
        Redactor::redact_json(self, json)
    }
}

impl Default for Redactor {
    /// The built-in rules without registered secrets.
    fn default() -> Self {
        // Only fixed literals are compiled here, which always succeeds.
        #[allow(clippy::expect_used)]
        RedactorBuilder::default()
            .build()
            .expect("the built-in redaction patterns compile")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn redactor() -> Redactor {
        Redactor::builder()
            .secret("host-secret-value-42")
            .build()
            .unwrap()
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        let redactor = redactor();
        for text in [
            "Server=db;Password=hunter2;",
            "My password=hunter2",
            "password=abc]def and token: 'xyz'",
            "Authorization: Basic dXNlcjpwYXNz",
            "Bearer abcdefghijklmnopqrstuvwxyz012345",
            "postgres://app:s3cr3t@db/x uses host-secret-value-42",
        ] {
            let once = redactor.redact_str(text).into_owned();
            assert_ne!(once, text, "{text} holds a secret");
            assert_eq!(
                redactor.redact_str(&once),
                once,
                "{text} is stable once redacted"
            );
        }
        let mut value = json!({"note": "password=hunter2", "apiKey": "k"});
        redactor.redact_value(&mut value);
        let once = value.clone();
        assert!(!redactor.redact_value(&mut value), "nothing left to change");
        assert_eq!(value, once);
    }

    #[test]
    fn a_payload_redacted_through_its_text_keeps_that_text_or_loses_its_secrets() {
        let redactor = redactor();
        let clean = json!({"delta": "The workflow\nstarts \"here\"", "n": 2});
        let payload = redactor.redacted_payload(clean.clone()).into_inner();
        assert_eq!(*payload, clean);
        assert_eq!(
            payload.json().unwrap(),
            serde_json::to_string(&clean).unwrap()
        );
        for (secret, redacted) in [
            (
                json!({"delta": "uses host-secret-value-42", "config": {"apiKey": 7}}),
                json!({"delta": "uses [REDACTED]", "config": {"apiKey": REDACTED}}),
            ),
            (
                json!(["Server=db;Password=hunter2;", {"token": ["a", null]}]),
                json!(["Server=db;Password=[REDACTED];", {"token": [REDACTED, null]}]),
            ),
        ] {
            let payload = redactor.redacted_payload(secret.clone()).into_inner();
            assert_eq!(*payload, redacted, "{secret}");
            assert_eq!(
                serde_json::from_str::<Value>(payload.json().unwrap()).unwrap(),
                redacted,
                "the kept text is the redacted value's"
            );
            let (measured, size) = redactor.redacted_measured(secret);
            assert_eq!(*measured, redacted);
            assert_eq!(size, serde_json::to_string(&redacted).unwrap().len());
        }
        for scalar in [json!(null), json!(true), json!(-1.5e300), json!(u64::MAX)] {
            let (measured, size) = redactor.redacted_measured(scalar.clone());
            assert_eq!(*measured, scalar);
            assert_eq!(size, serde_json::to_string(&scalar).unwrap().len());
        }
    }

    #[test]
    fn sensitive_keys_are_replaced_whatever_their_spelling() {
        let mut value = json!({
            "password": "p1", "api_key": "k1", "API-KEY": "k2", "ApiKey": "k3",
            "clientSecret": "c", "connectionString": "Server=x", "name": "visible"
        });
        assert!(redactor().redact_value(&mut value));
        for key in [
            "password",
            "api_key",
            "API-KEY",
            "ApiKey",
            "clientSecret",
            "connectionString",
        ] {
            assert_eq!(value[key], REDACTED, "{key}");
        }
        assert_eq!(value["name"], "visible");
    }

    #[test]
    fn keys_are_decided_alike_before_and_after_the_walk_caches_them() {
        // Records that repeat their keys, and more distinct keys than the cache has slots:
        // the first keys of the walk are decided directly, the rest through the cache.
        let records: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("n{i}"), "password": "p", "apiKey": "k", "note": "x"}))
            .collect();
        let wide: serde_json::Map<String, Value> = (0..100)
            .flat_map(|i| {
                [
                    (format!("field{i}"), json!("kept")),
                    (format!("secret{i}"), json!("gone")),
                ]
            })
            .collect();
        let mut value = json!({"records": records, "wide": wide});
        assert!(redactor().redact_value(&mut value));
        for (i, record) in value["records"].as_array().unwrap().iter().enumerate() {
            assert_eq!(record["name"], format!("n{i}"));
            assert_eq!(record["note"], "x");
            assert_eq!(record["password"], REDACTED, "record {i}");
            assert_eq!(record["apiKey"], REDACTED, "record {i}");
        }
        for i in 0..100 {
            assert_eq!(value["wide"][format!("field{i}")], "kept", "field{i}");
            assert_eq!(value["wide"][format!("secret{i}")], REDACTED, "secret{i}");
        }
    }

    #[test]
    fn shape_is_kept_inside_sensitive_subtrees() {
        let mut value =
            json!({"credentials": {"user": "bob", "pins": [1, 2, null], "ok": true}, "n": 5});
        redactor().redact_value(&mut value);
        assert_eq!(
            value,
            json!({"credentials": {"user": REDACTED, "pins": [REDACTED, REDACTED, null], "ok": REDACTED}, "n": 5})
        );
    }

    #[test]
    fn credential_shapes_in_strings_are_replaced_in_place() {
        let r = redactor();
        let cases = [
            (
                "Authorization: Bearer abcdef123456",
                "Authorization: [REDACTED]",
            ),
            ("send bearer abcdef123456 now", "send bearer [REDACTED] now"),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl ok",
                "jwt [REDACTED] ok",
            ),
            ("key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED] used"),
            (
                "gh ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "gh [REDACTED]",
            ),
            (
                "pat github_pat_11ABCDEFG0123456789_abcdefghijkl",
                "pat [REDACTED]",
            ),
            (
                "Server=db;User Id=sa;Password=hunter2;",
                "Server=db;User Id=sa;Password=[REDACTED];",
            ),
            (
                "postgres://app:s3cr3t@db:5432/app",
                "postgres://app:[REDACTED]@db:5432/app",
            ),
            (
                "https://x.io/cb?access_token=abc123&x=1",
                "https://x.io/cb?access_token=[REDACTED]&x=1",
            ),
            ("echo host-secret-value-42!", "echo [REDACTED]!"),
            (
                "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----",
                "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact_str(input), expected, "{input}");
        }
    }

    #[test]
    fn the_key_list_matches_whatever_the_case_and_separator() {
        let r = redactor();
        // The sensitive keys the issue names, each in the spellings hosts and Elsa use.
        for key in [
            "password",
            "PASSWORD",
            "Password",
            "db_password",
            "secret",
            "Secret",
            "client-secret",
            "token",
            "Token",
            "access_token",
            "x-auth-token",
            "apiKey",
            "ApiKey",
            "api_key",
            "API-KEY",
            "api.key",
            "api key",
            "connectionString",
            "ConnectionString",
            "connection_string",
            "CONNECTION-STRING",
            "connection.string",
            "authorization",
            "Authorization",
            "AUTHORIZATION",
            "privateKey",
            "PrivateKey",
            "private_key",
            "PRIVATE-KEY",
            "private.key",
        ] {
            assert!(r.is_sensitive_key(key), "{key}");
            let mut value = json!({ key: "s3cr3t-value", "id": 1 });
            r.redact_value(&mut value);
            assert_eq!(value, json!({ key: REDACTED, "id": 1 }), "{key}");
        }
    }

    #[test]
    fn every_credential_shape_is_replaced() {
        let r = redactor();
        let cases = [
            // Bearer tokens, in headers and prose.
            (
                "curl -H 'Authorization: Bearer 0123456789abcdef'",
                "curl -H 'Authorization: [REDACTED]'",
            ),
            ("use bearer ya29.a0AfH6SMBx_token", "use bearer [REDACTED]"),
            // JWTs, also inside embedded JSON.
            (
                r#"{"id_token":"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"}"#,
                r#"{"id_token":"[REDACTED]"}"#,
            ),
            (
                "cookie eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln; path=/",
                "cookie [REDACTED]; path=/",
            ),
            // PEM private keys of every label.
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
                "-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----",
                "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----",
            ),
            (
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----",
                "-----BEGIN ENCRYPTED PRIVATE KEY-----[REDACTED]-----END ENCRYPTED PRIVATE KEY-----",
            ),
            // Cloud access keys.
            ("id AKIAIOSFODNN7EXAMPLE", "id [REDACTED]"),
            ("id ASIAIOSFODNN7EXAMPLE", "id [REDACTED]"),
            (
                "google AIzaSyA-1234567890abcdefghijklmnopqrstu",
                "google [REDACTED]",
            ),
            (
                "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=bXlrZXk=;EndpointSuffix=core.windows.net",
                "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
            ),
            (
                "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=c2VjcmV0=",
                "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=[REDACTED]",
            ),
            // GitHub tokens of every kind.
            ("t ghp_0123456789abcdefghijABCDEFGHIJ012345", "t [REDACTED]"),
            ("t gho_0123456789abcdefghijABCDEFGHIJ012345", "t [REDACTED]"),
            ("t ghu_0123456789abcdefghijABCDEFGHIJ012345", "t [REDACTED]"),
            ("t ghs_0123456789abcdefghijABCDEFGHIJ012345", "t [REDACTED]"),
            ("t ghr_0123456789abcdefghijABCDEFGHIJ012345", "t [REDACTED]"),
            (
                "t github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyz",
                "t [REDACTED]",
            ),
            // Other vendors' keys.
            ("t glpat-0123456789abcdefghij", "t [REDACTED]"),
            ("t xoxb-1234567890-abcdefghij", "t [REDACTED]"),
            ("t npm_0123456789abcdefghijABCDEFGHIJ0123", "t [REDACTED]"),
            ("t sk_live_0123456789abcdefgh", "t [REDACTED]"),
            ("t sk-proj-0123456789abcdefghijkl", "t [REDACTED]"),
            // Connection strings with a password.
            (
                "Server=db;Database=elsa;User Id=sa;Password=P@ss;w0rd",
                "Server=db;Database=elsa;User Id=sa;Password=[REDACTED];w0rd",
            ),
            (
                "Host=db;Username=elsa;Pwd=\"p w\";",
                "Host=db;Username=elsa;Pwd=\"[REDACTED]\";",
            ),
            (
                "mongodb+srv://elsa:pa55word@cluster0.example.net/db",
                "mongodb+srv://elsa:[REDACTED]@cluster0.example.net/db",
            ),
            (
                "amqp://guest:guest-pass@rabbit:5672/",
                "amqp://guest:[REDACTED]@rabbit:5672/",
            ),
            // Host-registered secrets, anywhere in a word.
            ("key=xhost-secret-value-42x", "key=x[REDACTED]x"),
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact_str(input), expected, "{input}");
            let mut value = json!({"nested": [{"text": input}]});
            r.redact_value(&mut value);
            assert_eq!(value, json!({"nested": [{"text": expected}]}), "{input}");
        }
    }

    #[test]
    fn redaction_keeps_the_shape_of_a_real_workflow_document() {
        fn shape(value: &Value) -> Value {
            match value {
                Value::Object(map) => {
                    Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
                }
                Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
                _ => Value::Null,
            }
        }
        let r = redactor();
        for definition in elsa_workflows::samples::definitions() {
            let mut value = definition.to_value();
            value["variables"] =
                json!([{"name": "apiKey", "value": 42, "secret": {"a": [1, true]}}]);
            value["description"] =
                json!("calls https://svc with Authorization: Bearer abcdefgh12345678");
            let before = shape(&value);
            assert!(r.redact_value(&mut value));
            assert_eq!(shape(&value), before, "same keys, same array lengths");
            assert_eq!(
                value["variables"][0]["secret"],
                json!({"a": [REDACTED, REDACTED]})
            );
            assert_eq!(
                value["variables"][0]["name"], "apiKey",
                "a key's name is no secret"
            );
        }
    }

    #[test]
    fn ordinary_text_is_borrowed_untouched() {
        let r = redactor();
        for text in [
            "the bearer of bad news",
            "reset your password in settings",
            "https://example.com/workflows/abc",
            "tokens used: 1200",
            "ünïcödé text with eyJ but nothing else",
            "HOST-SECRET-VALUE-42 differs in case",
        ] {
            assert!(matches!(r.redact_str(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn a_credential_glued_to_a_registered_secret_is_replaced_too() {
        // The access key is not free-standing next to the secret, and is once the secret is
        // the marker: both go, in one call.
        let r = redactor();
        for text in [
            "host-secret-value-42AKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLEhost-secret-value-42",
        ] {
            let once = r.redact_str(text).into_owned();
            assert_eq!(once, "[REDACTED][REDACTED]", "{text}");
            assert_eq!(r.redact_str(&once), once);
        }
    }

    #[test]
    fn a_secret_that_looks_like_a_keyword_or_sits_in_a_url_is_replaced() {
        let r = Redactor::builder()
            .secret("PASSWD")
            .secret("-----BEGIN ")
            .secret("github_p")
            .secret("svc-user-0042")
            .build()
            .unwrap();
        let cases = [
            // Equal to a built-in keyword up to case, or a prefix of one.
            ("PASSWD", "[REDACTED]"),
            ("-----BEGIN ", "[REDACTED]"),
            ("github_pat_short", "[REDACTED]at_short"),
            // A URL's user name before a password that is redacted too.
            (
                "https://svc-user-0042:pw-1@api.example",
                "https://[REDACTED]:[REDACTED]@api.example",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(r.redact_str(input), expected, "{input}");
        }
        // A longer secret that matches only up to case does not hide a shorter one.
        let r = Redactor::builder()
            .secret("ABCDEF-1")
            .secret("abcdef-12")
            .build()
            .unwrap();
        assert_eq!(r.redact_str("x ABCDEF-12"), "x [REDACTED]2");
    }

    #[test]
    fn several_secrets_in_one_string_are_all_replaced() {
        let text = "a=1 password=x1 token=y2 AKIAIOSFODNN7EXAMPLE host-secret-value-42";
        assert_eq!(
            redactor().redact_str(text),
            "a=1 password=[REDACTED] token=[REDACTED] [REDACTED] [REDACTED]"
        );
    }

    #[test]
    fn embedded_json_strings_are_redacted() {
        let mut value = json!({"body": "{\"password\":\"hunter2\",\"user\":\"bob\"}"});
        redactor().redact_value(&mut value);
        assert_eq!(
            value["body"],
            "{\"password\":\"[REDACTED]\",\"user\":\"bob\"}"
        );
    }

    #[test]
    fn a_json_document_in_a_string_gets_the_key_rules() {
        let r = redactor();
        let mut value = json!({"content": [{"type": "text",
            "text": "{\"cookie\": \"sid-1\", \"rows\": [{\"auth\": 7}], \"name\": \"x\"}"}]});
        assert!(r.redact_value(&mut value));
        assert_eq!(
            value["content"][0]["text"],
            "{\"cookie\": \"[REDACTED]\", \"rows\": [{\"auth\": \"[REDACTED]\"}], \"name\": \"x\"}"
        );
        assert_eq!(
            r.redact_str(" [{\"Set-Cookie\": \"a\"}] "),
            " [{\"Set-Cookie\": \"[REDACTED]\"}] "
        );
        // Braces around text that is not JSON leave it to the text rules alone.
        assert_eq!(r.redact_str("{ cookie: sid-1 }"), "{ cookie: sid-1 }");
        assert_eq!(r.redact_str("[REDACTED]"), "[REDACTED]");
    }

    #[test]
    fn registered_secrets_match_exactly_even_when_they_differ_only_in_case() {
        let r = Redactor::builder()
            .secret("Case-Secret-1")
            .secret("case-secret-1")
            .build()
            .unwrap();
        assert_eq!(
            r.redact_str("a Case-Secret-1 b case-secret-1 c CASE-SECRET-1"),
            "a [REDACTED] b [REDACTED] c CASE-SECRET-1"
        );
    }

    #[test]
    fn keyword_anchors_match_in_any_case() {
        let r = redactor();
        assert_eq!(
            r.redact_str("PASSWORD=x1 PassWord: y2 BEARER abcdef123456"),
            "PASSWORD=[REDACTED] PassWord: [REDACTED] BEARER [REDACTED]"
        );
    }

    #[test]
    fn short_and_long_texts_are_redacted_alike() {
        let r = redactor();
        for secret in [
            "Password=hunter2;",
            "BEARER abcdef123456",
            "host-secret-value-42",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            let short = r.redact_str(secret).into_owned();
            let padding = "lorem ipsum ".repeat(20);
            let long = r
                .redact_str(&format!("{padding}{secret} {padding}"))
                .into_owned();
            assert_eq!(long, format!("{padding}{short} {padding}"), "{secret}");
            assert!(short.contains(REDACTED), "{secret}");
        }
    }

    #[test]
    fn short_secrets_are_refused() {
        let error = Redactor::builder().secret("abc").build().unwrap_err();
        assert_eq!(error, RedactorError::SecretTooShort { len: 3, min: 6 });
    }

    #[test]
    fn audit_events_and_stream_events_are_redacted() {
        let r = redactor();
        let mut event = AiAuditEvent::new(
            "acme".into(),
            "alice",
            elsa_ai_abstractions::AuditAction::TOOL_INVOKED,
            elsa_ai_abstractions::AuditOutcome::Success,
            "called with password=hunter2",
        );
        event.details = json!({"token": "abc"}).into();
        r.redact_audit_event(&mut event);
        assert_eq!(event.summary, "called with password=[REDACTED]");
        assert_eq!(event.details["token"], REDACTED);

        // Typed details are redacted like JSON ones, including what reads them back.
        event.details = elsa_ai_abstractions::ToolCallDetails {
            call_id: "call-sk-live-0123456789abcdefghij".into(),
            agent: "a".into(),
            called_as: None,
            arguments: std::sync::Arc::new(
                json!({"password": "hunter2", "text": "key sk-live-0123456789abcdefghij"}),
            ),
            outcome: elsa_ai_abstractions::AiToolOutcome::Success,
            duration_ms: 1,
            truncated: false,
            error: None,
            result: Some(json!({"apiKey": "x"})),
        }
        .into();
        assert_eq!(
            event.details["arguments"]["password"], "hunter2",
            "not yet redacted"
        );
        r.redact_audit_event(&mut event);
        let written = serde_json::to_string(&event).unwrap();
        for secret in ["hunter2", "sk-live-0123456789abcdefghij", "\"x\""] {
            assert!(!written.contains(secret), "{secret} in {written}");
        }
        assert_eq!(event.details["arguments"]["password"], REDACTED);
        assert_eq!(event.details["result"]["apiKey"], REDACTED);
    }
}
