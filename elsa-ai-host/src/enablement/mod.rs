//! Tool enablement: the default policy, per-tenant decisions (globally or for one agent),
//! the in-memory decision store and the audited service administrators change them through.

mod policy;
mod service;
mod store;

pub use policy::{EnablementDecisions, EnablementPolicy};
pub use service::{EnablementChange, ToolEnablementService};
pub use store::InMemoryToolEnablementStore;
