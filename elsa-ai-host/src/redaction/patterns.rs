//! Credential shapes found inside free text: literal anchors for one multi-pattern pass,
//! and the cheap local check that confirms an anchor and finds the span to replace.

use std::ops::Range;

/// What an anchor found by the automaton stands for, and how to confirm it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Anchor {
    /// `Bearer <token>`: the token is replaced.
    Bearer,
    /// `eyJ…` with three dot-separated base64url segments: the whole JWT is replaced.
    Jwt,
    /// `-----BEGIN … PRIVATE KEY-----`: the body up to `-----END` is replaced.
    PemPrivateKey,
    /// A vendor token with a fixed, case-sensitive prefix: the whole token is replaced.
    Prefixed(Prefix),
    /// `password=…`, `token: …`, `"apiKey":"…"`: the assigned value is replaced.
    Assignment,
    /// `Authorization: <scheme> <credentials>`: everything after the separator on that line.
    Authorization,
    /// `scheme://user:password@host`: the password is replaced.
    UrlCredentials,
    /// A value the host registered as secret, matched exactly: the index of the group of
    /// registered secrets that are equal ignoring ASCII case.
    Secret(usize),
}

/// A token prefix and the shape of the body that must follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Prefix {
    literal: &'static str,
    min_body: usize,
    max_body: usize,
    body: BodyChars,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyChars {
    /// `[A-Z0-9]` (AWS access key ids).
    UpperAlnum,
    /// `[A-Za-z0-9]`.
    Alnum,
    /// `[A-Za-z0-9_]`.
    AlnumUnderscore,
    /// `[A-Za-z0-9_-]`.
    AlnumDashUnderscore,
}

impl BodyChars {
    fn admits(self, b: u8) -> bool {
        match self {
            Self::UpperAlnum => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Self::Alnum => b.is_ascii_alphanumeric(),
            Self::AlnumUnderscore => b.is_ascii_alphanumeric() || b == b'_',
            Self::AlnumDashUnderscore => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
        }
    }
}

const fn prefix(
    literal: &'static str,
    min_body: usize,
    max_body: usize,
    body: BodyChars,
) -> Anchor {
    Anchor::Prefixed(Prefix {
        literal,
        min_body,
        max_body,
        body,
    })
}

/// Every built-in anchor. The automaton matches them in ASCII-lowercased text; each
/// verification re-checks case on the original text where the real format is case-sensitive.
pub(super) const BUILT_IN: &[(&str, Anchor)] = &[
    ("bearer", Anchor::Bearer),
    ("eyJ", Anchor::Jwt),
    ("-----BEGIN ", Anchor::PemPrivateKey),
    ("://", Anchor::UrlCredentials),
    ("authorization", Anchor::Authorization),
    // AWS access key ids (long-term and temporary).
    ("AKIA", prefix("AKIA", 16, 16, BodyChars::UpperAlnum)),
    ("ASIA", prefix("ASIA", 16, 16, BodyChars::UpperAlnum)),
    // GitHub tokens.
    ("ghp_", prefix("ghp_", 20, 255, BodyChars::Alnum)),
    ("gho_", prefix("gho_", 20, 255, BodyChars::Alnum)),
    ("ghu_", prefix("ghu_", 20, 255, BodyChars::Alnum)),
    ("ghs_", prefix("ghs_", 20, 255, BodyChars::Alnum)),
    ("ghr_", prefix("ghr_", 20, 255, BodyChars::Alnum)),
    (
        "github_pat_",
        prefix("github_pat_", 20, 255, BodyChars::AlnumUnderscore),
    ),
    // GitLab, Slack, npm, Google, Stripe, OpenAI/Anthropic-style keys.
    (
        "glpat-",
        prefix("glpat-", 20, 255, BodyChars::AlnumDashUnderscore),
    ),
    (
        "xoxb-",
        prefix("xoxb-", 10, 255, BodyChars::AlnumDashUnderscore),
    ),
    (
        "xoxp-",
        prefix("xoxp-", 10, 255, BodyChars::AlnumDashUnderscore),
    ),
    (
        "xoxa-",
        prefix("xoxa-", 10, 255, BodyChars::AlnumDashUnderscore),
    ),
    (
        "xoxs-",
        prefix("xoxs-", 10, 255, BodyChars::AlnumDashUnderscore),
    ),
    ("npm_", prefix("npm_", 30, 64, BodyChars::Alnum)),
    (
        "AIza",
        prefix("AIza", 35, 35, BodyChars::AlnumDashUnderscore),
    ),
    ("sk_live_", prefix("sk_live_", 16, 255, BodyChars::Alnum)),
    ("sk_test_", prefix("sk_test_", 16, 255, BodyChars::Alnum)),
    ("rk_live_", prefix("rk_live_", 16, 255, BodyChars::Alnum)),
    (
        "sk-",
        prefix("sk-", 20, 255, BodyChars::AlnumDashUnderscore),
    ),
    // `key = value` assignments in connection strings, URLs, logs and embedded JSON.
    ("password", Anchor::Assignment),
    ("passwd", Anchor::Assignment),
    ("passphrase", Anchor::Assignment),
    ("pwd", Anchor::Assignment),
    ("secret", Anchor::Assignment),
    ("token", Anchor::Assignment),
    ("apikey", Anchor::Assignment),
    ("api_key", Anchor::Assignment),
    ("api-key", Anchor::Assignment),
    ("accesskey", Anchor::Assignment),
    ("access_key", Anchor::Assignment),
    ("accountkey", Anchor::Assignment),
    ("privatekey", Anchor::Assignment),
    ("private_key", Anchor::Assignment),
    ("credentials", Anchor::Assignment),
];

/// Longest distance a verification scans for the end of a URL's user info.
const MAX_USERINFO: usize = 512;

/// Confirms the anchor `anchor` matched at `at..end` of `text`; returns the span to replace.
pub(super) fn verify(
    anchor: Anchor,
    text: &[u8],
    at: usize,
    end: usize,
    secrets: &[Vec<String>],
) -> Option<Range<usize>> {
    match anchor {
        Anchor::Bearer => bearer(text, end),
        Anchor::Jwt => jwt(text, at),
        Anchor::PemPrivateKey => pem(text, at),
        Anchor::Prefixed(prefix) => prefixed(prefix, text, at),
        Anchor::Assignment => assignment(text, end, false),
        Anchor::Authorization => assignment(text, end, true),
        Anchor::UrlCredentials => url_credentials(text, at),
        Anchor::Secret(group) => {
            let found = text.get(at..end)?;
            secrets
                .get(group)?
                .iter()
                .any(|secret| secret.as_bytes() == found)
                .then_some(at..end)
        }
    }
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Index of the first byte at or after `from` that does not satisfy `keep`.
fn scan(text: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    text.get(from..)
        .and_then(|rest| rest.iter().position(|&b| !keep(b)))
        .map_or(text.len(), |offset| from + offset)
}

fn bearer(text: &[u8], end: usize) -> Option<Range<usize>> {
    let start = scan(text, end, |b| b == b' ' || b == b'\t');
    if start == end {
        return None;
    }
    let mut stop = scan(text, start, is_token_char);
    stop = scan(text, stop, |b| b == b'=');
    let token = text.get(start..stop)?;
    // "the bearer of bad news" is prose; a credential is long or not purely alphabetic.
    let credential =
        token.len() >= 20 || (token.len() >= 8 && token.iter().any(|b| !b.is_ascii_alphabetic()));
    credential.then_some(start..stop)
}

fn jwt(text: &[u8], at: usize) -> Option<Range<usize>> {
    if text.get(at..at + 3)? != b"eyJ"
        || at
            .checked_sub(1)
            .and_then(|i| text.get(i))
            .is_some_and(|&b| is_base64url(b))
    {
        return None;
    }
    let header_end = scan(text, at, is_base64url);
    if header_end - at < 10 || text.get(header_end) != Some(&b'.') {
        return None;
    }
    let payload_end = scan(text, header_end + 1, is_base64url);
    if payload_end - header_end - 1 < 4 || text.get(payload_end) != Some(&b'.') {
        return None;
    }
    let signature_end = scan(text, payload_end + 1, is_base64url);
    Some(at..signature_end)
}

fn pem(text: &[u8], at: usize) -> Option<Range<usize>> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    if text.get(at..at + BEGIN.len())? != BEGIN {
        return None;
    }
    let label_start = at + BEGIN.len();
    let label_end = scan(text, label_start, |b| {
        b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' '
    });
    let label = text.get(label_start..label_end)?;
    let is_private = label.ends_with(b"PRIVATE KEY") || label.ends_with(b"PRIVATE KEY BLOCK");
    if !is_private || label.len() > 48 || text.get(label_end..label_end + 5)? != b"-----" {
        return None;
    }
    let body_start = label_end + 5;
    let body_end = memchr::memmem::find(text.get(body_start..)?, b"-----END")
        .map_or(text.len(), |offset| body_start + offset);
    Some(body_start..body_end)
}

fn prefixed(prefix: Prefix, text: &[u8], at: usize) -> Option<Range<usize>> {
    let literal = prefix.literal.as_bytes();
    if text.get(at..at + literal.len())? != literal
        || at
            .checked_sub(1)
            .and_then(|i| text.get(i))
            .is_some_and(|b| b.is_ascii_alphanumeric())
    {
        return None;
    }
    let body_start = at + literal.len();
    let body_end = scan(text, body_start, |b| prefix.body.admits(b));
    let body = body_end - body_start;
    let bounded = text
        .get(body_end)
        .is_none_or(|&b| !b.is_ascii_alphanumeric());
    (body >= prefix.min_body && body <= prefix.max_body && bounded).then_some(at..body_end)
}

/// `keyword [quote] [spaces] (=|:) [spaces] [quote] value`. For `Authorization` the value runs
/// to the end of the line (scheme and credentials); otherwise to the first delimiter.
fn assignment(text: &[u8], end: usize, to_line_end: bool) -> Option<Range<usize>> {
    let mut i = end;
    if matches!(text.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    i = scan(text, i, |b| b == b' ' || b == b'\t');
    if !matches!(text.get(i), Some(b'=' | b':')) {
        return None;
    }
    i = scan(text, i + 1, |b| b == b' ' || b == b'\t');
    let quote = match text.get(i) {
        Some(&q @ (b'"' | b'\'')) => {
            i += 1;
            Some(q)
        }
        _ => None,
    };
    let stop = match quote {
        Some(q) => scan(text, i, |b| b != q && b != b'\n'),
        None if to_line_end => scan(text, i, |b| {
            !matches!(b, b'\n' | b'\r' | b'"' | b'\'' | b',' | b';')
        }),
        None => scan(text, i, |b| {
            !(b.is_ascii_whitespace()
                || matches!(
                    b,
                    b';' | b'&' | b',' | b'"' | b'\'' | b'}' | b']' | b')' | b'<'
                ))
        }),
    };
    (stop > i).then_some(i..stop)
}

fn url_credentials(text: &[u8], at: usize) -> Option<Range<usize>> {
    let scheme_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-');
    if !at
        .checked_sub(1)
        .and_then(|i| text.get(i))
        .is_some_and(|&b| scheme_char(b))
    {
        return None;
    }
    let info_start = at + 3;
    let limit = text.len().min(info_start + MAX_USERINFO);
    let info_len = text.get(info_start..limit)?.iter().position(|&b| {
        matches!(b, b'@' | b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>')
            || b.is_ascii_whitespace()
    })?;
    let at_sign = info_start + info_len;
    if text.get(at_sign) != Some(&b'@') {
        return None;
    }
    let colon = memchr::memchr(b':', text.get(info_start..at_sign)?)? + info_start;
    (at_sign > colon + 1).then_some(colon + 1..at_sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(anchor: Anchor, text: &str, literal: &str) -> Option<String> {
        let at = text.find(literal).expect("anchor in text");
        verify(anchor, text.as_bytes(), at, at + literal.len(), &[]).map(|r| text[r].to_owned())
    }

    #[test]
    fn bearer_tokens_need_a_credential_shape() {
        assert_eq!(
            span(Anchor::Bearer, "Authorization Bearer abc.DEF-123", "Bearer").as_deref(),
            Some("abc.DEF-123")
        );
        assert_eq!(
            span(Anchor::Bearer, "the bearer of bad news", "bearer"),
            None
        );
        assert_eq!(span(Anchor::Bearer, "bearerless", "bearer"), None);
    }

    #[test]
    fn jwts_need_three_segments_and_exact_case() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
        assert_eq!(
            span(Anchor::Jwt, &format!("token {jwt} end"), "eyJ").as_deref(),
            Some(jwt)
        );
        assert_eq!(span(Anchor::Jwt, "eyJhbGciOiJIUzI1NiJ9 only", "eyJ"), None);
        assert_eq!(
            span(
                Anchor::Jwt,
                "xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
                "eyJ"
            ),
            None
        );
    }

    #[test]
    fn pem_private_key_bodies_are_found_but_certificates_are_not() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            span(Anchor::PemPrivateKey, pem, "-----BEGIN ").as_deref(),
            Some("\nMIIEow\n")
        );
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        assert_eq!(span(Anchor::PemPrivateKey, cert, "-----BEGIN "), None);
    }

    #[test]
    fn prefixed_tokens_check_case_length_and_boundaries() {
        let aws = prefix("AKIA", 16, 16, BodyChars::UpperAlnum);
        assert_eq!(
            span(aws, "key AKIAIOSFODNN7EXAMPLE.", "AKIA").as_deref(),
            Some("AKIAIOSFODNN7EXAMPLE")
        );
        assert_eq!(
            span(aws, "key AKIAIOSFODNN7EXAMPLEX", "AKIA"),
            None,
            "too long"
        );
        assert_eq!(
            span(aws, "Pakiaiosfodnn7example", "akia"),
            None,
            "wrong case"
        );
        let sk = prefix("sk-", 20, 255, BodyChars::AlnumDashUnderscore);
        assert_eq!(
            span(sk, "task-0123456789abcdefghij", "sk-"),
            None,
            "inside a word"
        );
    }

    #[test]
    fn assignments_cover_connection_strings_json_and_headers() {
        assert_eq!(
            span(Anchor::Assignment, "Server=x;Password=hunter2;", "Password").as_deref(),
            Some("hunter2")
        );
        assert_eq!(
            span(Anchor::Assignment, r#"{"token": "abc def"}"#, "token").as_deref(),
            Some("abc def")
        );
        assert_eq!(span(Anchor::Assignment, "tokens=5", "token"), None);
        assert_eq!(span(Anchor::Assignment, "password reset", "password"), None);
        assert_eq!(
            span(
                Anchor::Authorization,
                "Authorization: Basic dXNlcjpwYXNz\nAccept: x",
                "Authorization"
            )
            .as_deref(),
            Some("Basic dXNlcjpwYXNz")
        );
    }

    #[test]
    fn url_user_info_passwords_are_found() {
        assert_eq!(
            span(
                Anchor::UrlCredentials,
                "postgres://app:s3cr3t@db:5432/x",
                "://"
            )
            .as_deref(),
            Some("s3cr3t")
        );
        assert_eq!(
            span(Anchor::UrlCredentials, "https://example.com/a@b", "://"),
            None
        );
        assert_eq!(
            span(Anchor::UrlCredentials, "https://user@example.com", "://"),
            None
        );
    }
}
