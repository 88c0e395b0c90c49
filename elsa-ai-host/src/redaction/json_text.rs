//! Redaction of JSON text as it stands, without building a tree: for payloads a host holds
//! as text (a wire message, a stored document, a provider's log line).
//!
//! One search of the whole text finds every place where a rule could apply: the anchors
//! of [`Redactor::redact_value`]'s credential shapes and registered secrets, and literals
//! found in every sensitive key ([`keys::contained_literals`], [`keys::EXACT`]). The quotes
//! between one hit and the next tell which string the hit lies in and whether that string
//! is a key; only those strings are read. A string with an escape is always read, decoded,
//! since its bytes are not its text. The result parses to exactly what `redact_value` makes
//! of the parsed input, and keeps the input's formatting outside what it replaces.

use std::borrow::Cow;
use std::cell::Cell;
use std::ops::Range;

use aho_corasick::{AhoCorasick, Input, Match, MatchKind, Span, packed};
use serde_json::value::RawValue;

use super::patterns::{self, Anchor};
use super::{Redactor, RedactorError, SHORT_TEXT, keys};

/// The marker as a JSON string.
const REDACTED_JSON: &str = "\"[REDACTED]\"";

/// The search over JSON text: the redactor's anchors and the sensitive keys' literals, as
/// few as find them all.
#[derive(Clone, Debug)]
pub(super) struct JsonSearch {
    finder: Finder,
    /// What a hit of each pattern stands for.
    hits: Vec<Hit>,
    /// How far before a hit an anchor may start in the same string: a literal that holds
    /// another is found through it (`api_key` through `key`), so a string is read from this
    /// far before its hit.
    reach_back: usize,
}

/// The search's engine: the vector searcher alone where the patterns and the processor
/// allow it (each search starts cheapest there, and a text takes one per hit), otherwise
/// the automaton.
#[derive(Clone, Debug)]
enum Finder {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

#[cfg(test)]
impl JsonSearch {
    /// Whether the vector searcher runs this search.
    pub(super) fn is_packed(&self) -> bool {
        matches!(self.finder, Finder::Packed(_))
    }
}

impl Finder {
    /// The leftmost-longest match in `haystack` starting at or after `from`.
    fn find(&self, haystack: &[u8], from: usize) -> Option<Match> {
        match self {
            Self::Packed(searcher) => searcher.find_in(haystack, Span::from(from..haystack.len())),
            Self::Automaton(automaton) => automaton.find(Input::new(haystack).range(from..)),
        }
    }
}

/// What a hit of one pattern of [`JsonSearch`] stands for.
#[derive(Clone, Copy, Debug)]
enum Hit {
    /// An exact key's word (its length in bytes), which counts only as a whole string
    /// (trailing separators aside), not inside a longer one (`pat`, not `spat`).
    WholeWord(usize),
    /// An anchor that the redactor's own search reports at the same place, standing for no
    /// other literal: checked where it is found, and the string is read only if it holds.
    /// No registered secret can hide under it: one starting where it starts would either
    /// start with it or be its prefix, and then found through it, and either keeps it a
    /// [`Hit::Candidate`].
    Anchor(Anchor),
    /// Anything else: the string around it is read.
    Candidate,
}

impl JsonSearch {
    /// The search for `anchors` (lowercase, of the given `kinds`) and the key literals.
    ///
    /// Fewer literals make a faster search, so a literal holding another one is left out
    /// and found through it, except through an exact key's literal, whose hits inside
    /// longer words are skipped.
    pub(super) fn new(anchors: &[String], kinds: &[Anchor]) -> Result<Self, RedactorError> {
        let mut candidates: Vec<String> = anchors
            .iter()
            .cloned()
            .chain(keys::contained_literals().map(str::to_owned))
            .chain(keys::EXACT.iter().map(|exact| (*exact).to_owned()))
            .collect();
        candidates.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
        candidates.dedup();
        // The exact keys that start no other literal: their hits inside longer words can be
        // skipped.
        let whole: Vec<&str> = keys::EXACT
            .iter()
            .copied()
            .filter(|exact| {
                !candidates
                    .iter()
                    .any(|other| other != exact && other.starts_with(exact))
            })
            .collect();
        let whole_string = |literal: &str| whole.contains(&literal);
        let mut literals: Vec<&str> = Vec::new();
        let mut covers: Vec<&str> = Vec::new();
        let mut reach_back = 0;
        for candidate in &candidates {
            let through: Vec<(&str, usize)> = literals
                .iter()
                .filter(|literal| !whole_string(literal))
                .filter_map(|literal| Some((*literal, candidate.find(literal)?)))
                .collect();
            match through.iter().map(|(_, offset)| *offset).min() {
                Some(offset) => {
                    reach_back = reach_back.max(offset);
                    covers.extend(through.iter().map(|(literal, _)| *literal));
                }
                None => literals.push(candidate),
            }
        }
        let hit = |literal: &str| {
            let mut same = anchors.iter().enumerate().filter(|(_, a)| *a == literal);
            match (same.next(), same.next()) {
                (Some((index, _)), None)
                    if !covers.contains(&literal)
                        && !anchors
                            .iter()
                            .any(|other| other != literal && other.starts_with(literal)) =>
                {
                    Hit::Anchor(kinds[index])
                }
                _ => Hit::Candidate,
            }
        };
        // A whole-string literal is looked for with what may follow it in a string (a
        // separator) or end it (a quote), so that the many longer words starting with it
        // (`path`) are not hits at all.
        let mut patterns: Vec<String> = Vec::with_capacity(literals.len());
        let mut hits = Vec::with_capacity(literals.len());
        for literal in literals {
            if whole_string(literal) {
                for &end in std::iter::once(&b'"').chain(keys::TRAILING_SEPARATORS) {
                    patterns.push(format!("{literal}{}", char::from(end)));
                    hits.push(Hit::WholeWord(literal.len()));
                }
            } else {
                patterns.push(literal.to_owned());
                hits.push(hit(literal));
            }
        }
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(&patterns)
            .build();
        let finder = match packed {
            Some(searcher) => Finder::Packed(searcher),
            None => Finder::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&patterns)
                    .map_err(|e| RedactorError::Patterns(e.to_string()))?,
            ),
        };
        Ok(Self {
            finder,
            hits,
            reach_back,
        })
    }
}

/// The end of the string opening at `open`: its closing quote, or the text's end.
fn string_end(bytes: &[u8], open: usize) -> usize {
    let mut from = open + 1;
    while let Some(offset) = memchr::memchr(b'"', &bytes[from..]) {
        let quote = from + offset;
        let backslashes = bytes[from..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return quote;
        }
        from = quote + 1;
    }
    bytes.len() - 1
}

/// The number of quotes in `bytes`, counted a block at a time (a loop the compiler turns
/// into vector instructions).
fn count_quotes(bytes: &[u8]) -> usize {
    bytes
        .chunks(64)
        .map(|block| usize::from(block.iter().map(|&b| u8::from(b == b'"')).sum::<u8>()))
        .sum()
}

/// The position of the first byte at or after `from` that is not JSON whitespace.
fn skip_whitespace(bytes: &[u8], from: usize) -> usize {
    bytes
        .get(from..)
        .and_then(|rest| {
            rest.iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        })
        .map_or(bytes.len(), |offset| from + offset)
}

/// A JSON string's text (`quoted` includes its quotes); `None` if it does not decode, which
/// valid JSON rules out.
fn decode(quoted: &str) -> Option<String> {
    serde_json::from_str(quoted).ok()
}

/// Replacements of byte ranges of a text, in order and apart.
#[derive(Default)]
struct Edits(Vec<(Range<usize>, Cow<'static, str>)>);

impl Edits {
    fn replace(&mut self, range: Range<usize>, with: impl Into<Cow<'static, str>>) {
        self.0.push((range, with.into()));
    }

    fn apply<'a>(self, text: &'a str) -> Cow<'a, str> {
        if self.0.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for (range, with) in self.0 {
            out.push_str(&text[copied..range.start]);
            out.push_str(&with);
            copied = range.end;
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }
}

impl Redactor {
    /// Redacts JSON text without parsing it into a [`serde_json::Value`]: the result parses
    /// to what [`Redactor::redact_value`] makes of the parsed input, and keeps the input's
    /// formatting outside the replaced values. Borrowed when nothing needed redaction.
    ///
    /// The input is a [`RawValue`] because the search trusts the text to be valid JSON;
    /// deserialising one checks that, as does `serde_json::value::to_raw_value`.
    ///
    /// ```
    /// use elsa_ai_host::Redactor;
    /// use serde_json::value::RawValue;
    ///
    /// let redactor = Redactor::default();
    /// let json = RawValue::from_string(
    ///     r#"{"cookie": "sid=1", "note": "Server=db;Password=hunter2;", "n": 2}"#.to_owned(),
    /// )?;
    /// assert_eq!(
    ///     redactor.redact_json(&json),
    ///     r#"{"cookie": "[REDACTED]", "note": "Server=db;Password=[REDACTED];", "n": 2}"#
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn redact_json<'a>(&self, json: &'a RawValue) -> Cow<'a, str> {
        let text = json.get();
        with_folded(text.as_bytes(), |folded| {
            self.redact_json_folded(text, folded)
        })
    }

    /// Whether JSON text holds nothing to redact: [`Redactor::redact_json`] hands it back
    /// as it is, so the value it encodes needs no walk either (the two paths agree). `text`
    /// must be valid JSON, as `serde_json` writes it.
    pub(super) fn json_needs_nothing(&self, text: &str) -> bool {
        with_folded(text.as_bytes(), |folded| {
            matches!(self.redact_json_folded(text, folded), Cow::Borrowed(_))
        })
    }

    /// [`Redactor::redact_json`] of `text`, whose ASCII-lowercased bytes are `folded`.
    fn redact_json_folded<'a>(&self, text: &'a str, folded: &[u8]) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        let search = &self.json_search;
        let find = |from: usize| search.finder.find(folded, from);
        let mut edits = Edits::default();
        let mut scratch = Vec::new();
        // A string with an escape is read whether or not the search hits in it: its bytes
        // may spell a keyword or a secret differently from its text.
        let mut backslashes = memchr::memchr_iter(b'\\', bytes);
        let mut backslash = backslashes.next();
        let mut hit = find(0);
        // Everything before `pos` is done, and `pos` lies outside any string. Between `pos`
        // and the next hit or backslash there is no backslash, so every quote there counts.
        let mut pos = 0;
        loop {
            while backslash.is_some_and(|at| at < pos) {
                backslash = backslashes.next();
            }
            if hit.is_some_and(|found| found.start() < pos) {
                hit = find(pos);
            }
            let at = match (hit, backslash) {
                (Some(found), Some(backslash)) => found.start().min(backslash),
                (Some(found), None) => found.start(),
                (None, Some(backslash)) => backslash,
                (None, None) => break,
            };
            let kind = hit
                .filter(|found| found.start() == at)
                .map(|found| (found, search.hits[found.pattern().as_usize()]));
            if let Some((_, Hit::WholeWord(word))) = kind
                && !is_whole_string(bytes, at, at + word)
            {
                hit = find(at + 1);
                continue;
            }
            let open = if count_quotes(&bytes[pos..at]) % 2 == 1 {
                memchr::memrchr(b'"', &bytes[pos..at]).map_or(pos, |offset| pos + offset)
            } else if bytes[at] == b'"' {
                at
            } else {
                // Outside strings only a registered secret can match (in a number, say),
                // and `redact_value` leaves numbers as they are too.
                pos = at + 1;
                continue;
            };
            let close = string_end(bytes, open);
            let escaped = backslash.is_some_and(|at| at < close);
            let after = skip_whitespace(bytes, close + 1);
            let is_key = bytes.get(after) == Some(&b':');
            // Most anchors found in a string do not hold (a URL without a password): the
            // search goes on from the next byte, as the string's own search would.
            if let Some((found, Hit::Anchor(anchor))) = kind
                && !is_key
                && !escaped
                && found.end() <= close
                && patterns::verify(
                    anchor,
                    &bytes[open + 1..close],
                    found.start() - (open + 1),
                    found.end() - (open + 1),
                    &self.secrets,
                )
                .is_none()
            {
                // The string's opening quote is outside it, so the quotes from there on
                // still tell what a later hit lies in.
                pos = open;
                hit = find(at + 1);
                continue;
            }
            pos = close + 1;
            if is_key {
                let key = if escaped {
                    decode(&text[open..=close]).map(Cow::Owned)
                } else {
                    Some(Cow::Borrowed(&text[open + 1..close]))
                };
                // A key that does not decode is taken as sensitive: fail closed.
                if key.is_none_or(|key| self.is_sensitive_key(&key)) {
                    pos = redact_member_value(bytes, after + 1, &mut edits);
                }
            } else if escaped {
                match decode(&text[open..=close]) {
                    Some(decoded) => {
                        if let Some(redacted) = self.redact_text(&decoded, &mut scratch) {
                            let quoted = serde_json::to_string(&redacted)
                                .unwrap_or_else(|_| REDACTED_JSON.to_owned());
                            edits.replace(open..close + 1, quoted);
                        }
                    }
                    None => edits.replace(open..close + 1, REDACTED_JSON),
                }
            } else {
                // No anchor starts in the string further than `reach_back` before the hit:
                // the search is leftmost, and each anchor holds one of its literals.
                let content = open + 1..close;
                let from = at
                    .saturating_sub(search.reach_back)
                    .saturating_sub(content.start);
                // A short string is searched as it is by the DFA, which starts cheapest.
                let (automaton, haystack) = if content.len() <= SHORT_TEXT {
                    (&self.short_anchors, &bytes[content.clone()])
                } else {
                    (&self.anchors, &folded[content.clone()])
                };
                if let Some(redacted) = self.redact_text_from(
                    &text[content.clone()],
                    automaton,
                    haystack,
                    from,
                    &mut scratch,
                ) {
                    edits.replace(content, redacted);
                }
            }
        }
        edits.apply(text)
    }
}

/// Whether `text` may be a JSON object or array, the documents that hold keys.
pub(super) fn may_be_document(text: &str) -> bool {
    let text = text.trim_ascii();
    (text.starts_with('{') && text.ends_with('}')) || (text.starts_with('[') && text.ends_with(']'))
}

impl Redactor {
    /// `text` redacted by [`Redactor::redact_json`] when it is a JSON object or array;
    /// `None` when it is not one, or nothing in it needed redaction.
    pub(super) fn redact_embedded_json(&self, text: &str) -> Option<String> {
        if !may_be_document(text) {
            return None;
        }
        let json: &RawValue = serde_json::from_str(text).ok()?;
        let Cow::Owned(redacted) = self.redact_json(json) else {
            return None;
        };
        // The value leaves out the whitespace around it; the text keeps it.
        let before = text.len() - text.trim_ascii_start().len();
        let after = text.len() - text.trim_ascii_end().len();
        Some([&text[..before], &redacted, &text[text.len() - after..]].concat())
    }
}

thread_local! {
    /// The lowercased copy of the last text this thread redacted, kept for the next: a
    /// fresh allocation per text costs more in page faults than the folding itself.
    static FOLDED: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The most a thread keeps in [`FOLDED`] between texts.
const KEEP_FOLDED: usize = 4 * 1024 * 1024;

/// Runs `redact` with the ASCII-lowercased `bytes`, in the thread's reused buffer.
fn with_folded<T>(bytes: &[u8], redact: impl FnOnce(&[u8]) -> T) -> T {
    let mut buffer = FOLDED.try_with(Cell::take).unwrap_or_default();
    buffer.clear();
    buffer.extend(bytes.iter().map(u8::to_ascii_lowercase));
    let result = redact(&buffer);
    if buffer.capacity() <= KEEP_FOLDED {
        // A thread being torn down has no buffer to keep.
        let _ = FOLDED.try_with(|cell| cell.set(buffer));
    }
    result
}

/// Whether `start..end` is a whole string but for trailing separators: a quote before it,
/// separators and a quote after it.
fn is_whole_string(bytes: &[u8], start: usize, end: usize) -> bool {
    let rest = &bytes[end..];
    let separators = rest
        .iter()
        .take_while(|&&b| keys::is_trailing_separator(b))
        .count();
    start
        .checked_sub(1)
        .is_some_and(|before| bytes[before] == b'"')
        && rest.get(separators) == Some(&b'"')
}

/// Replaces every scalar of the value starting at or after `from` (behind a sensitive key's
/// colon) with the marker, as `redact_all` does for a tree: nulls stay, keys stay, strings,
/// numbers and booleans become the marker. Returns the position after the value.
fn redact_member_value(bytes: &[u8], from: usize, edits: &mut Edits) -> usize {
    // Whether each open container is an object, innermost last.
    let mut containers: Vec<bool> = Vec::new();
    let mut key_next = false;
    let mut i = from;
    loop {
        i = skip_whitespace(bytes, i);
        let Some(&byte) = bytes.get(i) else {
            return i;
        };
        match byte {
            b'{' | b'[' => {
                containers.push(byte == b'{');
                key_next = byte == b'{';
                i += 1;
                continue;
            }
            b'}' | b']' => {
                containers.pop();
                i += 1;
            }
            b',' => {
                key_next = containers.last() == Some(&true);
                i += 1;
                continue;
            }
            b':' => {
                key_next = false;
                i += 1;
                continue;
            }
            b'"' => {
                let close = string_end(bytes, i);
                let was_key = key_next;
                if !was_key && &bytes[i..=close] != REDACTED_JSON.as_bytes() {
                    edits.replace(i..close + 1, REDACTED_JSON);
                }
                i = close + 1;
                if was_key {
                    continue;
                }
            }
            b'n' => i += "null".len(),
            _ => {
                let end = bytes[i..]
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                    .map_or(bytes.len(), |offset| i + offset);
                edits.replace(i..end, REDACTED_JSON);
                i = end;
            }
        }
        if containers.is_empty() {
            return i;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::redaction::REDACTED;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// `redact_json` of `text`, checked against `redact_value` of the parsed text.
    fn agrees(redactor: &Redactor, text: &str) -> String {
        let out = redactor.redact_json(&raw(text)).into_owned();
        let mut expected: Value = serde_json::from_str(text).unwrap();
        redactor.redact_value(&mut expected);
        let got: Value = serde_json::from_str(&out).expect("the output is valid JSON");
        assert_eq!(got, expected, "{text} became {out}");
        out
    }

    #[test]
    fn the_json_marker_is_the_marker_quoted() {
        assert_eq!(REDACTED_JSON, serde_json::to_string(REDACTED).unwrap());
    }

    #[test]
    fn sensitive_keys_lose_every_scalar_and_keep_their_shape() {
        let redactor = Redactor::default();
        let out = agrees(
            &redactor,
            r#"{"pat": 7, "Set-Cookie": ["a", true, null, {"k": 1.5e3}], "path": "/x",
               "session.key": {"inner": "v"}, "auth_": false, "authors": "ann"}"#,
        );
        assert!(out.contains(r#""path": "/x""#), "{out}");
        assert!(out.contains(r#""authors": "ann""#), "{out}");
        assert!(
            out.contains(
                r#""Set-Cookie": ["[REDACTED]", "[REDACTED]", null, {"k": "[REDACTED]"}]"#
            ),
            "{out}"
        );
    }

    #[test]
    fn escapes_in_keys_and_strings_are_read_as_their_text() {
        let redactor = Redactor::builder()
            .secret("quote\"in-secret")
            .build()
            .unwrap();
        let out = agrees(
            &redactor,
            r#"{"p\u0061ssword": "x", "note": "Pass\u0077ord=hunter2;", "q": "a quote\"in-secret b",
               "ok": "line\none", "s\"": "AKIA\u0049OSFODNN7EXAMPLE"}"#,
        );
        assert!(
            !out.contains("hunter2") && !out.contains("in-secret"),
            "{out}"
        );
        assert!(out.contains(r#""ok": "line\none""#), "untouched: {out}");
    }

    #[test]
    fn anchors_found_through_a_shorter_literal_are_read_from_their_start() {
        let redactor = Redactor::builder()
            .secret("host-registered-secret-value")
            .build()
            .unwrap();
        let out = agrees(
            &redactor,
            r#"{"a": "x private_key=hunter2 y", "b": "ACCESS_KEY: 'abc'",
               "c": "uses host-registered-secret-value", "d": "Authorization: Basic dXNlcg",
               "pat": 1, "e": "github_pat_0123456789abcdefghijkl", "f": "spat pat path"}"#,
        );
        for secret in ["hunter2", "abc", "registered", "dXNlcg", "0123456789"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains("spat pat path"), "{out}");
    }

    #[test]
    fn real_elsa_documents_are_redacted_as_their_parsed_values() {
        let redactor = Redactor::builder()
            .secret("registered-secret-42")
            .build()
            .unwrap();
        let mut read = 0;
        for folder in ["definitions", "instances", "activities"] {
            for path in weaver_testkit::fixture_files(folder) {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                // The README, licences and the deliberately broken files are not JSON.
                if RawValue::from_string(text.clone()).is_ok() {
                    agrees(&redactor, &text);
                    read += 1;
                }
            }
        }
        assert!(read >= 20, "only {read} fixture documents read");
    }

    #[test]
    fn formatting_is_kept_and_clean_text_is_borrowed() {
        let redactor = Redactor::default();
        let text = "{\n  \"items\" : [ 1 , \"https://example.com/a\" ],\n  \"name\":\"x\" }";
        assert!(matches!(redactor.redact_json(&raw(text)), Cow::Borrowed(_)));
        let secret = "{ \"a\" : [ \"Bearer abcdefghijklmnopqrstuvwxyz\" ] }";
        assert_eq!(
            agrees(&redactor, secret),
            "{ \"a\" : [ \"Bearer [REDACTED]\" ] }"
        );
        let once = agrees(&redactor, r#"{"password": 1, "x": "token=abc"}"#);
        assert!(matches!(
            redactor.redact_json(&raw(&once)),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_secret_in_a_number_or_across_strings_is_handled_like_the_tree() {
        let redactor = Redactor::builder()
            .secret("12345678")
            .secret("a\",\"password")
            .build()
            .unwrap();
        agrees(
            &redactor,
            r#"{"n": 12345678, "m": "12345678", "x": ["a","password"]}"#,
        );
        agrees(
            &redactor,
            r#""a top-level string with ghp_0123456789abcdefghijABCDEFGHIJ012345""#,
        );
        agrees(&redactor, "[]");
        agrees(&redactor, "12345678");
    }

    #[test]
    fn strings_at_every_offset_end_at_their_own_quote() {
        let redactor = Redactor::default();
        for pad in 0..70 {
            let text =
                json!({"p": "x".repeat(pad), "v": "Password=hunter2", "e": "\\\"\\", "token": pad})
                    .to_string();
            let out = agrees(&redactor, &text);
            assert!(!out.contains("hunter2"), "{out}");
        }
    }
}
