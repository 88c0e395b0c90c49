//! What the service learns about a draft before a person sees it: validation findings
//! against the tenant's activity catalog, warnings, and the graph diff. The rules
//! themselves live in `elsa-workflows`; this is the one place the service calls them.

use elsa_workflows::{
    ActivityDescriptor, Diagnostic, DraftValidator, GraphDiff, Severity, WorkflowDefinition,
};

/// Validation findings for `definition` against `catalog`.
pub(crate) fn validate(
    definition: &WorkflowDefinition,
    catalog: Vec<ActivityDescriptor>,
) -> Vec<Diagnostic> {
    DraftValidator::new(catalog).validate(definition)
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
