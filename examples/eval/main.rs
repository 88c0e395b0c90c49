//! `weaver-eval`: runs the evaluation tasks against an OpenAI-compatible endpoint and reports
//! per task and overall, as a table on standard output and optionally as JSON.
//!
//! ```text
//! cargo run -p weaver-examples --bin weaver-eval -- --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b
//! ```
//!
//! See `examples/eval/README.md`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use weaver_examples::eval::{self, EvalOptions, TaskFile};

/// Evaluates Weaver with a model: runs each task of the task file as a chat turn on a fresh
/// in-process Weaver (built-in sample workflows) whose provider calls the endpoint, and checks
/// the task's criteria against Weaver's events and stores.
#[derive(Debug, Parser)]
#[command(name = "weaver-eval", version)]
struct Cli {
    /// The OpenAI-compatible API's base URL, up to /v1 (default: the local llama-server).
    #[arg(long, env = "WEAVER_EVAL_BASE_URL", default_value = eval::DEFAULT_BASE_URL)]
    base_url: String,
    /// The model (Azure: the deployment).
    #[arg(long, env = "WEAVER_EVAL_MODEL", default_value = eval::DEFAULT_MODEL)]
    model: String,
    /// The environment variable holding the endpoint's API key (none is sent without it).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The API to call: chat (Chat Completions) or responses.
    #[arg(long, value_parser = ["chat", "responses"])]
    api: Option<String>,
    /// The task file (default: examples/eval/tasks.toml).
    #[arg(long, value_name = "FILE")]
    tasks: Option<PathBuf>,
    /// Run only these tasks (repeat the option, or separate ids with commas).
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    only: Vec<String>,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Model requests ending in tool calls per turn (default: the provider's, 8).
    #[arg(long, value_name = "N")]
    max_tool_rounds: Option<u32>,
    /// Sampling temperature, 0 to 2 (default: the server's).
    #[arg(long)]
    temperature: Option<f64>,
    /// Nucleus sampling, above 0 and at most 1 (default: the server's).
    #[arg(long)]
    top_p: Option<f64>,
    /// A fixed sampling seed, where the server supports one.
    #[arg(long)]
    seed: Option<i64>,
    /// The most tokens one model request may generate.
    #[arg(long, value_name = "N")]
    max_output_tokens: Option<u32>,
    /// How long one task's turn may take, in seconds; a turn still running is cancelled.
    #[arg(long, value_name = "SECONDS", default_value_t = eval::DEFAULT_TASK_TIMEOUT.as_secs())]
    timeout_secs: u64,
    /// Exit with status 2 when fewer than this share of the tasks pass (0 to 1).
    #[arg(long, value_name = "RATE")]
    fail_under: Option<f64>,
    /// List the tasks and exit.
    #[arg(long)]
    list: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("weaver-eval: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, eval::Error> {
    let path = cli.tasks.clone().unwrap_or_else(eval::default_tasks_path);
    let file = TaskFile::load(&path)?;
    let only: Vec<String> = cli
        .only
        .iter()
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
        .collect();
    let tasks = file.select(&only)?;
    if cli.list {
        let mut list = String::new();
        for task in &tasks {
            list.push_str(&format!(
                "{:<40} {:<19} {}\n",
                task.id, task.kind, task.message
            ));
        }
        print_out(&list);
        return Ok(ExitCode::SUCCESS);
    }
    let options = EvalOptions {
        api_key_env: cli.api_key_env,
        api: cli.api,
        max_tool_rounds: cli.max_tool_rounds,
        temperature: cli.temperature,
        top_p: cli.top_p,
        seed: cli.seed,
        max_output_tokens: cli.max_output_tokens,
        task_timeout: Duration::from_secs(cli.timeout_secs.max(1)),
        ..EvalOptions::new(cli.base_url, cli.model)
    };
    eprintln!(
        "weaver-eval: {} task{} from {}, model {} at {}",
        tasks.len(),
        if tasks.len() == 1 { "" } else { "s" },
        path.display(),
        options.model,
        options.base_url
    );
    let total = tasks.len();
    let report = eval::run(&tasks, &options, |index, task| {
        eprintln!(
            "[{}/{total}] {} {} ({} rounds, {:.1} s)",
            index + 1,
            if task.success { "PASS" } else { "FAIL" },
            task.id,
            task.rounds,
            task.total_ms as f64 / 1000.0
        );
    })
    .await?;
    print_out(&report.table());
    if let Some(json) = &cli.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(json, text + "\n")
            .map_err(|error| format!("cannot write {}: {error}", json.display()))?;
    }
    match cli.fail_under {
        Some(rate) if report.overall.success_rate < rate => Ok(ExitCode::from(2)),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Writes to standard output; a reader that went away (`| head`) is not an error.
fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
