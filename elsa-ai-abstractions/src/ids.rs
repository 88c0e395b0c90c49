use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
        )]
        #[serde(transparent)]
        // Shared text: a turn hands the same id to its tool calls, events and audit records,
        // and a clone is a reference count, not a copy.
        pub struct $name(Arc<str>);

        impl $name {
            /// A fresh, time-ordered id (UUID v7).
            pub fn generate() -> Self {
                Self::encoded(uuid::Uuid::now_v7())
            }

            /// A fresh v7 id stamped with `at`'s millisecond, the rest random: no clock read and
            /// no process-wide counter, so ids made within one millisecond are unordered.
            pub fn generate_at(at: chrono::DateTime<chrono::Utc>) -> Self {
                let nanos = at.timestamp_nanos_opt().unwrap_or_default().max(0);
                let timestamp = uuid::Timestamp::from_unix(
                    uuid::NoContext,
                    u64::try_from(nanos / 1_000_000_000).unwrap_or_default(),
                    u32::try_from(nanos % 1_000_000_000).unwrap_or_default(),
                );
                Self::encoded(uuid::Uuid::new_v7(timestamp))
            }

            // Encoded straight into its buffer; `to_string` goes through the formatter.
            fn encoded(id: uuid::Uuid) -> Self {
                let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
                Self(Arc::from(&*id.hyphenated().encode_lower(&mut text)))
            }

            /// Wraps an existing id.
            pub fn new(id: impl Into<String>) -> Self {
                Self(Arc::from(id.into()))
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
                Self(Arc::from(value))
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

    #[test]
    fn an_id_made_at_a_time_carries_its_millisecond() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-05T17:00:00.123456Z")
            .unwrap()
            .to_utc();
        let (a, b) = (AuditEventId::generate_at(at), AuditEventId::generate_at(at));
        assert_ne!(a, b, "the random part differs");
        for id in [&a, &b] {
            let uuid = uuid::Uuid::parse_str(id.as_str()).unwrap();
            assert_eq!(uuid.get_version_num(), 7);
            let (secs, nanos) = uuid.get_timestamp().unwrap().to_unix();
            assert_eq!((secs, nanos), (1_796_490_000, 123_000_000));
        }
        let earlier = at - chrono::Duration::milliseconds(1);
        assert!(
            AuditEventId::generate_at(earlier) < a,
            "ordered across milliseconds"
        );
    }

    #[test]
    fn a_clone_shares_the_text_and_the_wire_form_is_a_plain_string() {
        let id = ConversationId::generate();
        let copy = id.clone();
        assert_eq!(id.as_str().as_ptr(), copy.as_str().as_ptr(), "not copied");
        let json = serde_json::to_value(&id).unwrap();
        assert_eq!(json, serde_json::Value::String(id.as_str().to_owned()));
        let back: ConversationId = serde_json::from_value(json).unwrap();
        assert_eq!(back, id);
        assert_eq!(ConversationId::from("c-1"), ConversationId::new("c-1"));
    }
}
