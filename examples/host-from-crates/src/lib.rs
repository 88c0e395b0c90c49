//! Acme's Weaver host: Weaver's API (`elsa-ai-server`) served with Acme's own plug-ins.
//!
//! - proposals in a JSON-lines file ([`JsonlProposalStore`]) and the audit trail in another
//!   ([`JsonlAuditSink`]), both in the data folder; conversations, stream journals and tool
//!   enablement stay in memory (`elsa-ai-host`'s stores);
//! - a rule-based provider ([`OrderDeskProvider`]);
//! - Acme's tools from the `acme-tools` crate, registered by linking it, and its `order-desk`
//!   agent;
//! - the tenant `acme` with the built-in sample workflows in memory, and one API key (from
//!   the environment variable [`API_KEY_ENV`]) for `alice`, who may also read orders.

mod audit;
mod jsonl;
mod proposals;
mod provider;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use elsa_ai_host::{InMemoryConversationStore, InMemoryStreamJournal, InMemoryToolEnablementStore};
use elsa_ai_server::config::WeaverConfig;
use elsa_ai_server::{Weaver, WeaverStores};

pub use audit::JsonlAuditSink;
pub use proposals::JsonlProposalStore;
pub use provider::{OrderDeskProvider, PROVIDER_NAME};

// Linked for its tools, which register themselves; the agent is named below too.
use acme_tools as _;

/// The environment variable holding the API key of `alice`.
pub const API_KEY_ENV: &str = "ACME_HOST_API_KEY";

/// The file of the proposals, in the data folder.
pub const PROPOSALS_FILE: &str = "proposals.jsonl";

/// The file of the audit trail, in the data folder.
pub const AUDIT_FILE: &str = "audit.jsonl";

/// Any failure to start, as text.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The server's configuration: the tenant and its key (the stores, provider and tools come
/// from the host, not from here).
pub fn config(listen: SocketAddr) -> Result<WeaverConfig, Error> {
    Ok(WeaverConfig::from_toml(&format!(
        r#"
listen = "{listen}"

[[tenants]]
id = "acme"

[[auth.api_keys]]
key_env = "{API_KEY_ENV}"
actor = "alice"
tenant = "acme"
permissions = ["read:orders", "read:workflows", "read:activities", "propose:workflows",
               "apply:workflows", "admin:ai"]
"#
    ))?)
}

/// Acme's stores: proposals and audit in JSON-lines files in `data`, the rest in memory.
pub fn stores(data: &Path) -> Result<WeaverStores, Error> {
    std::fs::create_dir_all(data)?;
    let audit = Arc::new(JsonlAuditSink::open(data.join(AUDIT_FILE))?);
    let journal = Arc::new(InMemoryStreamJournal::new());
    Ok(WeaverStores {
        proposals: Arc::new(JsonlProposalStore::open(data.join(PROPOSALS_FILE))?),
        audit: audit.clone(),
        audit_log: audit,
        conversations: Arc::new(InMemoryConversationStore::with_journal(journal.clone())),
        journal,
        enablement: Arc::new(InMemoryToolEnablementStore::new()),
        turn_claims: None,
        name: "acme-jsonl".into(),
        // Conversations and enablement do not survive a restart.
        durable: false,
    })
}

/// The assembled server, listening nowhere yet.
pub async fn weaver(listen: SocketAddr, data: PathBuf) -> Result<Weaver, Error> {
    Ok(Weaver::builder(config(listen)?)
        .stores(stores(&data)?)
        .provider(Arc::new(OrderDeskProvider))
        .agent(acme_tools::order_desk_agent())
        .build()
        .await?)
}
