//! The machine-checked criteria of a task, each judged against what Weaver showed of the
//! turn: its events (tool calls, answer, outcome) and the proposals it stored. None looks at
//! the model's exact wording: an answer is only searched for facts, case-insensitively.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One check of a task, as the task file writes it: a table with one key,
/// `{ tool_family = "workflow.get*" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Criterion {
    /// A tool whose canonical name matches the glob (or any of the globs) was called and
    /// completed (`tool.completed`). `*` matches any run of characters, `?` one; case is
    /// ignored.
    ToolFamily(Globs),
    /// No tool whose name matches the glob (or any of them) was called at all.
    NoToolFamily(Globs),
    /// The answer (every `assistant.completed` text of the turn) mentions every fact,
    /// case-insensitively; a fact written as a list is met by any one of its spellings.
    AnswerMentions(Vec<Fact>),
    /// The answer mentions at least one of these, case-insensitively.
    AnswerMentionsAny(Vec<String>),
    /// The diagnosis names the failing activity: the answer mentions at least one of these
    /// names of it (id, name, type), case-insensitively.
    DiagnosisMentions(Vec<String>),
    /// The turn's latest proposal exists and has this status (`Validated`, `Blocked`, ...),
    /// as `GET /ai/proposals/{id}` reports it after the turn.
    ProposalStatus(String),
    /// The latest proposal is of this kind (`Create`, `Update`, ...).
    ProposalKind(String),
    /// The latest proposal concerns this workflow definition.
    ProposalDefinition(String),
    /// The latest proposal's graph diff adds an activity whose type, id, name or display
    /// text is this (case-insensitive; a type also matches without its namespace, so
    /// `WriteLine` matches `Elsa.WriteLine`).
    ProposalAddsActivity(String),
    /// The latest proposal's graph diff changes this header field (`name`, `description`).
    ProposalChangesHeader(String),
    /// What the latest proposal's graph diff brings in contains this text
    /// (case-insensitive): the diff as JSON without what it takes away (`before` values and
    /// removed activities, connections and variables), so that text the workflow already had
    /// does not count, and each added activity as the proposed definition holds it (with its
    /// inputs, which the diff's summary of an added activity leaves out).
    ProposalDiffContains(String),
    /// With `true`: the turn created no proposal.
    NoProposal(bool),
    /// With `true`: the turn ended with `conversation.completed` (not failed, refused or
    /// timed out).
    NoFailedTurn(bool),
    /// The turn made at most this many model requests.
    MaxRounds(u64),
}

/// One glob or several, of which any may match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Globs {
    /// One glob.
    One(String),
    /// Any of these.
    Any(Vec<String>),
}

impl Globs {
    /// The globs as a list.
    pub fn patterns(&self) -> &[String] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::Any(any) => any,
        }
    }

    /// Whether `name` matches any of the globs.
    pub fn matches(&self, name: &str) -> bool {
        self.patterns().iter().any(|glob| glob_matches(glob, name))
    }
}

impl std::fmt::Display for Globs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.patterns().join(" | "))
    }
}

/// A fact an answer must mention: one text, or several spellings of which any will do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Fact {
    /// This text.
    Text(String),
    /// Any of these spellings.
    AnyOf(Vec<String>),
}

impl Fact {
    fn spellings(&self) -> &[String] {
        match self {
            Self::Text(text) => std::slice::from_ref(text),
            Self::AnyOf(any) => any,
        }
    }
}

impl std::fmt::Display for Fact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text(text) => write!(f, "{text:?}"),
            Self::AnyOf(any) => {
                let quoted: Vec<String> = any.iter().map(|s| format!("{s:?}")).collect();
                write!(f, "one of {}", quoted.join(", "))
            }
        }
    }
}

/// How a task's turn ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "status"
)]
pub enum TurnOutcome {
    /// `conversation.completed`.
    Completed,
    /// `conversation.failed`, with its code and message.
    Failed {
        /// The error code (`provider_unavailable`, `tool_round_limit`, ...).
        code: String,
        /// What the server said.
        message: String,
    },
    /// `POST /ai/chat` was refused before any event.
    Refused {
        /// The HTTP status.
        http_status: u16,
        /// The response body.
        body: String,
    },
    /// The turn did not end within the task timeout; it was cancelled.
    TimedOut,
    /// The stream broke off before a terminal event.
    Broken {
        /// What went wrong.
        message: String,
    },
}

impl std::fmt::Display for TurnOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Completed => f.write_str("completed"),
            Self::Failed { code, message } => write!(f, "failed ({code}: {message})"),
            Self::Refused { http_status, body } => write!(f, "refused ({http_status}: {body})"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Broken { message } => write!(f, "stream broken ({message})"),
        }
    }
}

/// One tool call of the turn, from its terminal event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The tool's name as the event carries it (canonical under Weaver's default naming).
    pub name: String,
    /// Whether it completed (`tool.completed`) rather than failed or was refused.
    pub completed: bool,
    /// Why a call failed or was refused: its error code and message
    /// (`invalid_arguments: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a task's turn showed, as the criteria see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// How the turn ended (`None`: it never started).
    pub outcome: Option<TurnOutcome>,
    /// Every `assistant.completed` text, joined by blank lines.
    pub answer: String,
    /// The tool calls, in the order they ended.
    pub tool_calls: Vec<ToolCall>,
    /// The proposals the turn created, oldest first, as `GET /ai/proposals/{id}` shows them.
    pub proposals: Vec<Value>,
    /// The model requests the turn made.
    pub rounds: u64,
}

impl Criterion {
    /// Checks the criterion; `Err` says why it failed.
    ///
    /// # Errors
    ///
    /// A short reason when the observation does not meet the criterion.
    pub fn check(&self, seen: &Observation) -> Result<(), String> {
        match self {
            Self::ToolFamily(globs) => {
                if seen
                    .tool_calls
                    .iter()
                    .any(|call| call.completed && globs.matches(&call.name))
                {
                    Ok(())
                } else {
                    Err(format!(
                        "no call of {globs} completed ({})",
                        describe_calls(&seen.tool_calls)
                    ))
                }
            }
            Self::NoToolFamily(globs) => {
                let called: Vec<&str> = seen
                    .tool_calls
                    .iter()
                    .filter(|call| globs.matches(&call.name))
                    .map(|call| call.name.as_str())
                    .collect();
                if called.is_empty() {
                    Ok(())
                } else {
                    Err(format!("called {}", called.join(", ")))
                }
            }
            Self::AnswerMentions(facts) => {
                let missing: Vec<String> = facts
                    .iter()
                    .filter(|fact| !mentions_any(&seen.answer, fact.spellings()))
                    .map(|fact| match fact {
                        Fact::Text(text) => format!("{text:?}"),
                        Fact::AnyOf(any) => format!("any of {}", quoted_list(any)),
                    })
                    .collect();
                if missing.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "the answer does not mention {}",
                        missing.join(", nor ")
                    ))
                }
            }
            Self::AnswerMentionsAny(any) => {
                if mentions_any(&seen.answer, any) {
                    Ok(())
                } else {
                    Err(format!("the answer mentions none of {}", quoted_list(any)))
                }
            }
            Self::DiagnosisMentions(names) => {
                if mentions_any(&seen.answer, names) {
                    Ok(())
                } else {
                    Err(format!(
                        "the diagnosis does not name the failing activity ({})",
                        quoted_list(names)
                    ))
                }
            }
            Self::ProposalStatus(status) => {
                let proposal = latest_proposal(seen)?;
                let actual = proposal["status"].as_str().unwrap_or("?");
                if actual.eq_ignore_ascii_case(status) {
                    Ok(())
                } else {
                    Err(format!(
                        "proposal {} is {actual}, not {status}{}",
                        proposal_id(proposal),
                        blocking_findings(proposal)
                    ))
                }
            }
            Self::ProposalKind(kind) => {
                let proposal = latest_proposal(seen)?;
                let actual = proposal["kind"].as_str().unwrap_or("?");
                if actual.eq_ignore_ascii_case(kind) {
                    Ok(())
                } else {
                    Err(format!(
                        "proposal {} is a {actual} proposal, not {kind}",
                        proposal_id(proposal)
                    ))
                }
            }
            Self::ProposalDefinition(definition) => {
                let proposal = latest_proposal(seen)?;
                let actual = proposal["definitionId"].as_str().unwrap_or("?");
                if actual == definition {
                    Ok(())
                } else {
                    Err(format!(
                        "proposal {} concerns {actual}, not {definition}",
                        proposal_id(proposal)
                    ))
                }
            }
            Self::ProposalAddsActivity(activity) => {
                let proposal = latest_proposal(seen)?;
                let added = proposal["graphDiff"]["activitiesAdded"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if added
                    .iter()
                    .any(|summary| names_activity(summary, activity))
                {
                    Ok(())
                } else {
                    let types: Vec<&str> = added
                        .iter()
                        .filter_map(|summary| summary["type"].as_str())
                        .collect();
                    Err(format!(
                        "proposal {} adds no {activity} (adds: {})",
                        proposal_id(proposal),
                        if types.is_empty() {
                            "nothing".to_owned()
                        } else {
                            types.join(", ")
                        }
                    ))
                }
            }
            Self::ProposalChangesHeader(field) => {
                let proposal = latest_proposal(seen)?;
                let changed = proposal["graphDiff"]["header"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .any(|change| {
                        change["field"]
                            .as_str()
                            .is_some_and(|f| f.eq_ignore_ascii_case(field))
                    });
                if changed {
                    Ok(())
                } else {
                    Err(format!(
                        "proposal {} does not change the {field}",
                        proposal_id(proposal)
                    ))
                }
            }
            Self::ProposalDiffContains(text) => {
                let proposal = latest_proposal(seen)?;
                let mut diff = new_side(&proposal["graphDiff"]).to_string();
                for added in proposal["graphDiff"]["activitiesAdded"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                {
                    if let Some(id) = added["id"].as_str()
                        && let Some(activity) = find_activity(&proposal["definition"], id)
                    {
                        diff.push_str(&activity.to_string());
                    }
                }
                // The diff is JSON: compare against the text as JSON would write it.
                let needle = serde_json::to_string(text).unwrap_or_default();
                let needle = needle.trim_matches('"');
                if contains_ignoring_case(&diff, needle) {
                    Ok(())
                } else {
                    Err(format!(
                        "the diff of proposal {} does not contain {text:?}",
                        proposal_id(proposal)
                    ))
                }
            }
            Self::NoProposal(false) | Self::NoFailedTurn(false) => Ok(()),
            Self::NoProposal(true) => {
                if seen.proposals.is_empty() {
                    Ok(())
                } else {
                    let ids: Vec<String> = seen.proposals.iter().map(proposal_id).collect();
                    Err(format!("the turn created proposal {}", ids.join(", ")))
                }
            }
            Self::NoFailedTurn(true) => match &seen.outcome {
                Some(TurnOutcome::Completed) => Ok(()),
                Some(other) => Err(format!("the turn did not complete: {other}")),
                None => Err("the turn never started".to_owned()),
            },
            Self::MaxRounds(most) => {
                if seen.rounds <= *most {
                    Ok(())
                } else {
                    Err(format!("{} model requests, more than {most}", seen.rounds))
                }
            }
        }
    }
}

impl std::fmt::Display for Criterion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ToolFamily(globs) => write!(f, "tool_family {globs}"),
            Self::NoToolFamily(globs) => write!(f, "no_tool_family {globs}"),
            Self::AnswerMentions(facts) => {
                let facts: Vec<String> = facts.iter().map(Fact::to_string).collect();
                write!(f, "answer_mentions {}", facts.join(", "))
            }
            Self::AnswerMentionsAny(any) => write!(f, "answer_mentions_any {}", quoted_list(any)),
            Self::DiagnosisMentions(names) => {
                write!(f, "diagnosis_mentions {}", quoted_list(names))
            }
            Self::ProposalStatus(status) => write!(f, "proposal_status {status}"),
            Self::ProposalKind(kind) => write!(f, "proposal_kind {kind}"),
            Self::ProposalDefinition(id) => write!(f, "proposal_definition {id}"),
            Self::ProposalAddsActivity(activity) => {
                write!(f, "proposal_adds_activity {activity}")
            }
            Self::ProposalChangesHeader(field) => write!(f, "proposal_changes_header {field}"),
            Self::ProposalDiffContains(text) => write!(f, "proposal_diff_contains {text:?}"),
            Self::NoProposal(on) => write!(f, "no_proposal {on}"),
            Self::NoFailedTurn(on) => write!(f, "no_failed_turn {on}"),
            Self::MaxRounds(most) => write!(f, "max_rounds {most}"),
        }
    }
}

/// Whether `glob` (`*` any run, `?` one character) matches all of `text`, ignoring case.
pub fn glob_matches(glob: &str, text: &str) -> bool {
    let glob: Vec<char> = glob.to_lowercase().chars().collect();
    let text: Vec<char> = text.to_lowercase().chars().collect();
    // The classic two-pointer match with backtracking to the last `*`.
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, t));
                g += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                g += 1;
                t += 1;
            }
            _ => match star {
                Some((star_g, star_t)) => {
                    g = star_g + 1;
                    t = star_t + 1;
                    star = Some((star_g, star_t + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|c| *c == '*')
}

fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

fn mentions_any(answer: &str, spellings: &[String]) -> bool {
    spellings
        .iter()
        .any(|spelling| contains_ignoring_case(answer, spelling))
}

fn quoted_list(items: &[String]) -> String {
    items
        .iter()
        .map(|item| format!("{item:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_calls(calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        return "no tools were called".to_owned();
    }
    let calls: Vec<String> = calls
        .iter()
        .map(|call| match (call.completed, &call.error) {
            (true, _) => call.name.clone(),
            (false, Some(code)) => format!("{} [failed: {code}]", call.name),
            (false, None) => format!("{} [failed]", call.name),
        })
        .collect();
    format!("called: {}", calls.join(", "))
}

fn latest_proposal(seen: &Observation) -> Result<&Value, String> {
    seen.proposals
        .last()
        .ok_or_else(|| "the turn created no proposal".to_owned())
}

fn proposal_id(proposal: &Value) -> String {
    proposal["id"].as_str().unwrap_or("?").to_owned()
}

/// The blocking findings of a proposal, for the reason of a status mismatch.
fn blocking_findings(proposal: &Value) -> String {
    let findings: Vec<String> = proposal["diagnostics"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|d| d["severity"].as_str() == Some("Error"))
        .take(3)
        .map(|d| {
            format!(
                "{}: {}",
                d["code"].as_str().unwrap_or("?"),
                d["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    if findings.is_empty() {
        String::new()
    } else {
        format!(" ({})", findings.join("; "))
    }
}

/// A graph diff without what it takes away: `before` values and the removed lists.
fn new_side(diff: &Value) -> Value {
    match diff {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| {
                    !matches!(
                        key.as_str(),
                        "before" | "activitiesRemoved" | "connectionsRemoved" | "variablesRemoved"
                    )
                })
                .map(|(key, value)| (key.clone(), new_side(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(new_side).collect()),
        other => other.clone(),
    }
}

/// The activity with this id in a definition's JSON (an object with this `id` and a
/// `type`), wherever it is nested.
fn find_activity<'a>(json: &'a Value, id: &str) -> Option<&'a Value> {
    match json {
        Value::Object(fields) => {
            if fields.get("id").and_then(Value::as_str) == Some(id) && fields.contains_key("type") {
                return Some(json);
            }
            fields.values().find_map(|value| find_activity(value, id))
        }
        Value::Array(items) => items.iter().find_map(|item| find_activity(item, id)),
        _ => None,
    }
}

/// Whether an activity summary of a graph diff is `activity` by type, id, name or display
/// text.
fn names_activity(summary: &Value, activity: &str) -> bool {
    let same = |field: &str| {
        summary[field]
            .as_str()
            .is_some_and(|value| value.eq_ignore_ascii_case(activity))
    };
    let short_type = summary["type"]
        .as_str()
        .and_then(|t| t.rsplit('.').next())
        .is_some_and(|short| short.eq_ignore_ascii_case(activity));
    same("type") || short_type || same("id") || same("name") || same("displayText")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn globs_match_whole_names_ignoring_case() {
        assert!(glob_matches("workflow.get*", "workflow.getDefinition"));
        assert!(glob_matches("workflow.*", "workflow.getDefinitionGraph"));
        assert!(glob_matches("*.findUsages", "workflow.findUsages"));
        assert!(glob_matches("instance.get?rrors", "instance.getErrors"));
        assert!(glob_matches("WORKFLOW.EXPLAIN", "workflow.explain"));
        assert!(!glob_matches("workflow.get*", "workflow.listDefinitions"));
        assert!(!glob_matches("workflow.get", "workflow.getDefinition"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("a*b*c", "axxbyy"));
    }

    fn seen() -> Observation {
        Observation {
            outcome: Some(TurnOutcome::Completed),
            answer: "The NotifyCustomer activity sends an e-mail.".into(),
            tool_calls: vec![
                ToolCall {
                    name: "workflow.getDefinition".into(),
                    completed: true,
                    error: None,
                },
                ToolCall {
                    name: "workflow.findUsages".into(),
                    completed: false,
                    error: Some("invalid_arguments".into()),
                },
            ],
            proposals: vec![json!({
                "id": "p1",
                "kind": "Update",
                "status": "Blocked",
                "definitionId": "sample-order-approval",
                "diagnostics": [{"severity": "Error", "code": "unknown_activity_type", "message": "Elsa.Nope"}],
                "graphDiff": {
                    "header": [{"field": "description", "before": "old text", "after": "Orders & \"more\""}],
                    "activitiesAdded": [{"id": "Log", "type": "Elsa.WriteLine", "path": "x"}]
                },
                "definition": {"root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": [
                    {"id": "Log", "type": "Elsa.WriteLine", "text": {"expression": {"type": "Literal", "value": "Order approved"}}}
                ]}}
            })],
            rounds: 3,
        }
    }

    #[test]
    fn criteria_pass_and_fail_with_reasons() {
        let seen = seen();
        let pass = [
            Criterion::ToolFamily(Globs::One("workflow.get*".into())),
            Criterion::NoToolFamily(Globs::One("workflow.propose*".into())),
            Criterion::AnswerMentions(vec![
                Fact::Text("notifycustomer".into()),
                Fact::AnyOf(vec!["email".into(), "e-mail".into()]),
            ]),
            Criterion::DiagnosisMentions(vec!["FetchStock".into(), "NotifyCustomer".into()]),
            Criterion::ProposalKind("update".into()),
            Criterion::ProposalAddsActivity("WriteLine".into()),
            Criterion::ProposalAddsActivity("log".into()),
            Criterion::ProposalChangesHeader("description".into()),
            Criterion::ProposalDiffContains("orders & \"MORE\"".into()),
            Criterion::ProposalDiffContains("order approved".into()),
            Criterion::NoFailedTurn(true),
            Criterion::MaxRounds(3),
        ];
        for criterion in pass {
            assert_eq!(criterion.check(&seen), Ok(()), "{criterion}");
        }
        let fail = [
            (
                Criterion::ToolFamily(Globs::Any(vec![
                    "workflow.findUsages".into(),
                    "activities.*".into(),
                ])),
                "no call of workflow.findUsages | activities.* completed (called: workflow.getDefinition, workflow.findUsages [failed: invalid_arguments])",
            ),
            (
                Criterion::AnswerMentions(vec![Fact::Text("SendEmail".into())]),
                "the answer does not mention \"SendEmail\"",
            ),
            (
                Criterion::ProposalStatus("Validated".into()),
                "proposal p1 is Blocked, not Validated (unknown_activity_type: Elsa.Nope)",
            ),
            (
                Criterion::ProposalAddsActivity("Elsa.Delay".into()),
                "proposal p1 adds no Elsa.Delay (adds: Elsa.WriteLine)",
            ),
            (Criterion::NoProposal(true), "the turn created proposal p1"),
            (Criterion::MaxRounds(2), "3 model requests, more than 2"),
            (
                Criterion::ProposalDiffContains("old text".into()),
                "the diff of proposal p1 does not contain \"old text\"",
            ),
        ];
        for (criterion, reason) in fail {
            assert_eq!(
                criterion.check(&seen),
                Err(reason.to_owned()),
                "{criterion}"
            );
        }
        let empty = Observation::default();
        assert_eq!(
            Criterion::ProposalStatus("Validated".into()).check(&empty),
            Err("the turn created no proposal".to_owned())
        );
        assert_eq!(
            Criterion::NoFailedTurn(true).check(&empty),
            Err("the turn never started".to_owned())
        );
    }
}
