//! The built-in context providers, one per attachment kind of SPEC §2.

mod activity;
mod definition;
mod instance;
mod scope;
mod tenant;
mod time_range;

use elsa_ai_abstractions::{AiCaller, AiError, AttachmentKind, Permission};
use elsa_workflows::TimeRange;

pub use activity::ActivitySelectionContext;
pub use definition::WorkflowDefinitionContext;
pub use instance::WorkflowInstanceContext;
pub use scope::DiagnosticsScopeContext;
pub use tenant::TenantContext;
pub use time_range::TimeRangeContext;

/// 403 `permission_denied` unless the caller holds `permission`. Checked before any data is
/// read, so a refused caller learns nothing about what exists.
fn require(
    caller: &AiCaller,
    kind: &AttachmentKind,
    permission: &Permission,
) -> Result<(), AiError> {
    caller.require(permission, format_args!("{} attachments", kind.as_str()))
}

/// 404 `not_found` for a reference: the same words for unknown, deleted and other
/// tenants' objects, because the stores cannot tell them apart either.
fn not_found(what: &str, reference: &str) -> AiError {
    AiError::not_found(format!("{what} '{reference}'"))
}

/// 400 unless the reference names something.
fn require_reference(kind: &AttachmentKind, reference: &str) -> Result<(), AiError> {
    if reference.trim().is_empty() {
        return Err(AiError::bad_request(
            "invalid_attachment",
            format!("{} attachments need a referenceId", kind.as_str()),
        ));
    }
    Ok(())
}

/// 400 `invalid_time_range` unless `from <= to`.
fn check_range(range: &TimeRange) -> Result<(), AiError> {
    if range.from > range.to {
        return Err(AiError::bad_request(
            "invalid_time_range",
            format!(
                "the time range starts ({}) after it ends ({})",
                range.from.to_rfc3339(),
                range.to.to_rfc3339()
            ),
        ));
    }
    Ok(())
}

/// A time range as context JSON.
fn range_json(range: &TimeRange) -> serde_json::Value {
    serde_json::json!({
        "from": range.from.to_rfc3339(),
        "to": range.to.to_rfc3339(),
        "durationSeconds": (range.to - range.from).num_seconds(),
    })
}
