//! Test helpers shared by this crate's suites and by other crates' tests (feature `testing`;
//! never enabled in production builds): the location of the pinned Copilot CLI, what
//! `/proc` says about the CLI process, and a capture of what is logged. The scripted model
//! server the CLI talks to in tests is `weaver_testkit::model_server`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::CLI_PATH_ENV;

/// The command that installs the pinned Copilot CLI, from the workspace root.
pub const INSTALL_CLI: &str = "npm ci --prefix tools/copilot-cli";

/// The Copilot CLI that tests drive: `COPILOT_CLI_PATH` when it is set, else the CLI pinned
/// in the workspace's `tools/copilot-cli` (its `node_modules/.bin/copilot`).
///
/// # Panics
///
/// When that CLI is not there: tests of the real CLI fail rather than skip, and the message
/// names [`INSTALL_CLI`].
pub fn pinned_cli() -> PathBuf {
    if let Some(path) = std::env::var_os(CLI_PATH_ENV).filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{CLI_PATH_ENV} names {}, which does not exist (unset it to use the pinned CLI \
             that `{INSTALL_CLI}` installs)",
            path.display()
        );
        return path;
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let cli = workspace.join("tools/copilot-cli/node_modules/.bin/copilot");
    assert!(
        cli.is_file(),
        "the pinned Copilot CLI is not installed at {}: run `{INSTALL_CLI}` in the workspace root \
         (or set {CLI_PATH_ENV} to a Copilot CLI)",
        cli.display()
    );
    cli
}

/// Whether a process runs (a zombie, dead but not yet reaped, does not count). Reads
/// `/proc`, so it answers on Linux only.
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_owned())
        })
        .is_some_and(|state| !state.starts_with('Z') && !state.starts_with('X'))
}

/// How long the process took to stop running, polling every 10 ms for at most `limit`;
/// `None` when it still runs.
pub async fn stopped_within(pid: u32, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if !running(pid) {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// Waits (up to 15 s) until the process is gone entirely, not even a zombie left.
pub async fn gone(pid: u32) -> bool {
    for _ in 0..150 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The environment a process started with, as `/proc/<pid>/environ` lists it (name, value).
///
/// # Panics
///
/// When the process does not exist or its environment cannot be read.
pub fn process_environment(pid: u32) -> Vec<(String, String)> {
    let environ = std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_else(|error| panic!("the environment of process {pid}: {error}"));
    environ
        .split(|byte| *byte == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (name, value) = entry.split_once('=').unwrap_or((&entry, ""));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The children of a process, from `/proc/<pid>/task/*/children`.
pub fn child_processes(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| {
            children
                .split_whitespace()
                .filter_map(|child| child.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Captures what this thread logs (every target, trace level and up) while it lives; on a
/// current-thread runtime, that is what every task logs.
pub struct TraceLog {
    buffer: Arc<Mutex<Vec<u8>>>,
    _installed: tracing::subscriber::DefaultGuard,
}

impl TraceLog {
    /// Starts capturing, in place of this thread's subscriber.
    pub fn capture() -> Self {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = LogWriter(buffer.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let installed = tracing::subscriber::set_default(subscriber);
        // A callsite that another test's thread registered while this subscriber was being
        // installed may keep the interest computed without it (and skip its events here):
        // computed again now that it is in place.
        tracing::callsite::rebuild_interest_cache();
        Self {
            buffer,
            _installed: installed,
        }
    }

    /// Everything logged so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock()).into_owned()
    }
}

/// Appends log output to a [`TraceLog`]'s buffer.
#[derive(Clone)]
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
