//! Real PostgreSQL databases for tests: one fresh database per test, so tests run in parallel.
//!
//! The server is the one [`URL_VARIABLE`] names (a role that may `CREATE DATABASE`; `.ci/run`
//! sets it up), or else a throwaway server this process starts from the installed PostgreSQL
//! binaries (on `PATH` or in Debian's `/usr/lib/postgresql/<version>/bin`): a new cluster in a
//! temporary folder, listening only on a Unix socket there, run as the `postgres` user when
//! this process is root (PostgreSQL refuses to run as root), and stopped and deleted by a
//! watchdog once this process ends. Without either, [`TestDatabase::create`] panics with
//! instructions: PostgreSQL tests fail, they never skip.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use sqlx::{AssertSqlSafe, Connection, PgConnection};

/// The environment variable naming the server tests use, for example
/// `postgres://weaver:weaver@127.0.0.1:5432/weaver_test`.
pub const URL_VARIABLE: &str = "WEAVER_TEST_POSTGRES_URL";

/// A fresh, empty database on the test server, dropped (connections and all) when this value
/// is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    url: String,
}

impl TestDatabase {
    /// Creates a database with a unique name.
    ///
    /// # Panics
    ///
    /// When no server is configured or can be started, or the server refuses.
    pub async fn create() -> Self {
        let server = server();
        let name = format!("weaver_t_{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect(&server.admin_url)
            .await
            .unwrap_or_else(|e| {
                panic!("cannot connect to the test server ({}): {e}", server.origin)
            });
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("cannot create a test database ({}): {e}", server.origin));
        let _ = admin.close().await;
        Self {
            url: with_database(&server.admin_url, &name),
            name,
        }
    }

    /// The URL of this database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of the server's administrative database (not this one), for tests that act
    /// on this database from outside, such as refusing its connections.
    pub fn admin_url(&self) -> &str {
        &server().admin_url
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let admin_url = server().admin_url.clone();
        let name = std::mem::take(&mut self.name);
        // Drop may run inside an async test: the database is dropped on a thread of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let mut admin = PgConnection::connect(&admin_url)
                    .await
                    .map_err(|e| e.to_string())?;
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut admin)
                .await
                .map_err(|e| e.to_string())?;
                admin.close().await.map_err(|e| e.to_string())
            })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("warning: could not drop a test database: {error}");
        }
    }
}

/// `url` with its database name replaced by `database` (query parameters kept).
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority..].find('/') {
        Some(slash) => &base[..authority + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

struct Server {
    admin_url: String,
    /// Where the server came from, for error messages (never the URL: it may hold a password).
    origin: String,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
    let server = SERVER.get_or_init(|| match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.trim().is_empty() => Ok(Server {
            admin_url: url.trim().to_owned(),
            origin: format!("the server {URL_VARIABLE} names"),
        }),
        _ => start_throwaway_server(),
    });
    match server {
        Ok(server) => server,
        Err(why) => panic!(
            "PostgreSQL tests need a server and none is available: {why}. Set {URL_VARIABLE} \
             to a server where the role may CREATE DATABASE (`.ci/run` does this), or install \
             PostgreSQL (Debian: `apt-get install postgresql`) so that the tests can start a \
             throwaway server."
        ),
    }
}

fn start_throwaway_server() -> Result<Server, String> {
    let bin = server_binaries()?;
    let as_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let command = |program: &Path| {
        if as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    };
    let run = |program: &Path, args: &[&str]| -> Result<String, String> {
        let output = command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        if !output.status.success() {
            return Err(format!(
                "{} failed ({}): {}",
                program.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };

    let dir = run(Path::new("mktemp"), &["-d", "/tmp/weaver-pg-XXXXXX"])?;
    let data = format!("{dir}/data");
    run(
        &bin.join("initdb"),
        &[
            "-D",
            &data,
            "-U",
            "weaver",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ],
    )?;
    let pg_ctl = bin.join("pg_ctl");
    run(
        &pg_ctl,
        &[
            "-D",
            &data,
            "-l",
            &format!("{dir}/server.log"),
            "-w",
            "-t",
            "60",
            "-o",
            &format!("-k {dir} -c listen_addresses='' -p 5432 -c max_connections=300"),
            "start",
        ],
    )?;
    // Stop the server and delete its folder once this process has ended, however it ends.
    let watchdog = format!(
        "while [ -d /proc/{pid} ]; do sleep 1; done; '{pg_ctl}' -D '{data}' -m immediate stop; \
         rm -rf '{dir}'",
        pid = std::process::id(),
        pg_ctl = pg_ctl.display(),
    );
    command(Path::new("sh"))
        .args(["-c", &watchdog])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the server's watchdog: {e}"))?;
    Ok(Server {
        admin_url: format!("postgres://weaver@localhost/postgres?host={dir}&port=5432"),
        origin: format!("a throwaway server in {dir}"),
    })
}

/// A PostgreSQL server of its own for one test that stops and restarts it (a restart under
/// load, say) without disturbing the shared test server: a new cluster in a temporary folder,
/// on a Unix socket there only, run as `postgres` when this process is root; stopped
/// (`immediate`) and deleted when dropped.
#[derive(Debug)]
pub struct PrivateServer {
    dir: String,
    data: String,
    pg_ctl: PathBuf,
}

impl PrivateServer {
    /// Creates and starts the cluster.
    pub fn start() -> Result<Self, String> {
        let bin = server_binaries()?;
        let dir = run_server_tool(Path::new("mktemp"), &["-d", "/tmp/weaver-pg-own-XXXXXX"])?;
        let data = format!("{dir}/data");
        run_server_tool(
            &bin.join("initdb"),
            &[
                "-D",
                &data,
                "-U",
                "weaver",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        let server = Self {
            dir,
            data,
            pg_ctl: bin.join("pg_ctl"),
        };
        server.pg_ctl(&["start"])?;
        Ok(server)
    }

    /// The URL of the server's `postgres` database as role `weaver` (a superuser).
    pub fn url(&self) -> String {
        format!(
            "postgres://weaver@localhost/postgres?host={}&port=5432",
            self.dir
        )
    }

    /// Stops the server (`fast`: connections are terminated) and waits until it has stopped.
    pub fn stop(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "fast", "stop"]).map(drop)
    }

    /// Starts the stopped server again and waits until it accepts connections.
    pub fn start_again(&self) -> Result<(), String> {
        self.pg_ctl(&["start"]).map(drop)
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<String, String> {
        let log = format!("{}/server.log", self.dir);
        let options = format!("-k {} -c listen_addresses='' -p 5432", self.dir);
        let mut all = vec![
            "-D", &self.data, "-l", &log, "-w", "-t", "60", "-o", &options,
        ];
        all.extend_from_slice(args);
        run_server_tool(&self.pg_ctl, &all)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs a PostgreSQL tool (as `postgres` when this process is root) and returns its output.
fn run_server_tool(program: &Path, args: &[&str]) -> Result<String, String> {
    let as_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let mut command = if as_root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    };
    let output = command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The folder holding `initdb` and `pg_ctl`: on `PATH`, or the newest Debian version folder.
fn server_binaries() -> Result<PathBuf, String> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|dir| has_server(dir))
    {
        return Ok(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            has_server(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in \
         /usr/lib/postgresql/<version>/bin"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_name_is_replaced_and_parameters_kept() {
        assert_eq!(
            with_database("postgres://u:p@127.0.0.1:5432/weaver_test", "t1"),
            "postgres://u:p@127.0.0.1:5432/t1"
        );
        assert_eq!(
            with_database(
                "postgres://weaver@localhost/postgres?host=/tmp/x&port=5432",
                "t1"
            ),
            "postgres://weaver@localhost/t1?host=/tmp/x&port=5432"
        );
        assert_eq!(
            with_database("postgres://localhost", "t1"),
            "postgres://localhost/t1"
        );
    }
}
