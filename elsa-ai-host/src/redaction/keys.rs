//! Which JSON object keys name sensitive values, matched case- and separator-insensitively.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};

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
pub(super) const EXACT: &[&str] = &["auth", "pat"];

/// Keys longer than this are folded on the heap instead of the stack.
const STACK_KEY: usize = 64;

/// The sensitive-key matcher: the key is ASCII-lowercased (on the stack for ordinary keys),
/// then one automaton pass and two suffix checks decide.
#[derive(Clone, Debug)]
pub(super) struct SensitiveKeys {
    contains: DFA,
    /// The unanchored start of `contains`, taken once so that a search cannot fail.
    start: StateID,
}

/// Literals one of which occurs in every key accepted for containing a word, ending with a
/// suffix or holding a compound (its second part), ASCII-lowercased: a search of a JSON
/// text for them and for [`EXACT`] finds the keys worth deciding without reading every key
/// (see `json_text`). A hit is a candidate only; [`SensitiveKeys::is_sensitive`] decides.
pub(super) fn contained_literals() -> impl Iterator<Item = &'static str> {
    WORDS
        .iter()
        .chain(SUFFIXES)
        .copied()
        .chain(COMPOUNDS.iter().map(|(_, second)| *second))
}

/// The separators trimmed from a key's end before its checks.
pub(super) const TRAILING_SEPARATORS: &[u8] = b"_-. ";

/// Whether a byte is one of [`TRAILING_SEPARATORS`].
pub(super) fn is_trailing_separator(byte: u8) -> bool {
    TRAILING_SEPARATORS.contains(&byte)
}

/// What a key is searched for anywhere in it: the words, and the compounds with each
/// separator.
fn contained_patterns() -> Vec<String> {
    let mut patterns: Vec<String> = WORDS.iter().map(|w| (*w).to_owned()).collect();
    for (first, second) in COMPOUNDS {
        for separator in SEPARATORS {
            patterns.push(format!("{first}{separator}{second}"));
        }
    }
    patterns
}

impl SensitiveKeys {
    /// The matcher, or why its automaton could not be built.
    pub(super) fn new() -> Result<Self, String> {
        let patterns = contained_patterns();
        // Keys are short: a DFA walked by hand (see `contains_word`) costs less than the
        // set-up of a search through the generic interface.
        let contains = DFA::builder()
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(&patterns)
            .map_err(|e| e.to_string())?;
        let start = contains
            .start_state(Anchored::No)
            .map_err(|e| e.to_string())?;
        Ok(Self { contains, start })
    }

    pub(super) fn is_sensitive(&self, key: &str) -> bool {
        let key = key.as_bytes();
        if key.len() <= STACK_KEY {
            let mut folded = [0u8; STACK_KEY];
            for (to, from) in folded.iter_mut().zip(key) {
                *to = from.to_ascii_lowercase();
            }
            self.is_sensitive_folded(&folded[..key.len()])
        } else {
            self.is_sensitive_folded(&key.to_ascii_lowercase())
        }
    }

    fn is_sensitive_folded(&self, folded: &[u8]) -> bool {
        let trimmed = match folded.iter().rposition(|&b| !is_trailing_separator(b)) {
            Some(last) => &folded[..=last],
            None => folded,
        };
        SUFFIXES
            .iter()
            .any(|suffix| trimmed.ends_with(suffix.as_bytes()))
            || EXACT.iter().any(|exact| trimmed == exact.as_bytes())
            || self.contains_word(folded)
    }

    /// Whether any pattern occurs in `folded`: with standard match semantics, a match state
    /// is entered as soon as one ends.
    fn contains_word(&self, folded: &[u8]) -> bool {
        let mut state = self.start;
        folded.iter().any(|&byte| {
            state = self.contains.next_state(Anchored::No, state, byte);
            self.contains.is_match(state)
        })
    }
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
    fn the_walk_by_hand_finds_what_a_generic_search_finds() {
        let keys = SensitiveKeys::new().unwrap();
        let reference = aho_corasick::AhoCorasick::new(contained_patterns()).unwrap();
        // Near misses and restarts inside a pattern exercise the failure transitions.
        for key in [
            "",
            "a",
            "apapi_key",
            "ap_i_key",
            "sesession_key",
            "sessio",
            "passwor",
            "xpassword",
            "passpassphrase",
            "secre",
            "ssecret",
            "connectionstring",
            "connection_strin",
            "accountkey",
            "acc_key",
            "definitionid",
            "version",
            "privat key",
            "private key",
            "cookies",
            "credentia",
            "authorizatio",
            "encryption.key",
            "signingkey",
        ] {
            assert_eq!(
                keys.contains_word(key.as_bytes()),
                reference.is_match(key),
                "{key:?}"
            );
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
