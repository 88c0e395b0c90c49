//! The Copilot CLI process: started on first use, shared by every session, restarted when it
//! died, stopped on shutdown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use elsa_ai_abstractions::AiError;
use github_copilot_sdk::{
    Client, ClientInfo, ClientMode, ClientOptions, CliProgram, Error as SdkError, ErrorKind,
    SessionErrorKind, Transport,
};
use tokio::sync::Mutex;

use crate::config::{ResolvedConfig, locate_cli};

/// How long a liveness probe of a running CLI may take.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a graceful stop may take before the process is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// Owns at most one CLI process at a time and the private directories every CLI process of
/// this provider uses: `COPILOT_HOME` (session state, which survives a restart of the CLI)
/// and an empty working directory (so no repository around the host leaks into a prompt).
pub(crate) struct CliRuntime {
    settings: RuntimeSettings,
    home: tempfile::TempDir,
    state: Mutex<State>,
}

/// What starting a CLI needs, read once from the configuration.
#[derive(Clone, Debug)]
pub(crate) struct RuntimeSettings {
    pub cli_path: Option<PathBuf>,
    /// A GitHub token for hosted models, handed to the CLI process only.
    pub github_token: Option<String>,
    /// Variables the CLI process must not inherit (the ones secrets were read from).
    pub env_remove: Vec<String>,
}

impl RuntimeSettings {
    pub(crate) fn from_config(config: &ResolvedConfig) -> Self {
        Self {
            cli_path: config.cli_path.clone(),
            github_token: config.github_token.as_ref().map(|s| s.expose().to_owned()),
            env_remove: config.secret_variables.clone(),
        }
    }
}

impl std::fmt::Debug for CliRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliRuntime")
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
    pub(crate) fn new(settings: RuntimeSettings) -> std::io::Result<Self> {
        let home = tempfile::Builder::new().prefix("weaver-copilot-").tempdir()?;
        std::fs::create_dir(home.path().join("workspace"))?;
        Ok(Self {
            settings,
            home,
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
            State::ShutDown => {
                return Err(AiError::unavailable(
                    "provider_shut_down",
                    "the Copilot provider has been shut down",
                ));
            }
            State::Running(client) => {
                if matches!(tokio::time::timeout(PING_TIMEOUT, client.ping(None)).await, Ok(Ok(_))) {
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

    async fn start(&self) -> Result<Client, AiError> {
        let program = locate_cli(self.settings.cli_path.as_deref(), |name| std::env::var(name).ok())?;
        let client = Client::start(self.options(&program)).await.map_err(|error| start_error(&program, &error))?;
        tracing::info!(pid = ?client.pid(), program = %program.display(), "Copilot CLI started");
        Ok(client)
    }

    fn options(&self, program: &Path) -> ClientOptions {
        let mut options = ClientOptions::default()
            .with_program(CliProgram::Path(program.to_path_buf()))
            .with_transport(Transport::Stdio)
            .with_mode(ClientMode::Empty)
            .with_base_directory(self.home.path())
            .with_cwd(self.workspace())
            .with_use_logged_in_user(false)
            .with_disable_client_telemetry(true)
            .with_env_remove(&self.settings.env_remove)
            .with_client_info(
                ClientInfo::new()
                    .with_application_name("weaver")
                    .with_application_version(env!("CARGO_PKG_VERSION")),
            );
        if let Some(token) = &self.settings.github_token {
            options = options.with_github_token(token.clone());
        }
        options
    }

    /// The process id of the running CLI, if one runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        match &*self.state.try_lock().ok()? {
            State::Running(client) => client.pid(),
            State::Idle | State::ShutDown => None,
        }
    }

    /// Stops the CLI (gracefully, else by killing it) and refuses to start another.
    pub(crate) async fn shutdown(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::ShutDown);
        if let State::Running(client) = previous {
            let pid = client.pid();
            match tokio::time::timeout(STOP_TIMEOUT, client.stop()).await {
                Ok(Ok(())) => tracing::info!(?pid, "Copilot CLI stopped"),
                Ok(Err(errors)) => {
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

fn start_error(program: &Path, error: &SdkError) -> AiError {
    let code = match error.kind() {
        ErrorKind::Protocol(_) => "copilot_cli_incompatible",
        _ => "copilot_cli_unavailable",
    };
    AiError::unavailable(
        code,
        format!("the Copilot CLI at {} could not be started: {error}", program.display()),
    )
}

/// What an SDK failure during a turn means for the host.
pub(crate) fn sdk_error(context: &str, error: &SdkError) -> AiError {
    match error.kind() {
        ErrorKind::Session(SessionErrorKind::NotFound(_)) => {
            AiError::not_found(format!("Copilot session ({context})"))
        }
        ErrorKind::InvalidConfig => {
            AiError::unavailable("provider_misconfigured", format!("{context}: {error}"))
        }
        _ if error.is_transport_failure() => AiError::unavailable(
            "copilot_runtime_lost",
            format!("{context}: the connection to the Copilot CLI was lost"),
        ),
        _ => AiError::unavailable("copilot_runtime_error", format!("{context}: {error}")),
    }
}
