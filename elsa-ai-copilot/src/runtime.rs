//! The Copilot CLI process: started on first use, shared by every session, restarted when
//! it died, stopped on shutdown.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::AiError;
use github_copilot_sdk::{
    CliProgram, Client, ClientInfo, ClientMode, ClientOptions, Error as SdkError, ErrorKind,
    ProtocolErrorKind, SessionErrorKind, Transport,
};
use tokio::sync::Mutex;

use crate::config::{ResolvedConfig, Secret, locate_cli, search_path};
use crate::logging::LogRedaction;

/// How long a liveness probe of a running CLI may take.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a graceful stop may take before the process is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// What the CLI inherits of weaver's environment, which also holds API keys, the JWT secret
/// and database URLs: programs are found through `PATH`, and the locale, the time zone and
/// the temporary directory stay the host's. Everything else is removed.
const INHERITED: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];

/// Variables the SDK sets on the CLI process for this runtime's options before it applies
/// removals (the private home, no system keychain, the GitHub token when one is
/// configured), so they are never removed. The SDK's `COPILOT_TELEMETRY_DISABLED` is set
/// after the removals.
const SET_BY_SDK: &[&str] = &["COPILOT_HOME", "COPILOT_DISABLE_KEYTAR"];
/// The variable the SDK hands a GitHub token to the CLI in (`--auth-token-env`).
const SDK_TOKEN_VARIABLE: &str = "COPILOT_SDK_AUTH_TOKEN";

/// Owns at most one CLI process at a time and the private directories every CLI process of
/// this provider uses: `COPILOT_HOME`, also the CLI's `HOME` (session state, which survives
/// a restart of the CLI) and an empty working directory (so that nothing around the host
/// leaks into a prompt).
pub(crate) struct CliRuntime {
    cli_path: Option<PathBuf>,
    github_token: Option<Secret>,
    /// Variables that held secrets: never inherited, even when [`INHERITED`] names them.
    secret_variables: Vec<String>,
    home: tempfile::TempDir,
    log: Arc<LogRedaction>,
    state: Mutex<State>,
}

impl std::fmt::Debug for CliRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliRuntime")
            .field("cli_path", &self.cli_path)
            .field("home", &self.home.path())
            .finish_non_exhaustive()
    }
}

enum State {
    Idle,
    Running(Client),
    ShutDown,
}

impl CliRuntime {
    /// A runtime for `config`; nothing starts until a client is asked for.
    pub(crate) fn new(config: &ResolvedConfig, log: Arc<LogRedaction>) -> std::io::Result<Self> {
        let home = tempfile::Builder::new()
            .prefix("weaver-copilot-")
            .tempdir()?;
        std::fs::create_dir(home.path().join("workspace"))?;
        Ok(Self {
            cli_path: config.cli_path.clone(),
            github_token: config.github_token.clone(),
            secret_variables: config.secret_variables.clone(),
            home,
            log,
            state: Mutex::new(State::Idle),
        })
    }

    /// The empty directory sessions run in.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.home.path().join("workspace")
    }

    /// A connected client: the running CLI if it still answers, else a freshly started one.
    pub(crate) async fn client(&self) -> Result<Client, AiError> {
        let mut state = self.state.lock().await;
        match &*state {
            State::ShutDown => return Err(shut_down()),
            State::Running(client) => {
                let alive = tokio::time::timeout(PING_TIMEOUT, client.ping(None)).await;
                if matches!(alive, Ok(Ok(_))) {
                    return Ok(client.clone());
                }
                tracing::warn!(pid = ?client.pid(), "the Copilot CLI stopped answering; restarting it");
                client.force_stop();
            }
            State::Idle => {}
        }
        *state = State::Idle;
        let client = self.start().await?;
        *state = State::Running(client.clone());
        Ok(client)
    }

    /// The running client, if there is one; never starts a CLI.
    pub(crate) async fn running(&self) -> Option<Client> {
        match &*self.state.lock().await {
            State::Running(client) => Some(client.clone()),
            State::Idle | State::ShutDown => None,
        }
    }

    async fn start(&self) -> Result<Client, AiError> {
        let program = locate_cli(self.cli_path.as_deref(), |name| std::env::var(name).ok())?;
        let launcher = Launcher::for_cli(&program);
        let client = Client::start(self.options(&launcher))
            .await
            .map_err(|error| start_error(&program, &error))?;
        tracing::info!(
            pid = ?client.pid(),
            program = %program.display(),
            killed_with_host = launcher.kills_with_parent,
            "Copilot CLI started"
        );
        Ok(client)
    }

    fn options(&self, launcher: &Launcher) -> ClientOptions {
        // Read now, just before the spawn: the CLI inherits the environment as it is then.
        // Nothing in Weaver changes its environment later (`set_var` needs `unsafe`, which
        // the workspace forbids), so no variable appears in between.
        let present = std::env::vars_os().map(|(name, _)| name);
        let mut kept: Vec<&str> = INHERITED
            .iter()
            .copied()
            .filter(|name| !self.secret_variables.iter().any(|secret| secret == name))
            .chain(SET_BY_SDK.iter().copied())
            .chain(["HOME"])
            .collect();
        if self.github_token.is_some() {
            kept.push(SDK_TOKEN_VARIABLE);
        }
        let mut options = ClientOptions::default()
            .with_program(CliProgram::Path(launcher.program.clone()))
            .with_prefix_args(launcher.prefix_args.clone())
            .with_env([("HOME", self.home.path())])
            .with_env_remove(removed_variables(present, &kept))
            .with_transport(Transport::Stdio)
            .with_mode(ClientMode::Empty)
            .with_base_directory(self.home.path())
            .with_cwd(self.workspace())
            .with_use_logged_in_user(false)
            .with_disable_client_telemetry(true)
            .with_client_info(
                ClientInfo::new()
                    .with_application_name("weaver")
                    .with_application_version(env!("CARGO_PKG_VERSION")),
            );
        if let Some(token) = &self.github_token {
            options = options.with_github_token(token.expose().to_owned());
        }
        options
    }

    /// The process id of the running CLI, if one runs.
    pub(crate) async fn pid(&self) -> Option<u32> {
        self.running().await.and_then(|client| client.pid())
    }

    /// Stops the CLI (gracefully, else by killing it) and refuses to start another.
    pub(crate) async fn shutdown(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::ShutDown);
        if let State::Running(client) = previous {
            let pid = client.pid();
            match tokio::time::timeout(STOP_TIMEOUT, client.stop()).await {
                Ok(Ok(())) => tracing::info!(?pid, "Copilot CLI stopped"),
                Ok(Err(errors)) => {
                    let errors = self.log.error(&errors);
                    tracing::warn!(?pid, %errors, "Copilot CLI stopped with errors");
                    client.force_stop();
                }
                Err(_) => {
                    tracing::warn!(?pid, "Copilot CLI did not stop in time; killing it");
                    client.force_stop();
                }
            }
        }
    }
}

/// The program the SDK starts and the arguments before the CLI's own.
struct Launcher {
    program: PathBuf,
    prefix_args: Vec<OsString>,
    /// Whether the kernel kills the CLI when weaver dies.
    kills_with_parent: bool,
}

impl Launcher {
    /// On Linux, the CLI runs under util-linux `setpriv --pdeathsig KILL`, which sets the
    /// parent-death signal and then execs the CLI (same process, so the SDK still owns the
    /// CLI itself): when weaver dies, even by `kill -9`, which runs no destructor, the
    /// kernel kills the CLI. Weaver cannot call `prctl` itself without `unsafe`. The signal
    /// fires when the *thread* that spawned the CLI exits; the SDK spawns it from the task
    /// that starts the client, on a runtime worker thread, which lives as long as the
    /// runtime (nothing here moves that work to the blocking pool, whose threads exit when
    /// idle). Without `setpriv` the CLI is started directly and still exits when its stdin
    /// closes, which the kernel does when weaver dies.
    fn for_cli(cli: &Path) -> Self {
        let setpriv = cfg!(target_os = "linux")
            .then(|| search_path("setpriv", std::env::var("PATH").ok().as_deref()))
            .flatten();
        match setpriv {
            Some(setpriv) => Self {
                program: setpriv,
                prefix_args: vec![
                    "--pdeathsig".into(),
                    "KILL".into(),
                    "--".into(),
                    cli.as_os_str().to_owned(),
                ],
                kills_with_parent: true,
            },
            None => Self {
                program: cli.to_path_buf(),
                prefix_args: Vec::new(),
                kills_with_parent: false,
            },
        }
    }
}

/// The variables of `present` the CLI must not inherit: all but those `kept` names.
fn removed_variables(present: impl Iterator<Item = OsString>, kept: &[&str]) -> Vec<OsString> {
    present
        .filter(|name| !kept.iter().any(|kept| name == kept))
        .collect()
}

fn shut_down() -> AiError {
    AiError::unavailable(
        "provider_shut_down",
        "the Copilot provider has been shut down",
    )
}

/// Why the CLI could not be started: a CLI speaking another protocol version is
/// incompatible, anything else (missing, not executable, crashing) unavailable. Both 503.
fn start_error(program: &Path, error: &SdkError) -> AiError {
    let code = match error.kind() {
        ErrorKind::Protocol(
            ProtocolErrorKind::VersionMismatch { .. }
            | ProtocolErrorKind::InvalidProtocolVersion { .. }
            | ProtocolErrorKind::VersionChanged { .. },
        ) => "copilot_cli_incompatible",
        ErrorKind::InvalidConfig => "provider_misconfigured",
        _ => "copilot_cli_unavailable",
    };
    AiError::unavailable(
        code,
        format!(
            "the Copilot CLI at {} could not be started: {error}",
            program.display()
        ),
    )
}

/// The CLI went away (it died, or its pipes closed) while `context` was under way.
pub(crate) fn runtime_lost(context: &str) -> AiError {
    AiError::unavailable(
        "provider_unavailable",
        format!("{context}: the connection to the Copilot CLI was lost"),
    )
}

/// What an SDK failure during a session operation means for the host.
pub(crate) fn sdk_error(context: &str, error: &SdkError) -> AiError {
    match error.kind() {
        ErrorKind::Session(SessionErrorKind::NotFound(_)) => AiError::NotFound {
            code: "provider_session_not_found".into(),
            message: format!("{context}: the Copilot session no longer exists"),
        },
        ErrorKind::InvalidConfig => {
            AiError::unavailable("provider_misconfigured", format!("{context}: {error}"))
        }
        _ if error.is_transport_failure() => runtime_lost(context),
        _ => AiError::unavailable("copilot_runtime_error", format!("{context}: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_errors_map_to_typed_errors() {
        let missing = SdkError::from(ErrorKind::Session(SessionErrorKind::NotFound("s".into())));
        let error = sdk_error("resuming", &missing);
        assert_eq!(
            (error.status(), error.code()),
            (404, "provider_session_not_found")
        );
        let config = SdkError::from(ErrorKind::InvalidConfig);
        assert_eq!(sdk_error("x", &config).code(), "provider_misconfigured");
        let io = SdkError::from(ErrorKind::Io);
        let lost = sdk_error("x", &io);
        assert_eq!((lost.status(), lost.code()), (503, "provider_unavailable"));
        let rpc = SdkError::from(ErrorKind::Rpc { code: -32000 });
        assert_eq!(sdk_error("x", &rpc).status(), 503);
    }

    #[test]
    fn a_cli_of_another_protocol_version_is_incompatible() {
        let mismatch = SdkError::from(ErrorKind::Protocol(ProtocolErrorKind::VersionMismatch {
            server: 1,
            min: 3,
            max: 3,
        }));
        let error = start_error(Path::new("/opt/copilot"), &mismatch);
        assert_eq!(
            (error.status(), error.code()),
            (503, "copilot_cli_incompatible")
        );
        assert!(error.message().contains("/opt/copilot"));
        let crashed = SdkError::from(ErrorKind::Protocol(ProtocolErrorKind::CliStartupFailed));
        assert_eq!(
            start_error(Path::new("c"), &crashed).code(),
            "copilot_cli_unavailable"
        );
    }

    #[test]
    fn the_cli_inherits_only_the_kept_variables() {
        let present = [
            "PATH",
            "OPENAI_API_KEY",
            "WEAVER_JWT_SECRET",
            "HOME",
            "LANG",
        ]
        .map(OsString::from);
        assert_eq!(
            removed_variables(present.into_iter(), &["PATH", "LANG", "HOME"]),
            ["OPENAI_API_KEY", "WEAVER_JWT_SECRET"].map(OsString::from)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn on_linux_the_cli_runs_under_a_parent_death_signal() {
        let launcher = Launcher::for_cli(Path::new("/opt/copilot"));
        assert!(
            launcher.kills_with_parent,
            "setpriv (util-linux) is installed"
        );
        assert!(launcher.program.ends_with("setpriv"));
        assert_eq!(
            launcher.prefix_args,
            ["--pdeathsig", "KILL", "--", "/opt/copilot"].map(OsString::from)
        );
    }

    #[tokio::test]
    async fn a_missing_cli_is_unavailable_and_a_shut_down_runtime_starts_nothing() {
        let config = crate::config::CopilotProviderConfig {
            cli_path: Some(PathBuf::from("/does/not/exist/copilot")),
            ..crate::config::CopilotProviderConfig::openai_compatible("http://127.0.0.1:1/v1", "m")
        };
        let runtime = CliRuntime::new(&config.resolve(|_| None).unwrap(), Arc::default()).unwrap();
        let error = runtime.client().await.unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (503, "copilot_cli_not_found")
        );
        assert!(runtime.running().await.is_none());
        runtime.shutdown().await;
        assert_eq!(
            runtime.client().await.unwrap_err().code(),
            "provider_shut_down"
        );
    }
}
