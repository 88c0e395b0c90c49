//! The task file: each task is a chat message (with an agent and attachments) and the
//! criteria its turn must meet.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::criteria::Criterion;

/// The tasks shipped with the evaluator (`examples/eval/tasks.toml`).
pub fn default_tasks_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/tasks.toml")
}

/// What a task exercises; the report sums up success per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// Explain a workflow, one of its activities or its versions.
    Explain,
    /// Search workflows or the activity catalog.
    Search,
    /// Find where an activity type is used.
    FindUsages,
    /// Diagnose a failed workflow instance.
    Diagnose,
    /// Propose a change of a workflow's description.
    ProposeDescription,
    /// Propose adding an activity to a workflow.
    ProposeActivity,
}

impl TaskKind {
    /// Every kind, in report order.
    pub const ALL: [Self; 6] = [
        Self::Explain,
        Self::Search,
        Self::FindUsages,
        Self::Diagnose,
        Self::ProposeDescription,
        Self::ProposeActivity,
    ];

    /// The kind as the task file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explain => "explain",
            Self::Search => "search",
            Self::FindUsages => "find-usages",
            Self::Diagnose => "diagnose",
            Self::ProposeDescription => "propose-description",
            Self::ProposeActivity => "propose-activity",
        }
    }
}

impl std::fmt::Display for TaskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A reference attached to the task's message, as `POST /ai/chat` takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskAttachment {
    /// The attachment kind: `WorkflowDefinition`, `WorkflowInstance`, `ActivitySelection`,
    /// `DiagnosticsScope`, `Tenant`, ...
    pub kind: String,
    /// The referenced object's id (`referenceId` on the wire).
    #[serde(default)]
    pub id: Option<String>,
    /// For `ActivitySelection`: the activity within the definition.
    #[serde(default)]
    pub activity_id: Option<String>,
}

impl TaskAttachment {
    /// The attachment in the shape of the chat request.
    pub fn to_request(&self) -> Value {
        let mut attachment = json!({"kind": self.kind});
        if let Some(id) = &self.id {
            attachment["referenceId"] = json!(id);
        }
        if let Some(activity) = &self.activity_id {
            attachment["activityId"] = json!(activity);
        }
        attachment
    }
}

/// One task: a message to Weaver and what its turn must show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// A unique id (`--only` selects by it).
    pub id: String,
    /// What the task exercises.
    pub kind: TaskKind,
    /// The user's message.
    pub message: String,
    /// The agent; none means Weaver's default (`workflow-author`).
    #[serde(default)]
    pub agent: Option<String>,
    /// References sent with the message.
    #[serde(default)]
    pub attachments: Vec<TaskAttachment>,
    /// Every one must pass for the task to succeed.
    pub criteria: Vec<Criterion>,
}

impl Task {
    /// The body of `POST /ai/chat` for this task.
    pub fn chat_request(&self) -> Value {
        let mut body = json!({
            "message": self.message,
            "attachments": self.attachments.iter().map(TaskAttachment::to_request).collect::<Vec<_>>(),
        });
        if let Some(agent) = &self.agent {
            body["agent"] = json!(agent);
        }
        body
    }
}

/// A task file: `[[task]]` tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// The tasks, in the order they run.
    #[serde(rename = "task", default)]
    pub tasks: Vec<Task>,
}

impl TaskFile {
    /// Parses a task file and checks it: at least one task, unique ids, and criteria for
    /// every task.
    ///
    /// # Errors
    ///
    /// What is wrong, with TOML's position when it does not parse.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: Self = toml::from_str(text).map_err(|error| error.to_string())?;
        if file.tasks.is_empty() {
            return Err("the file holds no [[task]]".to_owned());
        }
        let mut ids = BTreeSet::new();
        for task in &file.tasks {
            if task.id.trim().is_empty() {
                return Err("a task has an empty id".to_owned());
            }
            if !ids.insert(task.id.as_str()) {
                return Err(format!("the task id {} is used twice", task.id));
            }
            if task.criteria.is_empty() {
                return Err(format!("the task {} has no criteria", task.id));
            }
            if task.message.trim().is_empty() {
                return Err(format!("the task {} has an empty message", task.id));
            }
        }
        Ok(file)
    }

    /// Reads and parses `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read or is not a valid task file; the message names the file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        Self::parse(&text).map_err(|error| format!("{}: {error}", path.display()))
    }

    /// The tasks whose ids `only` names (all of them when `only` is empty), in file order.
    ///
    /// # Errors
    ///
    /// An id in `only` that no task has.
    pub fn select(&self, only: &[String]) -> Result<Vec<Task>, String> {
        if only.is_empty() {
            return Ok(self.tasks.clone());
        }
        if let Some(unknown) = only
            .iter()
            .find(|id| !self.tasks.iter().any(|t| &t.id == *id))
        {
            return Err(format!("no task has the id {unknown}"));
        }
        Ok(self
            .tasks
            .iter()
            .filter(|t| only.contains(&t.id))
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_becomes_a_chat_request() {
        let file = TaskFile::parse(
            r#"
            [[task]]
            id = "t"
            kind = "find-usages"
            message = "Where?"
            agent = "instance-diagnostics"
            attachments = [
              { kind = "ActivitySelection", id = "sample-order-approval", activity_id = "CheckAmount" },
            ]
            criteria = [{ no_failed_turn = true }]
            "#,
        )
        .unwrap();
        let body = file.tasks[0].chat_request();
        assert_eq!(body["agent"], "instance-diagnostics");
        assert_eq!(
            body["attachments"][0],
            json!({"kind": "ActivitySelection", "referenceId": "sample-order-approval", "activityId": "CheckAmount"})
        );
        assert_eq!(file.tasks[0].kind, TaskKind::FindUsages);
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let twice = r#"
            [[task]]
            id = "a"
            kind = "explain"
            message = "m"
            criteria = [{ no_failed_turn = true }]
            [[task]]
            id = "a"
            kind = "explain"
            message = "m"
            criteria = [{ no_failed_turn = true }]
        "#;
        assert!(TaskFile::parse(twice).unwrap_err().contains("used twice"));
        let unknown = r#"
            [[task]]
            id = "a"
            kind = "explain"
            message = "m"
            criteria = [{ answer_contains = "x" }]
        "#;
        assert!(TaskFile::parse(unknown).is_err());
        assert!(TaskFile::parse("").unwrap_err().contains("no [[task]]"));
        let file = TaskFile::parse(
            "[[task]]\nid = \"a\"\nkind = \"search\"\nmessage = \"m\"\ncriteria = [{ max_rounds = 2 }]\n",
        )
        .unwrap();
        assert!(file.select(&["b".to_owned()]).is_err());
        assert_eq!(file.select(&["a".to_owned()]).unwrap().len(), 1);
    }
}
