//! The evaluation's report: per task and overall, as JSON (serde) and as a plain-text table.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::criteria::{Criterion, ToolCall, TurnOutcome};
use super::tasks::TaskKind;

/// A criterion a task failed, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedCriterion {
    /// The criterion as the task file wrote it.
    pub criterion: Criterion,
    /// Why it failed.
    pub reason: String,
}

/// A proposal a task's turn created, as the store holds it after the turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalReport {
    /// The proposal id.
    pub id: String,
    /// `Create`, `Update`, ...
    pub kind: String,
    /// `Validated`, `Blocked`, ...
    pub status: String,
    /// The workflow it concerns.
    pub definition_id: String,
}

/// One task's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReport {
    /// The task id.
    pub id: String,
    /// What it exercises.
    pub kind: TaskKind,
    /// Whether every criterion passed.
    pub success: bool,
    /// The criteria that failed, with reasons.
    pub failed_criteria: Vec<FailedCriterion>,
    /// How the turn ended (`None`: Weaver could not be started for it).
    pub outcome: Option<TurnOutcome>,
    /// Model requests the turn made (counted on their way to the endpoint).
    pub rounds: u64,
    /// Prompt (input) tokens, from `conversation.completed` (`None`: not reported).
    pub prompt_tokens: Option<u64>,
    /// Completion (output) tokens, from `conversation.completed`.
    pub completion_tokens: Option<u64>,
    /// From sending the message to the first event of the stream (`conversation.started`).
    pub time_to_first_event_ms: Option<u64>,
    /// From sending the message to the first event the model caused (text or a tool call).
    pub time_to_first_output_ms: Option<u64>,
    /// From sending the message to the turn's last event.
    pub total_ms: u64,
    /// The tool calls, in the order they ended.
    pub tool_calls: Vec<ToolCall>,
    /// The proposals the turn created.
    pub proposals: Vec<ProposalReport>,
    /// The assistant's text.
    pub answer: String,
}

/// Success and sums over a set of tasks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Tasks run.
    pub tasks: usize,
    /// Tasks that succeeded.
    pub passed: usize,
    /// `passed / tasks` (0 without tasks).
    pub success_rate: f64,
    /// Model requests, summed.
    pub rounds: u64,
    /// Prompt tokens, summed over the tasks that reported them.
    pub prompt_tokens: u64,
    /// Completion tokens, summed.
    pub completion_tokens: u64,
    /// Wall time of the turns, summed.
    pub total_ms: u64,
    /// Mean model requests per task.
    pub mean_rounds: f64,
    /// Mean prompt tokens per task that reported usage.
    pub mean_prompt_tokens: f64,
    /// Mean completion tokens per task that reported usage.
    pub mean_completion_tokens: f64,
    /// Mean time to the first event.
    pub mean_time_to_first_event_ms: f64,
    /// Mean time to the first model output.
    pub mean_time_to_first_output_ms: f64,
    /// Mean time per turn.
    pub mean_total_ms: f64,
}

impl Summary {
    /// The summary of `tasks`.
    pub fn of<'a>(tasks: impl IntoIterator<Item = &'a TaskReport>) -> Self {
        let tasks: Vec<&TaskReport> = tasks.into_iter().collect();
        let mean = |values: Vec<u64>| {
            if values.is_empty() {
                0.0
            } else {
                values.iter().sum::<u64>() as f64 / values.len() as f64
            }
        };
        let prompt: Vec<u64> = tasks.iter().filter_map(|t| t.prompt_tokens).collect();
        let completion: Vec<u64> = tasks.iter().filter_map(|t| t.completion_tokens).collect();
        let passed = tasks.iter().filter(|t| t.success).count();
        Self {
            tasks: tasks.len(),
            passed,
            success_rate: if tasks.is_empty() {
                0.0
            } else {
                passed as f64 / tasks.len() as f64
            },
            rounds: tasks.iter().map(|t| t.rounds).sum(),
            prompt_tokens: prompt.iter().sum(),
            completion_tokens: completion.iter().sum(),
            total_ms: tasks.iter().map(|t| t.total_ms).sum(),
            mean_rounds: mean(tasks.iter().map(|t| t.rounds).collect()),
            mean_prompt_tokens: mean(prompt),
            mean_completion_tokens: mean(completion),
            mean_time_to_first_event_ms: mean(
                tasks
                    .iter()
                    .filter_map(|t| t.time_to_first_event_ms)
                    .collect(),
            ),
            mean_time_to_first_output_ms: mean(
                tasks
                    .iter()
                    .filter_map(|t| t.time_to_first_output_ms)
                    .collect(),
            ),
            mean_total_ms: mean(tasks.iter().map(|t| t.total_ms).collect()),
        }
    }
}

/// The summary of one task kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindSummary {
    /// The kind.
    pub kind: TaskKind,
    /// Its tasks' summary.
    #[serde(flatten)]
    pub summary: Summary,
}

/// The whole evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The model endpoint's base URL.
    pub base_url: String,
    /// The model.
    pub model: String,
    /// Every task, in the order it ran.
    pub tasks: Vec<TaskReport>,
    /// Every task together.
    pub overall: Summary,
    /// Per kind, for the kinds that ran.
    pub by_kind: Vec<KindSummary>,
}

impl Report {
    /// The report over `tasks`.
    pub fn new(base_url: &str, model: &str, tasks: Vec<TaskReport>) -> Self {
        let overall = Summary::of(&tasks);
        let by_kind = TaskKind::ALL
            .into_iter()
            .filter(|kind| tasks.iter().any(|t| t.kind == *kind))
            .map(|kind| KindSummary {
                kind,
                summary: Summary::of(tasks.iter().filter(|t| t.kind == kind)),
            })
            .collect();
        Self {
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            tasks,
            overall,
            by_kind,
        }
    }

    /// The report as a plain-text table: one row per task (with its failed criteria below
    /// it), then one per kind and the overall line.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let id_width = self
            .tasks
            .iter()
            .map(|t| t.id.len())
            .chain([4])
            .max()
            .unwrap_or(4);
        let _ = writeln!(
            out,
            "{:<id_width$}  {:<19}  {:<4}  {:>6}  {:>7}  {:>7}  {:>8}  {:>9}  tools",
            "task", "kind", "ok", "rounds", "prompt", "compl", "first ms", "total ms"
        );
        for task in &self.tasks {
            let _ = writeln!(
                out,
                "{:<id_width$}  {:<19}  {:<4}  {:>6}  {:>7}  {:>7}  {:>8}  {:>9}  {}",
                task.id,
                task.kind.as_str(),
                if task.success { "PASS" } else { "FAIL" },
                task.rounds,
                optional(task.prompt_tokens),
                optional(task.completion_tokens),
                optional(task.time_to_first_event_ms),
                task.total_ms,
                tool_list(&task.tool_calls),
            );
            for failed in &task.failed_criteria {
                let _ = writeln!(out, "    x {}: {}", failed.criterion, failed.reason);
            }
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<19}  {:>6}  {:>7}  {:>11}  {:>11}  {:>10}  {:>13}",
            "kind", "passed", "rate", "mean rounds", "mean prompt", "mean compl", "mean total ms"
        );
        for (label, s) in self
            .by_kind
            .iter()
            .map(|k| (k.kind.as_str(), &k.summary))
            .chain([("overall", &self.overall)])
        {
            let _ = writeln!(
                out,
                "{:<19}  {:>6}  {:>6.1}%  {:>11.1}  {:>11.0}  {:>10.0}  {:>13.0}",
                label,
                format!("{}/{}", s.passed, s.tasks),
                s.success_rate * 100.0,
                s.mean_rounds,
                s.mean_prompt_tokens,
                s.mean_completion_tokens,
                s.mean_total_ms,
            );
        }
        let s = &self.overall;
        let _ = writeln!(
            out,
            "\n{} of {} tasks passed ({:.1}%) with {} at {}: {} model requests, {} prompt and {} \
             completion tokens, {:.1} s in all; mean time to first event {:.0} ms, to first \
             output {:.0} ms.",
            s.passed,
            s.tasks,
            s.success_rate * 100.0,
            self.model,
            self.base_url,
            s.rounds,
            s.prompt_tokens,
            s.completion_tokens,
            s.total_ms as f64 / 1000.0,
            s.mean_time_to_first_event_ms,
            s.mean_time_to_first_output_ms,
        );
        out
    }
}

fn optional(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// The tools called, in order of first call, each with its count and failures.
fn tool_list(calls: &[ToolCall]) -> String {
    let mut seen: Vec<(&str, usize, usize)> = Vec::new();
    for call in calls {
        let failed = usize::from(!call.completed);
        match seen.iter_mut().find(|(name, _, _)| *name == call.name) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 += failed;
            }
            None => seen.push((&call.name, 1, failed)),
        }
    }
    if seen.is_empty() {
        return "-".to_owned();
    }
    seen.iter()
        .map(|(name, count, failed)| {
            let mut item = (*name).to_owned();
            if *count > 1 {
                let _ = write!(item, " x{count}");
            }
            if *failed > 0 {
                let _ = write!(item, " ({failed} failed)");
            }
            item
        })
        .collect::<Vec<_>>()
        .join(", ")
}
