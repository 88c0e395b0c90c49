//! `weaver-eval`: how well Weaver works with a given model, measured on a suite of tasks.
//!
//! Each [`Task`] of a task file (`eval/tasks.toml`) is a chat message with an optional
//! agent and attachments, and a list of [`Criterion`]s: machine checks of what Weaver
//! showed of the turn — the tools called (by canonical name), facts the answer names, the
//! proposals stored, the turn's outcome, the number of model requests. None depends on the
//! model's exact wording.
//!
//! [`run`] starts a fresh in-process Weaver per task (the built-in sample workflows, in
//! memory, one API key with every permission, the proposal tools enabled) whose
//! OpenAI-compatible provider calls the endpoint through a counting proxy, sends the message
//! over real HTTP (`POST /ai/chat`), reads the Server-Sent Events to the end of the turn,
//! reads each proposal it created (`GET /ai/proposals/{id}`), and judges the criteria. The
//! [`Report`] has, per task and overall: success, failed criteria with reasons, rounds
//! (model requests), prompt and completion tokens (the `usage` of `conversation.completed`),
//! time to first event and to first output, and total time; as JSON and as a table.

mod criteria;
mod proxy;
mod report;
mod runner;
mod tasks;

pub use criteria::{Criterion, Fact, Globs, Observation, ToolCall, TurnOutcome, glob_matches};
pub use report::{FailedCriterion, KindSummary, ProposalReport, Report, Summary, TaskReport};
pub use runner::{
    DEFAULT_BASE_URL, DEFAULT_MODEL, DEFAULT_TASK_TIMEOUT, Error, EvalOptions, TENANT, run,
};
pub use tasks::{Task, TaskAttachment, TaskFile, TaskKind, default_tasks_path};
