//! Resumable conversation streams.
//!
//! Every event of a conversation, whoever produces it (the running turn, the governor, the
//! proposal service), goes through the conversation's channel (one per tenant and
//! conversation): it is redacted, given the next gap-free sequence number, appended to the
//! [`AiStreamJournal`] under the conversation's tenant and only then broadcast to live
//! subscribers. A subscriber reads the journal from any sequence and then
//! follows the live channel, receiving each event exactly once and in order (see
//! `subscription.rs` for why there is no gap or duplicate at the seam).
//!
//! [`AiStreamJournal`]: elsa_ai_abstractions::AiStreamJournal

mod hub;
mod journal;
mod publisher;
mod subscription;

use hub::Activity;
pub(crate) use hub::{Channel, HubLimits, StreamHub, TurnSlot, turn_end_backoff};
pub use journal::InMemoryStreamJournal;
pub use publisher::ConversationEvents;
pub(crate) use subscription::StreamEnd;
