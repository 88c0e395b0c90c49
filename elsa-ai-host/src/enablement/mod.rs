//! Tool enablement: the default policy, per-tenant decisions (globally or for one agent),
//! the in-memory decision store, how a registry keeps them between changes and the audited
//! service administrators change them through.

mod cache;
mod policy;
mod service;
mod store;

pub(crate) use cache::EnablementCache;
pub use cache::EnablementCaching;
pub use policy::{EnablementDecisions, EnablementPolicy};
pub use service::{EnablementChange, ToolEnablementService};
pub use store::InMemoryToolEnablementStore;
