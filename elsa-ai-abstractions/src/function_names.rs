//! Weaver tool names as OpenAI-style function names, and back.
//!
//! Weaver names are namespaced with dots (`workflow.getDefinition`) and may be 128 bytes
//! long; the function names model APIs (and the Copilot CLI) accept match
//! `^[a-zA-Z0-9_-]{1,64}$`. A provider builds one [`ToolNames`] table per turn from the
//! tools it may offer, so that mapping back is a lookup, never a guess. Every provider uses
//! this one mapping, so a tool has the same function name whichever model calls it.

use std::collections::HashMap;

use crate::AiError;

/// The longest function name the model APIs accept.
pub const MAX_WIRE_NAME_LEN: usize = 64;

/// Why a turn's tools cannot be offered under distinct function names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolNameError {
    /// Two tools map to the same function name.
    #[error("tools '{first}' and '{second}' would both be offered as '{wire}'")]
    Collision {
        /// The tool seen first.
        first: String,
        /// The tool seen second.
        second: String,
        /// The function name they share.
        wire: String,
    },
}

impl From<ToolNameError> for AiError {
    fn from(error: ToolNameError) -> Self {
        AiError::internal("tool_name_collision", error.to_string())
    }
}

/// The function name for a Weaver tool name: every character outside `[A-Za-z0-9_-]`
/// becomes `_`; a result longer than 64 characters keeps its first 55 and appends `_` and
/// eight hex digits of a hash of the whole name.
pub fn wire_name(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mapped = if mapped.is_empty() {
        "_".to_owned()
    } else {
        mapped
    };
    if mapped.len() <= MAX_WIRE_NAME_LEN {
        return mapped;
    }
    format!(
        "{}_{:08x}",
        &mapped[..MAX_WIRE_NAME_LEN - 9],
        fnv1a(name.as_bytes())
    )
}

/// FNV-1a, 32 bits: stable across builds and platforms, unlike `std`'s hasher.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// One turn's tool names, both ways: the tools the turn offers, plus the other names the
/// agent's scope knows (so that a call the model makes to a tool it was not offered, for
/// example one it remembers from an earlier turn, can still be named to the governor).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolNames {
    /// Function name → Weaver name, for the offered tools.
    to_weaver: HashMap<String, String>,
    /// Weaver names in the order given, with their function names.
    ordered: Vec<(String, String)>,
    /// Function name → Weaver name, for names known but not offered.
    known: HashMap<String, String>,
}

impl ToolNames {
    /// The table for `names`, refusing two names that map to the same function name.
    /// A name given twice is one tool.
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, ToolNameError> {
        let mut table = Self::default();
        for name in names {
            let wire = wire_name(name);
            match table.to_weaver.get(&wire) {
                Some(existing) if existing == name => continue,
                Some(existing) => {
                    return Err(ToolNameError::Collision {
                        first: existing.clone(),
                        second: name.to_owned(),
                        wire,
                    });
                }
                None => {
                    table.to_weaver.insert(wire.clone(), name.to_owned());
                    table.ordered.push((name.to_owned(), wire));
                }
            }
        }
        Ok(table)
    }

    /// Adds names that are known but not offered; a name whose function name is taken
    /// (offered, or known already) is left out, so that lookups stay unambiguous.
    pub fn with_known<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut ambiguous = Vec::new();
        for name in names {
            let wire = wire_name(name);
            if self.to_weaver.contains_key(&wire) {
                continue;
            }
            match self.known.get(&wire) {
                Some(existing) if existing != name => ambiguous.push(wire),
                Some(_) => {}
                None => {
                    self.known.insert(wire, name.to_owned());
                }
            }
        }
        for wire in ambiguous {
            self.known.remove(&wire);
        }
        self
    }

    /// The Weaver name behind a function name, if it is one of this turn's tools.
    pub fn weaver(&self, wire: &str) -> Option<&str> {
        self.to_weaver.get(wire).map(String::as_str)
    }

    /// The Weaver name behind a function name, offered or only known.
    pub fn resolve(&self, wire: &str) -> Option<&str> {
        self.weaver(wire)
            .or_else(|| self.known.get(wire).map(String::as_str))
    }

    /// The function name of a Weaver tool of this turn.
    pub fn wire(&self, weaver: &str) -> Option<&str> {
        self.ordered
            .iter()
            .find(|(name, _)| name == weaver)
            .map(|(_, wire)| wire.as_str())
    }

    /// Whether `wire` is one of this turn's function names.
    pub fn contains_wire(&self, wire: &str) -> bool {
        self.to_weaver.contains_key(wire)
    }

    /// The function names, in the order the tools were given.
    pub fn wire_names(&self) -> impl Iterator<Item = &str> {
        self.ordered.iter().map(|(_, wire)| wire.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_valid_function_name(name: &str) -> bool {
        (1..=MAX_WIRE_NAME_LEN).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    #[test]
    fn dotted_names_map_reversibly() {
        let names = ToolNames::new([
            "workflow.getDefinition",
            "instance.get",
            "mcp.my-server.do_it",
        ])
        .unwrap();
        assert_eq!(
            names.wire("workflow.getDefinition"),
            Some("workflow_getDefinition")
        );
        assert_eq!(
            names.weaver("workflow_getDefinition"),
            Some("workflow.getDefinition")
        );
        assert_eq!(
            names.weaver("mcp_my-server_do_it"),
            Some("mcp.my-server.do_it")
        );
        assert_eq!(
            names.weaver("bash"),
            None,
            "only this turn's tools map back"
        );
        assert!(names.contains_wire("instance_get"));
        let wire: Vec<&str> = names.wire_names().collect();
        assert_eq!(
            wire,
            [
                "workflow_getDefinition",
                "instance_get",
                "mcp_my-server_do_it"
            ]
        );
    }

    #[test]
    fn every_wire_name_is_a_valid_function_name() {
        let long = format!("mcp.{}.{}", "s".repeat(60), "t".repeat(60));
        for name in [
            "workflow.getDefinition",
            "a b/c:d",
            "",
            "ünïcode.tool",
            long.as_str(),
        ] {
            let wire = wire_name(name);
            assert!(is_valid_function_name(&wire), "{name:?} -> {wire:?}");
        }
    }

    #[test]
    fn long_names_stay_distinct() {
        let prefix = "mcp.server.".to_owned() + &"x".repeat(60);
        let a = format!("{prefix}.alpha");
        let b = format!("{prefix}.beta");
        assert_eq!(wire_name(&a).len(), MAX_WIRE_NAME_LEN);
        assert_ne!(wire_name(&a), wire_name(&b));
        assert_eq!(wire_name(&a), wire_name(&a), "stable");
        let names = ToolNames::new([a.as_str(), b.as_str()]).unwrap();
        assert_eq!(names.weaver(&wire_name(&b)), Some(b.as_str()));
    }

    #[test]
    fn known_names_resolve_but_are_not_offered() {
        let names = ToolNames::new(["workflow.getDefinition"])
            .unwrap()
            .with_known(["instance.get", "workflow.getDefinition", "a.b_c", "a_b.c"]);
        assert_eq!(names.resolve("instance_get"), Some("instance.get"));
        assert!(!names.contains_wire("instance_get"), "known is not offered");
        assert_eq!(names.weaver("instance_get"), None);
        assert_eq!(
            names.resolve("workflow_getDefinition"),
            Some("workflow.getDefinition")
        );
        assert_eq!(
            names.resolve("a_b_c"),
            None,
            "two known names sharing a function name"
        );
        assert_eq!(names.resolve("bash"), None);
    }

    #[test]
    fn collisions_are_refused() {
        let error = ToolNames::new(["workflow.get_x", "workflow_get.x"]).unwrap_err();
        assert_eq!(
            error,
            ToolNameError::Collision {
                first: "workflow.get_x".into(),
                second: "workflow_get.x".into(),
                wire: "workflow_get_x".into(),
            }
        );
        let ai: AiError = error.into();
        assert_eq!((ai.status(), ai.code()), (500, "tool_name_collision"));
        assert!(
            ToolNames::new(["a.b", "a.b"]).is_ok(),
            "a repeated name is one tool"
        );
    }
}
