use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A fresh, time-ordered id (UUID v7).
            pub fn generate() -> Self {
                // Encoded straight into its buffer; `to_string` goes through the formatter.
                let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
                Self(
                    uuid::Uuid::now_v7()
                        .hyphenated()
                        .encode_lower(&mut text)
                        .to_owned(),
                )
            }

            /// Wraps an existing id.
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }
    };
}

string_id!(
    /// Identifies a conversation; clients use it to continue or reconnect.
    ConversationId
);
string_id!(
    /// Identifies a proposal.
    ProposalId
);
string_id!(
    /// Identifies one audit record.
    AuditEventId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_unique_and_ordered() {
        let a = ProposalId::generate();
        let b = ProposalId::generate();
        assert_ne!(a, b);
        assert!(a < b, "v7 ids sort by creation time");
    }
}
