//! `weaver`: the Weaver server. Serves the Weaver API (REST + Server-Sent Events) over
//! Elsa workflow data, configured by a TOML file, environment variables and flags; with no
//! configuration at all it runs on embedded defaults (see `weaver --help`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{Overrides, REFERENCE, WeaverConfig};
use elsa_ai_server::log_redaction::RedactingLogWriter;
use elsa_ai_server::telemetry::Telemetry;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

// jemalloc rather than the system allocator: see "Allocator" in ARCHITECTURE.md.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Weaver: the AI copilot for Elsa Workflows, as an HTTP server.
///
/// Chat about workflows and their runs (streamed as Server-Sent Events), with tools run
/// under governance and every AI-made change turned into a proposal that a person approves
/// and the server applies. The API is described at /ai/openapi.json.
///
/// Settings come from flags, then environment variables, then the configuration file, then
/// the embedded defaults: listening on 127.0.0.1:8080, a SQLite file weaver.db in the working
/// directory, the built-in sample workflows, the scripted demo provider and, without `[auth]`,
/// a development API key (WEAVER_DEV_KEY, or generated and printed once on standard error;
/// only on a loopback address).
#[derive(Debug, Parser)]
#[command(
    name = "weaver",
    version,
    after_help = "Run `weaver --help` for the configuration file reference.",
    after_long_help = REFERENCE
)]
struct Cli {
    /// The TOML configuration file (relative paths in it are resolved against its folder).
    #[arg(
        long,
        env = "WEAVER_CONFIG",
        value_name = "PATH",
        hide_env_values = true
    )]
    config: Option<PathBuf>,
    /// The address to listen on [default: 127.0.0.1:8080].
    #[arg(
        long,
        env = "WEAVER_LISTEN",
        value_name = "ADDR",
        hide_env_values = true
    )]
    listen: Option<String>,
    /// Keep the data in this SQLite file [default: weaver.db].
    #[arg(
        long,
        env = "WEAVER_SQLITE",
        value_name = "PATH",
        hide_env_values = true,
        conflicts_with = "postgres"
    )]
    sqlite: Option<PathBuf>,
    /// Keep the data in this PostgreSQL database (several servers may share it).
    #[arg(
        long,
        env = "WEAVER_POSTGRES",
        value_name = "URL",
        hide_env_values = true
    )]
    postgres: Option<String>,
    /// The model provider: demo (scripted, no model) or copilot [default: demo].
    #[arg(
        long,
        env = "WEAVER_PROVIDER",
        value_name = "KIND",
        hide_env_values = true
    )]
    provider: Option<String>,
    /// The largest request body in bytes; larger bodies are refused with 413 [default: 262144].
    #[arg(
        long,
        env = "WEAVER_MAX_BODY_BYTES",
        value_name = "BYTES",
        hide_env_values = true
    )]
    max_body_bytes: Option<usize>,
    /// How long a turn goes on without a client, and how long running turns get at shutdown
    /// [default: 60].
    #[arg(
        long,
        env = "WEAVER_GRACE_WINDOW_SECS",
        value_name = "SECS",
        hide_env_values = true
    )]
    grace_window_secs: Option<u64>,
    /// The largest tool result handed to the model; larger results are clamped
    /// [default: 32768].
    #[arg(
        long,
        env = "WEAVER_RESULT_BUDGET_BYTES",
        value_name = "BYTES",
        hide_env_values = true
    )]
    result_budget_bytes: Option<usize>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match load_config(&cli) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("weaver: {message}");
            return ExitCode::FAILURE;
        }
    };
    // The telemetry pipeline first: the subscriber holds its layer, which gives weaver's
    // spans their trace ids (and exports them when [telemetry] otlp_endpoint is set).
    let telemetry = match Telemetry::start(&config.telemetry, &|name| std::env::var(name).ok()) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("weaver: {error}");
            return ExitCode::FAILURE;
        }
    };
    let log = RedactingLogWriter::default();
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with(tracing_subscriber::fmt::layer().with_writer(log.clone()))
        .with(telemetry.layer())
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("weaver: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config, telemetry, log)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("weaver: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The configuration file (if any) with the flags' and environment's settings over it.
fn load_config(cli: &Cli) -> Result<WeaverConfig, String> {
    let mut config = match &cli.config {
        Some(path) => WeaverConfig::load(path).map_err(|e| e.to_string())?,
        None => WeaverConfig::default(),
    };
    config
        .apply(Overrides {
            listen: cli.listen.clone(),
            sqlite: cli.sqlite.clone(),
            postgres: cli.postgres.clone(),
            provider: cli.provider.clone(),
            max_body_bytes: cli.max_body_bytes,
            grace_window_secs: cli.grace_window_secs,
            result_budget_bytes: cli.result_budget_bytes,
        })
        .map_err(|e| e.to_string())?;
    Ok(config)
}

async fn run(
    config: WeaverConfig,
    telemetry: Telemetry,
    log: RedactingLogWriter,
) -> Result<(), String> {
    // A write past a file-size limit raises SIGXFSZ, whose default action ends the process.
    // Handled, the write fails with EFBIG instead, which the store reports as 503
    // `store_unavailable` like a full disk; the handler stays for the process's lifetime.
    let _file_size_limit =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(libc::SIGXFSZ))
            .map_err(|e| format!("cannot handle SIGXFSZ: {e}"))?;
    let address = config.listen_addr().map_err(|e| e.to_string())?;
    let weaver = Weaver::builder(config)
        .telemetry(telemetry)
        .build()
        .await
        .map_err(|e| e.to_string())?;
    // From here on, every log line (dependencies' included) passes the server's redactor.
    log.install(weaver.redactor().clone());
    for line in weaver.startup_report() {
        tracing::info!("{line}");
    }
    // A generated key is shown once, to the person who started weaver, and never through
    // the log pipeline (log files and collectors outlive the terminal).
    for key in weaver.development_keys().iter().filter(|k| k.generated) {
        eprintln!(
            "weaver: development key for actor 'demo' in tenant '{}' (all permissions, local \
             use only): Authorization: ApiKey {}",
            key.tenant, key.key
        );
    }
    let listener =
        Weaver::listen(address).map_err(|e| format!("cannot listen on {address}: {e}"))?;
    // The bound address: with port 0 the system chose it, and scripts read it from here.
    let bound = listener.local_addr().unwrap_or(address);
    tracing::info!("Weaver listens on http://{bound} (API description: /ai/openapi.json)");
    weaver
        .serve(listener, shutdown_signal())
        .await
        .map_err(|e| format!("the server failed: {e}"))?;
    tracing::info!("Weaver stopped");
    Ok(())
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutdown requested");
}
