//! What every test needs: a fresh database on either backend, opened as often as a test
//! wants (each open is a new pool), and raw connections for what the stores never do.

use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditLog, AiAuditSink, AiConversationStore, AiProposalStore, AiStreamJournal,
    AiToolEnablementStore, AuditQuery,
};
use elsa_ai_store::testing::TempSqlite;
use elsa_ai_store::testing::postgres::TestDatabase;
use elsa_ai_store::{PostgresStore, PostgresStoreOptions, SqliteStore, SqliteStoreOptions};
use elsa_workflows::{PageRequest, TenantId};
use sqlx::{AssertSqlSafe, Connection};

/// Every storage contract at once, as both store types implement them.
pub trait Store:
    AiProposalStore
    + AiAuditSink
    + AiAuditLog
    + AiConversationStore
    + AiStreamJournal
    + AiToolEnablementStore
{
}

impl<T> Store for T where
    T: AiProposalStore
        + AiAuditSink
        + AiAuditLog
        + AiConversationStore
        + AiStreamJournal
        + AiToolEnablementStore
{
}

/// A fresh, empty database on one backend.
pub enum TestDb {
    Sqlite(TempSqlite),
    Postgres(TestDatabase),
}

impl TestDb {
    pub async fn sqlite() -> Self {
        Self::Sqlite(TempSqlite::new())
    }

    pub async fn postgres() -> Self {
        Self::Postgres(TestDatabase::create().await)
    }

    /// A new store (a new connection pool) on this database.
    pub async fn open(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(_) => Arc::new(
                self.open_sqlite(SqliteStoreOptions::new(self.location()))
                    .await,
            ),
            Self::Postgres(_) => Arc::new(
                self.open_postgres(PostgresStoreOptions::new(self.location()))
                    .await,
            ),
        }
    }

    /// A new store with its concrete type, for `close`.
    pub async fn open_concrete(&self) -> ConcreteStore {
        match self {
            Self::Sqlite(_) => ConcreteStore::Sqlite(
                self.open_sqlite(SqliteStoreOptions::new(self.location()))
                    .await,
            ),
            Self::Postgres(_) => ConcreteStore::Postgres(
                self.open_postgres(PostgresStoreOptions::new(self.location()))
                    .await,
            ),
        }
    }

    pub async fn open_sqlite(&self, options: SqliteStoreOptions) -> SqliteStore {
        SqliteStore::open_with(options)
            .await
            .expect("the SQLite store opens")
    }

    pub async fn open_postgres(&self, options: PostgresStoreOptions) -> PostgresStore {
        PostgresStore::connect_with(options)
            .await
            .expect("the PostgreSQL store connects")
    }

    /// The file path (SQLite) or URL (PostgreSQL) a store opens.
    pub fn location(&self) -> String {
        match self {
            Self::Sqlite(file) => file.path().display().to_string(),
            Self::Postgres(db) => db.url().to_owned(),
        }
    }

    /// How many migrations the backend's schema has.
    pub fn migrations(&self) -> usize {
        match self {
            Self::Sqlite(_) => sqlx::migrate!("./migrations/sqlite").iter().count(),
            Self::Postgres(_) => sqlx::migrate!("./migrations/postgres").iter().count(),
        }
    }

    /// Brings the empty database's schema to migration `version` and no further, as a release
    /// of that schema left it, so that a test can write old rows and let a store migrate them.
    pub async fn migrate_to(&self, version: i64) {
        match self {
            Self::Sqlite(file) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(file.path())
                    .create_if_missing(true);
                let mut connection = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .expect("the SQLite file opens");
                sqlx::migrate!("./migrations/sqlite")
                    .run_to(version, &mut connection)
                    .await
                    .expect("the old SQLite schema is created");
            }
            Self::Postgres(db) => {
                let mut connection = sqlx::PgConnection::connect(db.url())
                    .await
                    .expect("the PostgreSQL database connects");
                sqlx::migrate!("./migrations/postgres")
                    .run_to(version, &mut connection)
                    .await
                    .expect("the old PostgreSQL schema is created");
            }
        }
    }

    /// The number `sql` selects, read on a connection of its own, outside any store.
    pub async fn count(&self, sql: &str) -> Result<i64, sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        match self {
            Self::Sqlite(file) => {
                let mut connection =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.path().display()))
                        .await?;
                sqlx::query_scalar(sql).fetch_one(&mut connection).await
            }
            Self::Postgres(db) => {
                let mut connection = sqlx::PgConnection::connect(db.url()).await?;
                sqlx::query_scalar(sql).fetch_one(&mut connection).await
            }
        }
    }

    /// Runs `sql` on a connection of its own, outside any store.
    pub async fn execute(&self, sql: &str) -> Result<u64, sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        match self {
            Self::Sqlite(file) => {
                let mut connection =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.path().display()))
                        .await?;
                let done = sqlx::query(sql).execute(&mut connection).await?;
                Ok(done.rows_affected())
            }
            Self::Postgres(db) => {
                let mut connection = sqlx::PgConnection::connect(db.url()).await?;
                let done = sqlx::query(sql).execute(&mut connection).await?;
                Ok(done.rows_affected())
            }
        }
    }
}

/// A store of either backend, with the inherent methods of both.
#[derive(Clone, Debug)]
pub enum ConcreteStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl ConcreteStore {
    /// The same store (sharing pool and audit writer) behind the contracts.
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(store) => Arc::new(store.clone()),
            Self::Postgres(store) => Arc::new(store.clone()),
        }
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(store) => store.close().await,
            Self::Postgres(store) => store.close().await,
        }
    }
}

/// Every audit record of `tenant`, newest first, read page by page.
pub async fn audit_trail(store: &dyn AiAuditLog, tenant: &TenantId) -> Vec<AiAuditEvent> {
    let mut events = Vec::new();
    loop {
        let query = AuditQuery {
            page: PageRequest::new(events.len(), PageRequest::MAX_LIMIT),
            ..AuditQuery::default()
        };
        let page = store
            .query(tenant, &query)
            .await
            .expect("the trail is readable");
        let done = !page.has_more();
        events.extend(page.items);
        if done {
            return events;
        }
    }
}

/// A timeout long enough for a loaded CI machine, short enough that a hang fails the test.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Runs each named `async fn(TestDb)` on both backends, as `name::sqlite` and
/// `name::postgres`.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$case($crate::support::TestDb::sqlite().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$case($crate::support::TestDb::postgres().await).await;
                }
            }
        )*
    };
}
pub(crate) use on_both_backends;
