//! The status enums of instances and activity executions.
//!
//! Elsa writes enums as their names (`"Running"`) through its API and as their numeric
//! values (`0`) when a store or client serialises them without a string converter. Both
//! forms are read; names are matched without regard to case, and the two spellings Elsa
//! itself uses for cancellation (`Cancelled`, `Canceled`) are both accepted. They are
//! always written as names.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::json;

/// Declares an Elsa enum: its variants in Elsa's numeric order, the names it is read from
/// and the shared conversions.
macro_rules! elsa_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = [$($alias:literal),+] ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, in Elsa's numeric order (a value's index is its number).
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The name Elsa writes.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => stringify!($variant) ),+
                }
            }

            /// The value Elsa serialises as `number`, if there is one.
            pub fn from_number(number: i64) -> Option<Self> {
                usize::try_from(number).ok().and_then(|i| Self::ALL.get(i).copied())
            }

            /// Reads the value from its name (any case) or number in a JSON document.
            pub(crate) fn from_json(value: &Value) -> Result<Self, String> {
                match value {
                    Value::String(text) => text.parse(),
                    Value::Number(number) => number
                        .as_i64()
                        .and_then(Self::from_number)
                        .ok_or_else(|| format!("{number} is not a known {}", $what)),
                    other => Err(format!(
                        "a {} must be a string or a number, found {}",
                        $what,
                        json::kind_of(other)
                    )),
                }
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                let text = text.trim();
                $(
                    if [$($alias),+].iter().any(|alias| alias.eq_ignore_ascii_case(text)) {
                        return Ok(Self::$variant);
                    }
                )+
                Err(format!(
                    "'{text}' is not a known {} (expected one of {})",
                    $what,
                    Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
                ))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct NameOrNumber;

                impl Visitor<'_> for NameOrNumber {
                    type Value = $name;

                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} name or number", $what)
                    }

                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        v.parse().map_err(E::custom)
                    }

                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        $name::from_number(v)
                            .ok_or_else(|| E::custom(format!("{v} is not a known {}", $what)))
                    }

                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        i64::try_from(v)
                            .ok()
                            .and_then($name::from_number)
                            .ok_or_else(|| E::custom(format!("{v} is not a known {}", $what)))
                    }
                }

                deserializer.deserialize_any(NameOrNumber)
            }
        }
    };
}

elsa_enum! {
    /// The status of a workflow instance (Elsa's `WorkflowStatus`).
    WorkflowStatus, "workflow status" {
        /// Not finished yet (it may be waiting on a bookmark).
        Running = ["Running"],
        /// Finished, successfully or not (see the sub-status).
        Finished = ["Finished"],
    }
}

elsa_enum! {
    /// The sub-status of a workflow instance (Elsa's `WorkflowSubStatus`).
    WorkflowSubStatus, "workflow sub-status" {
        /// Waiting to run.
        Pending = ["Pending"],
        /// Running right now.
        Executing = ["Executing"],
        /// Waiting on a bookmark.
        Suspended = ["Suspended"],
        /// Completed.
        Finished = ["Finished"],
        /// Cancelled.
        Cancelled = ["Cancelled", "Canceled"],
        /// Failed.
        Faulted = ["Faulted"],
        /// Deleted (newer Elsa versions keep deleted instances for a while).
        Deleted = ["Deleted"],
    }
}

elsa_enum! {
    /// The status of one activity execution (Elsa's `ActivityStatus`).
    ActivityStatus, "activity status" {
        /// Scheduled, not started.
        Pending = ["Pending"],
        /// Started and not completed (it may be waiting on a bookmark).
        Running = ["Running"],
        /// Completed.
        Completed = ["Completed"],
        /// Cancelled.
        Canceled = ["Canceled", "Cancelled"],
        /// Failed.
        Faulted = ["Faulted"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_numbers_are_read() {
        assert_eq!(
            WorkflowStatus::from_json(&json!("Finished")),
            Ok(WorkflowStatus::Finished)
        );
        assert_eq!(
            WorkflowStatus::from_json(&json!(0)),
            Ok(WorkflowStatus::Running)
        );
        assert_eq!(
            WorkflowSubStatus::from_json(&json!("suspended")),
            Ok(WorkflowSubStatus::Suspended)
        );
        assert_eq!(
            WorkflowSubStatus::from_json(&json!(5)),
            Ok(WorkflowSubStatus::Faulted)
        );
        assert_eq!(
            WorkflowSubStatus::from_json(&json!("Canceled")),
            Ok(WorkflowSubStatus::Cancelled)
        );
        assert_eq!(
            ActivityStatus::from_json(&json!(2)),
            Ok(ActivityStatus::Completed)
        );
    }

    #[test]
    fn unknown_values_are_errors() {
        assert!(WorkflowStatus::from_json(&json!(2)).is_err());
        assert!(WorkflowStatus::from_json(&json!(-1)).is_err());
        assert!(WorkflowStatus::from_json(&json!(true)).is_err());
        let error = WorkflowSubStatus::from_json(&json!("Sleeping")).expect_err("unknown");
        assert!(error.contains("Suspended"), "{error}");
    }

    #[test]
    fn serde_writes_names_and_reads_both() {
        assert_eq!(
            serde_json::to_value(WorkflowSubStatus::Faulted).expect("serialise"),
            json!("Faulted")
        );
        let read: Vec<WorkflowSubStatus> =
            serde_json::from_value(json!(["Finished", 4, "faulted"])).expect("deserialise");
        assert_eq!(
            read,
            vec![
                WorkflowSubStatus::Finished,
                WorkflowSubStatus::Cancelled,
                WorkflowSubStatus::Faulted
            ]
        );
        assert!(serde_json::from_value::<WorkflowStatus>(json!(7)).is_err());
    }
}
