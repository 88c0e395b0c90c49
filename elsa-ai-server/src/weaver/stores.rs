//! The stores of the AI platform: the database `[store]` configures (SQLite, PostgreSQL or
//! memory), or the host's own.

use std::path::PathBuf;
use std::sync::Arc;

use elsa_ai_abstractions::{
    AiAuditLog, AiAuditSink, AiConversationStore, AiProposalStore, AiStreamJournal,
    AiToolEnablementStore, AiTurnClaims,
};
use elsa_ai_host::{
    EnablementCaching, InMemoryAuditLog, InMemoryConversationStore, InMemoryProposalStore,
    InMemoryStreamJournal, InMemoryToolEnablementStore,
};
use elsa_ai_store::{PostgresStore, SqliteStore};

use super::{StartupError, invalid};
use crate::config::{DEFAULT_SQLITE_FILE, StoreConfig};
use crate::views::PersistenceView;

/// The stores a host hands [`WeaverBuilder::stores`](crate::WeaverBuilder::stores): one
/// implementation of each storage contract (one type may implement them all, see
/// [`WeaverStores::of`]).
#[derive(Clone)]
pub struct WeaverStores {
    /// Proposals.
    pub proposals: Arc<dyn AiProposalStore>,
    /// Where audit records are written.
    pub audit: Arc<dyn AiAuditSink>,
    /// Where the audit trail is read (`GET /ai/audit`).
    pub audit_log: Arc<dyn AiAuditLog>,
    /// Conversations and their messages.
    pub conversations: Arc<dyn AiConversationStore>,
    /// The stream journal resumed streams read.
    pub journal: Arc<dyn AiStreamJournal>,
    /// Administrators' enablement decisions.
    pub enablement: Arc<dyn AiToolEnablementStore>,
    /// Turn claims shared by several replicas (and a restart); `None` claims turns in this
    /// process only.
    pub turn_claims: Option<Arc<dyn AiTurnClaims>>,
    /// What `/ai/capabilities` reports as the store (`persistence.store`).
    pub name: String,
    /// Whether what the stores hold survives a restart (`persistence.durable`).
    pub durable: bool,
}

impl WeaverStores {
    /// Every store from one implementation of all the contracts, reported as `name`.
    pub fn of<S>(store: Arc<S>, name: impl Into<String>, durable: bool) -> Self
    where
        S: AiProposalStore
            + AiAuditSink
            + AiAuditLog
            + AiConversationStore
            + AiStreamJournal
            + AiToolEnablementStore
            + 'static,
    {
        Self {
            proposals: store.clone(),
            audit: store.clone(),
            audit_log: store.clone(),
            conversations: store.clone(),
            journal: store.clone(),
            enablement: store,
            turn_claims: None,
            name: name.into(),
            durable,
        }
    }
}

impl std::fmt::Debug for WeaverStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeaverStores")
            .field("name", &self.name)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

/// How long a replica on PostgreSQL keeps enablement decisions should another replica's
/// announcement of a change be lost with its listening connection (the loss itself makes it
/// forget them all).
const ENABLEMENT_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(10);

/// The stores of the AI platform, behind their contracts.
pub(super) struct Stores {
    pub(super) proposals: Arc<dyn AiProposalStore>,
    pub(super) audit: Arc<dyn AiAuditSink>,
    pub(super) audit_log: Arc<dyn AiAuditLog>,
    pub(super) conversations: Arc<dyn AiConversationStore>,
    pub(super) journal: Arc<dyn AiStreamJournal>,
    pub(super) enablement: Arc<dyn AiToolEnablementStore>,
    /// How the registry keeps enablement decisions between changes: as long as no process
    /// but this one changes them unannounced.
    pub(super) enablement_caching: EnablementCaching,
    /// Turn claims shared with other replicas and restarts (the durable stores).
    pub(super) claims: Option<Arc<dyn AiTurnClaims>>,
    pub(super) backend: StoreBackend,
    pub(super) view: PersistenceView,
}

/// The database behind the stores, for flushing and closing it.
#[derive(Clone)]
pub(super) enum StoreBackend {
    Memory,
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl StoreBackend {
    /// Writes every accepted audit record and closes the database.
    pub(super) async fn close(&self) {
        match self {
            Self::Memory => {}
            Self::Sqlite(store) => store.close().await,
            Self::Postgres(store) => store.close().await,
        }
    }
}

impl Stores {
    /// Opens the store `[store]` configures: SQLite (`weaver.db` in the working directory
    /// when nothing is configured), PostgreSQL, or memory.
    pub(super) async fn open(
        config: &StoreConfig,
        env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
        retention_days: i64,
        report: &mut Vec<String>,
    ) -> Result<Self, StartupError> {
        let chosen = [
            config.sqlite.is_some(),
            config.postgres.is_some(),
            config.postgres_env.is_some(),
            config.memory,
        ];
        if chosen.iter().filter(|c| **c).count() > 1 {
            return Err(invalid(
                "[store] takes one of sqlite, postgres, postgres_env or memory".into(),
            ));
        }
        if config.memory {
            report.push("store: in memory (nothing survives a restart)".into());
            return Ok(Self::memory(retention_days));
        }
        let postgres = match (&config.postgres, &config.postgres_env) {
            (Some(url), _) => Some(url.clone()),
            (None, Some(variable)) => {
                Some(env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
                    invalid(format!(
                        "store.postgres_env names {variable}, which is not set"
                    ))
                })?)
            }
            (None, None) => None,
        };
        if let Some(url) = postgres {
            let store = Arc::new(
                PostgresStore::connect(&url)
                    .await
                    .map_err(|source| StartupError::Store { source, at: None })?,
            );
            report.push("store: PostgreSQL".into());
            return Ok(Self::durable(
                store.clone(),
                StoreBackend::Postgres(store),
                "postgres",
                retention_days,
            ));
        }
        let path = config
            .sqlite
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SQLITE_FILE));
        let store =
            Arc::new(
                SqliteStore::open(&path)
                    .await
                    .map_err(|source| StartupError::Store {
                        source,
                        at: Some(path.clone()),
                    })?,
            );
        report.push(format!("store: SQLite file {}", path.display()));
        Ok(Self::durable(
            store.clone(),
            StoreBackend::Sqlite(store),
            "sqlite",
            retention_days,
        ))
    }

    fn durable<S>(store: Arc<S>, backend: StoreBackend, name: &str, retention_days: i64) -> Self
    where
        S: AiProposalStore
            + AiAuditSink
            + AiAuditLog
            + AiConversationStore
            + AiStreamJournal
            + AiToolEnablementStore
            + AiTurnClaims
            + 'static,
    {
        Self {
            proposals: store.clone(),
            audit: store.clone(),
            audit_log: store.clone(),
            conversations: store.clone(),
            journal: store.clone(),
            claims: Some(store.clone()),
            enablement: store,
            enablement_caching: match backend {
                // Every replica hears the others' changes (`JournalFeed::EnablementChanged`).
                StoreBackend::Postgres(_) => EnablementCaching::PerChange {
                    max_age: Some(ENABLEMENT_MAX_AGE),
                },
                // Processes sharing the file change it without telling each other.
                StoreBackend::Sqlite(_) | StoreBackend::Memory => EnablementCaching::Off,
            },
            backend,
            view: PersistenceView {
                store: name.into(),
                durable: true,
                retention_days,
            },
        }
    }

    /// The host's stores; the host closes them.
    pub(super) fn host(
        stores: WeaverStores,
        retention_days: i64,
        report: &mut Vec<String>,
    ) -> Self {
        report.push(format!("store: the host's ({})", stores.name));
        Self {
            proposals: stores.proposals,
            audit: stores.audit,
            audit_log: stores.audit_log,
            conversations: stores.conversations,
            journal: stores.journal,
            enablement: stores.enablement,
            // Who else writes a host's store is the host's to know.
            enablement_caching: EnablementCaching::Off,
            claims: stores.turn_claims,
            backend: StoreBackend::Memory,
            view: PersistenceView {
                store: stores.name,
                durable: stores.durable,
                retention_days,
            },
        }
    }

    pub(super) fn memory(retention_days: i64) -> Self {
        let audit = Arc::new(InMemoryAuditLog::new());
        let journal = Arc::new(InMemoryStreamJournal::new());
        Self {
            proposals: Arc::new(InMemoryProposalStore::new()),
            audit: audit.clone(),
            audit_log: audit,
            conversations: Arc::new(InMemoryConversationStore::with_journal(journal.clone())),
            journal,
            enablement: Arc::new(InMemoryToolEnablementStore::new()),
            enablement_caching: EnablementCaching::PerChange { max_age: None },
            claims: None,
            backend: StoreBackend::Memory,
            view: PersistenceView {
                store: "memory".into(),
                durable: false,
                retention_days,
            },
        }
    }
}
