//! Which JSON object keys name sensitive values, matched case- and separator-insensitively.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

/// Words that make a key sensitive wherever they occur in it (`dbPassword`, `clientSecret`).
const WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "credential",
    "authorization",
    "cookie",
];

/// Two-part words; each is matched with every separator in [`SEPARATORS`] between the parts,
/// so `apiKey`, `api_key`, `API-KEY` and `api.key` all match.
const COMPOUNDS: &[(&str, &str)] = &[
    ("api", "key"),
    ("private", "key"),
    ("access", "key"),
    ("account", "key"),
    ("session", "key"),
    ("signing", "key"),
    ("encryption", "key"),
    ("connection", "string"),
];

const SEPARATORS: &[&str] = &["", "_", "-", ".", " "];

/// Endings that make a key sensitive (`accessToken`, `refresh_token`, `dbPwd`).
const SUFFIXES: &[&str] = &["token", "pwd"];

/// Whole keys that are sensitive although too short to match anywhere inside others.
const EXACT: &[&str] = &["auth", "pat"];

/// The sensitive-key matcher: one case-insensitive automaton pass plus two suffix checks.
#[derive(Clone, Debug)]
pub(super) struct SensitiveKeys {
    contains: AhoCorasick,
}

impl SensitiveKeys {
    pub(super) fn new() -> Result<Self, aho_corasick::BuildError> {
        let mut patterns: Vec<String> = WORDS.iter().map(|w| (*w).to_owned()).collect();
        for (first, second) in COMPOUNDS {
            for separator in SEPARATORS {
                patterns.push(format!("{first}{separator}{second}"));
            }
        }
        let contains = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&patterns)?;
        Ok(Self { contains })
    }

    pub(super) fn is_sensitive(&self, key: &str) -> bool {
        let trimmed = key.trim_end_matches(['_', '-', '.', ' ']).as_bytes();
        SUFFIXES
            .iter()
            .any(|suffix| ends_with_ignore_case(trimmed, suffix.as_bytes()))
            || EXACT
                .iter()
                .any(|exact| trimmed.eq_ignore_ascii_case(exact.as_bytes()))
            || self.contains.is_match(key)
    }
}

fn ends_with_ignore_case(text: &[u8], suffix: &[u8]) -> bool {
    text.len() >= suffix.len() && text[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_across_case_and_separators() {
        let keys = SensitiveKeys::new().unwrap();
        for key in [
            "password",
            "Password",
            "dbPassword",
            "api_key",
            "API-KEY",
            "ApiKey",
            "x-api-key",
            "clientSecret",
            "client_secret",
            "accessToken",
            "refresh_token",
            "TOKEN",
            "connectionString",
            "ConnectionStrings",
            "Authorization",
            "privateKey",
            "awsSecretAccessKey",
            "accessKeyId",
            "credentials",
            "Set-Cookie",
            "auth",
        ] {
            assert!(keys.is_sensitive(key), "{key} should be sensitive");
        }
    }

    #[test]
    fn ordinary_keys_are_not_sensitive() {
        let keys = SensitiveKeys::new().unwrap();
        for key in [
            "id",
            "name",
            "definitionId",
            "tokens",
            "inputTokens",
            "tokenCount",
            "author",
            "keyValue",
            "publicKey",
            "status",
            "path",
            "url",
        ] {
            assert!(!keys.is_sensitive(key), "{key} should not be sensitive");
        }
    }
}
