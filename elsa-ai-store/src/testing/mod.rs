//! Test helpers for the stores (feature `testing`): this crate's tests and the benches use
//! them; production builds never enable them.
//!
//! [`TempSqlite`] is a database file in a fresh temporary folder. With the `postgres`
//! feature, [`postgres::TestDatabase`] is a fresh database on a real PostgreSQL server: the
//! one `WEAVER_TEST_POSTGRES_URL` names, or a throwaway server started from the installed
//! PostgreSQL binaries. There is no silent skip: without either, the helper panics saying so.

#[cfg(feature = "postgres")]
pub mod postgres;

use std::path::{Path, PathBuf};

/// A SQLite database path in a temporary folder that is deleted when this value is dropped.
#[derive(Debug)]
pub struct TempSqlite {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempSqlite {
    /// A path to a database file that does not exist yet.
    ///
    /// # Panics
    ///
    /// When no temporary folder can be created.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("weaver-sqlite-")
            .tempdir()
            .expect("a temporary folder");
        let path = dir.path().join("weaver.db");
        Self { dir, path }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder holding the file (and its WAL).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Default for TempSqlite {
    fn default() -> Self {
        Self::new()
    }
}
