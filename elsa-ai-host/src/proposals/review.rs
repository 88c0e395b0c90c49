//! What the service learns about a draft before a person sees it: validation findings
//! against the tenant's activity catalog, warnings, and the graph diff. The rules
//! themselves live in `elsa-workflows`; this is the one place the service calls them.

use std::sync::Arc;

use elsa_ai_abstractions::{AiError, BaselineRef, ProposalStatus};
use elsa_workflows::{
    ActivityDescriptor, Diagnostic, DiagnosticCode, DraftValidator, GraphDiff, Severity,
    WorkflowDefinition, mark_predating,
};
use elsa_workflows::{TenantId, VersionOptions};
use serde_json::Value;

use super::Inner;
use crate::redaction::REDACTED;

/// Validation findings for `definition` against `catalog`, and a blocking finding for each
/// value that carries the redaction marker.
pub(crate) fn validate(
    definition: &WorkflowDefinition,
    catalog: Arc<[ActivityDescriptor]>,
) -> Vec<Diagnostic> {
    let mut diagnostics = DraftValidator::new(catalog).validate(definition);
    redacted_values(&definition.to_value(), "$", None, &mut diagnostics);
    diagnostics
}

/// A model sees secrets only as the marker; a draft that still holds one would write the
/// marker's text where the secret belonged, so applying it must wait for a person to fix it.
fn redacted_values(value: &Value, path: &str, activity: Option<&str>, out: &mut Vec<Diagnostic>) {
    let found = |out: &mut Vec<Diagnostic>, what: &str| {
        out.push(Diagnostic {
            severity: Severity::Error,
            code: DiagnosticCode::RedactedValue,
            message: format!(
                "{what} holds the redaction marker {REDACTED} instead of a real value: \
                 the model never saw it, so a person must supply it"
            ),
            activity_id: activity.map(str::to_owned),
            path: path.to_owned(),
        });
    };
    match value {
        Value::String(text) if text.contains(REDACTED) => found(out, "the value"),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                redacted_values(item, &format!("{path}[{i}]"), activity, out);
            }
        }
        Value::Object(map) => {
            // An object with an id and a type is an activity: findings inside name it.
            let activity = match (map.get("id"), map.get("type")) {
                (Some(Value::String(id)), Some(Value::String(_))) => Some(id.as_str()),
                _ => activity,
            };
            for (key, item) in map {
                let at = if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    format!("{path}.{key}")
                } else {
                    format!("{path}[{}]", Value::String(key.clone()))
                };
                if key.contains(REDACTED) {
                    found(out, "a property name");
                }
                redacted_values(item, &at, activity, out);
            }
        }
        _ => {}
    }
}

/// The changes from `before` to `after`; for a creation (`None`), everything is added.
pub(crate) fn diff(before: Option<&WorkflowDefinition>, after: &WorkflowDefinition) -> GraphDiff {
    match before {
        Some(before) => GraphDiff::between(before, after),
        None => GraphDiff::creation(after),
    }
}

/// What a reviewer should notice in an update's diff: that it changes nothing, or that it
/// removes activities or variables (work and data the workflow had).
pub(crate) fn diff_warnings(diff: &GraphDiff) -> Vec<String> {
    let mut warnings = Vec::new();
    if diff.is_empty() {
        warnings.push("the update changes nothing in the workflow".to_owned());
    }
    if !diff.activities_removed.is_empty() {
        let removed: Vec<&str> = diff
            .activities_removed
            .iter()
            .map(|a| a.id.as_deref().unwrap_or(a.type_name.as_str()))
            .collect();
        warnings.push(format!(
            "the update removes {} activit{}: {}",
            removed.len(),
            if removed.len() == 1 { "y" } else { "ies" },
            removed.join(", ")
        ));
    }
    if !diff.variables_removed.is_empty() {
        let removed: Vec<&str> = diff
            .variables_removed
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        warnings.push(format!(
            "the update removes {} variable{}: {}",
            removed.len(),
            if removed.len() == 1 { "" } else { "s" },
            removed.join(", ")
        ));
    }
    warnings
}

/// Whether any finding blocks applying.
pub(crate) fn is_blocking(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

/// The warnings among the findings, as sentences for a reviewer.
pub(crate) fn warnings(diagnostics: &[Diagnostic]) -> impl Iterator<Item = String> + '_ {
    diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| match &d.activity_id {
            Some(activity) => format!("{} (activity '{activity}')", d.message),
            None => d.message.clone(),
        })
}

/// What reviewing a definition found.
pub(super) struct Review {
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) warnings: Vec<String>,
    /// `None` when the baseline could not be read again (the stored diff stays).
    pub(super) graph_diff: Option<GraphDiff>,
}

impl Review {
    pub(super) fn status(&self) -> ProposalStatus {
        if is_blocking(&self.diagnostics) {
            ProposalStatus::Blocked
        } else {
            ProposalStatus::Validated
        }
    }
}

impl Inner {
    /// Validates `definition` against the tenant's catalog, collects warnings and diffs it
    /// against the baseline (an empty workflow for creations). At creation
    /// (`baseline_required`) a missing baseline version is 404 `baseline_not_found`; later it
    /// is a warning and the stored diff stays.
    pub(super) async fn review(
        &self,
        tenant_id: &TenantId,
        baseline: Option<&BaselineRef>,
        definition: &WorkflowDefinition,
        baseline_required: bool,
    ) -> Result<Review, AiError> {
        let mut warnings = Vec::new();
        let mut graph_diff = None;
        let mut before = None;
        match baseline {
            Some(baseline) => {
                let id = baseline.definition_id.as_str();
                before = self
                    .definitions
                    .find(tenant_id, id, VersionOptions::Specific(baseline.version))
                    .await?;
                match &before {
                    Some(before) => {
                        let diff = diff(Some(before), definition);
                        warnings.extend(diff_warnings(&diff));
                        graph_diff = Some(diff);
                    }
                    None if baseline_required => {
                        return Err(AiError::NotFound {
                            code: "baseline_not_found".into(),
                            message: format!(
                                "workflow definition '{id}' version {} not found",
                                baseline.version
                            ),
                        });
                    }
                    None => warnings.push(format!(
                        "the baseline version {} of workflow '{id}' no longer exists",
                        baseline.version
                    )),
                }
                let latest = self
                    .definitions
                    .find(tenant_id, id, VersionOptions::Latest)
                    .await?;
                if let Some(latest) = latest.filter(|l| l.version() != baseline.version) {
                    warnings.push(format!(
                        "workflow '{id}' is at version {} now, not the baseline version {}: \
                         applying will be refused as stale",
                        latest.version(),
                        baseline.version
                    ));
                }
            }
            None => {
                graph_diff = Some(diff(None, definition));
                let id = definition.definition_id();
                let existing = self
                    .definitions
                    .find(tenant_id, id, VersionOptions::Latest)
                    .await?;
                if let Some(existing) = existing {
                    warnings.push(format!(
                        "workflow '{id}' already exists (version {}): applying this creation \
                         will be refused",
                        existing.version()
                    ));
                }
            }
        }
        let before = match (baseline, before) {
            (Some(baseline), Some(before)) => Some((baseline.version, before)),
            _ => None,
        };
        let diagnostics = self
            .diagnostics(
                tenant_id,
                definition,
                before.as_ref().map(|(v, d)| (*v, &**d)),
            )
            .await?;
        warnings.extend(self::warnings(&diagnostics));
        let warnings = warnings
            .into_iter()
            .map(|w| self.redactor.redact_str(&w).into_owned())
            .collect();
        Ok(Review {
            diagnostics,
            warnings,
            graph_diff,
        })
    }

    /// Validation findings for `definition` against the tenant's catalog as it is now,
    /// with redacted messages (they may quote the definition). For an update, `baseline` is
    /// the version it changes: findings that version has too are not the change's doing and
    /// become warnings ([`mark_predating`]).
    pub(super) async fn diagnostics(
        &self,
        tenant_id: &TenantId,
        definition: &WorkflowDefinition,
        baseline: Option<(i32, &WorkflowDefinition)>,
    ) -> Result<Vec<Diagnostic>, AiError> {
        let catalog = self.catalog.list(tenant_id).await?;
        let mut diagnostics = self.redacted(validate(definition, Arc::clone(&catalog)));
        if let Some((version, baseline)) = baseline {
            let before = self.redacted(validate(baseline, catalog));
            mark_predating(&mut diagnostics, &before, version);
        }
        Ok(diagnostics)
    }

    fn redacted(&self, mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        for diagnostic in &mut diagnostics {
            if let std::borrow::Cow::Owned(message) = self.redactor.redact_str(&diagnostic.message)
            {
                diagnostic.message = message;
            }
        }
        diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definition(value: Value) -> WorkflowDefinition {
        WorkflowDefinition::from_value(value).expect("a definition")
    }

    #[test]
    fn every_redaction_marker_is_a_blocking_finding_at_its_path() {
        let draft = definition(json!({
            "definitionId": "d", "name": "n",
            "root": {"id": "flow", "type": "Elsa.Flowchart", "activities": [
                {"id": "call", "type": "Elsa.SendHttpRequest",
                 "headers": {"typeName": "Object", "expression": {"type": "Literal",
                    "value": format!("Authorization: Bearer {REDACTED}")}}},
            ], "connections": []},
            "variables": [{"id": "v", "name": "token", "value": REDACTED}]
        }));
        let found: Vec<_> = validate(&draft, elsa_workflows::builtin_catalog().into())
            .into_iter()
            .filter(|d| d.code == DiagnosticCode::RedactedValue)
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found.iter().all(Diagnostic::is_error));
        assert!(is_blocking(&found));
        let call = found
            .iter()
            .find(|d| d.activity_id.as_deref() == Some("call"))
            .unwrap();
        assert_eq!(call.path, "$.root.activities[0].headers.expression.value");
        let variable = found.iter().find(|d| d.activity_id.is_none()).unwrap();
        assert_eq!(variable.path, "$.variables[0].value");
        assert_eq!(
            serde_json::to_value(call.code).unwrap(),
            json!("redacted_value")
        );
    }

    #[test]
    fn a_draft_without_the_marker_draws_no_redaction_finding() {
        let draft = definition(json!({
            "definitionId": "d", "name": "REDACTED is only a word here",
            "root": {"id": "w", "type": "Elsa.WriteLine",
                     "text": {"typeName": "String", "expression": {"type": "Literal", "value": "[redacted]"}}}
        }));
        assert!(
            validate(&draft, elsa_workflows::builtin_catalog().into())
                .iter()
                .all(|d| d.code != DiagnosticCode::RedactedValue)
        );
    }
}
