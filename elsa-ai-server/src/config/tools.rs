//! `[tools]` / `[[tools]]` (which spelling tools are offered under, and enablement decisions
//! applied at start-up) and `[grounding]` (the grounding families and result bounds).
//!
//! TOML cannot hold a table `[tools]` and an array `[[tools]]` in one document, so both
//! shapes are read: `[tools] names = "grounding"` alone, or `[[tools]]` entries of which one
//! may be `names = "grounding"` alone:
//!
//! ```toml
//! [[tools]]
//! names = "grounding"
//!
//! [[tools]]
//! name = "workflow.proposeUpdate"
//! enabled = true
//! agents = ["workflow-author"]
//! ```

use std::fmt;

use elsa_ai_abstractions::{GroundingLimits, ToolNaming};
use elsa_ai_tools::families::GroundingFamily;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::ConfigError;

/// `[tools]` or `[[tools]]`: the spelling tools are offered under and the enablement
/// decisions the configuration makes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolsConfig {
    /// Which spelling of tool names models, MCP clients and tool lists see.
    pub names: ToolNaming,
    /// Enablement decisions, applied at start-up as audited changes by actor `system`.
    pub entries: Vec<ToolEntryConfig>,
}

/// One `[[tools]]` decision.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEntryConfig {
    /// The tool, by any name it answers to.
    pub name: String,
    /// On or off.
    pub enabled: bool,
    /// The tenants it applies to (default: every tenant served at start-up).
    pub tenants: Option<Vec<String>>,
    /// The agents it applies to (default: tenant-wide, every agent).
    pub agents: Option<Vec<String>>,
}

/// The table form, `[tools]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsTable {
    #[serde(default)]
    names: ToolNaming,
}

/// An element of the array form: a decision, or `names` alone.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsElement {
    names: Option<ToolNaming>,
    name: Option<String>,
    enabled: Option<bool>,
    tenants: Option<Vec<String>>,
    agents: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for ToolsConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shapes;

        impl<'de> Visitor<'de> for Shapes {
            type Value = ToolsConfig;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[tools] with names, or [[tools]] entries")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ToolsConfig, A::Error> {
                let table = ToolsTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ToolsConfig {
                    names: table.names,
                    entries: Vec::new(),
                })
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ToolsConfig, A::Error> {
                let mut config = ToolsConfig::default();
                let mut named = false;
                while let Some(element) = seq.next_element::<ToolsElement>()? {
                    match element {
                        ToolsElement {
                            names: Some(names),
                            name: None,
                            enabled: None,
                            tenants: None,
                            agents: None,
                        } => {
                            if named {
                                return Err(de::Error::custom(
                                    "names is given in two [[tools]] entries",
                                ));
                            }
                            named = true;
                            config.names = names;
                        }
                        ToolsElement { names: Some(_), .. } => {
                            return Err(de::Error::custom(
                                "names goes in a [[tools]] entry of its own, without name, \
                                 enabled, tenants or agents",
                            ));
                        }
                        ToolsElement {
                            name: Some(name),
                            enabled: Some(enabled),
                            tenants,
                            agents,
                            names: None,
                        } => config.entries.push(ToolEntryConfig {
                            name,
                            enabled,
                            tenants,
                            agents,
                        }),
                        _ => {
                            return Err(de::Error::custom(
                                "a [[tools]] entry needs name and enabled (or names alone)",
                            ));
                        }
                    }
                }
                Ok(config)
            }
        }

        deserializer.deserialize_any(Shapes)
    }
}

impl ToolsConfig {
    /// Checks what the shape cannot: names and lists that are not empty.
    pub fn check(&self) -> Result<(), ConfigError> {
        for entry in &self.entries {
            let invalid = |what: &str| {
                Err(ConfigError::Invalid(format!(
                    "[[tools]] '{}': {what}",
                    entry.name
                )))
            };
            if entry.name.trim().is_empty() {
                return Err(ConfigError::Invalid(
                    "[[tools]] name must not be empty".to_owned(),
                ));
            }
            if entry.tenants.as_ref().is_some_and(Vec::is_empty) {
                return invalid("tenants, when given, must not be empty");
            }
            if entry.agents.as_ref().is_some_and(Vec::is_empty) {
                return invalid("agents, when given, must not be empty");
            }
        }
        Ok(())
    }
}

/// `[grounding]`: each family can be turned off, and results are bounded.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroundingConfig {
    /// Activity discovery tools on (default true).
    pub activities: bool,
    /// Workflow definition tools on (default true).
    pub workflows: bool,
    /// Proposal tools on (default true; each still needs enabling by an administrator).
    pub proposals: bool,
    /// Runtime inspection tools on (default true).
    pub runtime: bool,
    /// The most items a list result holds (default 25).
    pub max_items: Option<usize>,
    /// The largest grounding result in bytes of compact JSON (default 32768).
    pub max_result_bytes: Option<usize>,
}

impl Default for GroundingConfig {
    fn default() -> Self {
        Self {
            activities: true,
            workflows: true,
            proposals: true,
            runtime: true,
            max_items: None,
            max_result_bytes: None,
        }
    }
}

impl GroundingConfig {
    /// Whether the configuration leaves `family` on.
    pub fn is_on(&self, family: GroundingFamily) -> bool {
        match family {
            GroundingFamily::Activities => self.activities,
            GroundingFamily::Workflows => self.workflows,
            GroundingFamily::Proposals => self.proposals,
            GroundingFamily::Runtime => self.runtime,
            // A family newer than this configuration is on, as every family is by default.
            _ => true,
        }
    }

    /// The result bounds, checked: at least one item, at most 500 (the largest page a store
    /// hands out), and at least 1 KiB.
    pub fn limits(&self) -> Result<GroundingLimits, ConfigError> {
        let defaults = GroundingLimits::default();
        let max_items = self.max_items.unwrap_or(defaults.max_items);
        let max_result_bytes = self.max_result_bytes.unwrap_or(defaults.max_result_bytes);
        if !(1..=500).contains(&max_items) {
            return Err(ConfigError::Invalid(
                "[grounding] max_items must be between 1 and 500".to_owned(),
            ));
        }
        if max_result_bytes < 1024 {
            return Err(ConfigError::Invalid(
                "[grounding] max_result_bytes must be at least 1024".to_owned(),
            ));
        }
        Ok(GroundingLimits {
            max_items,
            max_result_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WeaverConfig;

    #[test]
    fn tools_read_as_a_table_or_as_entries_with_names_in_one_of_its_own() {
        let table = WeaverConfig::from_toml("[tools]\nnames = \"grounding\"\n").unwrap();
        assert_eq!(table.tools.names, ToolNaming::Grounding);
        assert!(table.tools.entries.is_empty());

        let entries = WeaverConfig::from_toml(
            "[[tools]]\nnames = \"grounding\"\n\n[[tools]]\nname = \"workflow.proposeUpdate\"\n\
             enabled = true\nagents = [\"workflow-author\"]\n\n[[tools]]\n\
             name = \"instances.search\"\nenabled = false\ntenants = [\"acme\"]\n",
        )
        .unwrap();
        assert_eq!(entries.tools.names, ToolNaming::Grounding);
        assert_eq!(
            entries.tools.entries,
            [
                ToolEntryConfig {
                    name: "workflow.proposeUpdate".into(),
                    enabled: true,
                    tenants: None,
                    agents: Some(vec!["workflow-author".into()]),
                },
                ToolEntryConfig {
                    name: "instances.search".into(),
                    enabled: false,
                    tenants: Some(vec!["acme".into()]),
                    agents: None,
                },
            ]
        );
        assert_eq!(
            WeaverConfig::from_toml("").unwrap().tools,
            ToolsConfig::default()
        );
        assert_eq!(ToolsConfig::default().names, ToolNaming::Contract);
    }

    #[test]
    fn malformed_tools_sections_name_the_line() {
        for (text, expected) in [
            ("[tools]\nnames = \"plural\"\n", "line 2"),
            ("[tools]\nname = \"x.y\"\n", "line 2"),
            ("[[tools]]\nname = \"x.y\"\n", "needs name and enabled"),
            (
                "[[tools]]\nnames = \"grounding\"\nname = \"x.y\"\nenabled = true\n",
                "of its own",
            ),
            (
                "[[tools]]\nname = \"x.y\"\nenabled = true\ncolour = 1\n",
                "colour",
            ),
        ] {
            let error = WeaverConfig::from_toml(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let empty =
            WeaverConfig::from_toml("[[tools]]\nname = \"x.y\"\nenabled = true\nagents = []\n")
                .unwrap();
        assert!(empty.tools.check().is_err());
    }

    #[test]
    fn grounding_switches_default_on_and_limits_are_bounded() {
        let config = WeaverConfig::from_toml(
            "[grounding]\nruntime = false\nmax_items = 10\nmax_result_bytes = 8192\n",
        )
        .unwrap();
        assert!(config.grounding.is_on(GroundingFamily::Activities));
        assert!(!config.grounding.is_on(GroundingFamily::Runtime));
        assert_eq!(
            config.grounding.limits().unwrap(),
            GroundingLimits {
                max_items: 10,
                max_result_bytes: 8192
            }
        );
        assert_eq!(
            GroundingConfig::default().limits().unwrap(),
            GroundingLimits::default()
        );
        for text in ["max_items = 0", "max_items = 501", "max_result_bytes = 100"] {
            let config = WeaverConfig::from_toml(&format!("[grounding]\n{text}\n")).unwrap();
            assert!(config.grounding.limits().is_err(), "{text}");
        }
    }
}
