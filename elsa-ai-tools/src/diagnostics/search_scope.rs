//! The scope rule of the runtime searches, `instance.search` and `incidents.search` (upstream
//! spec 012, FR-010): neither runs across a whole tenant unless asked to by someone allowed.
//!
//! 1. **Arguments.** A search whose arguments name a workflow (`definitionId`), an instance
//!    (`correlationId` for instances, `instanceId` for incidents) or a time range is scoped
//!    by them.
//! 2. **Attachments.** Otherwise the turn's attachments scope it: the reference ids of
//!    attached `WorkflowDefinition`s and `DiagnosticsScope`s are the workflows, attached
//!    `WorkflowInstance`s the instances (incidents only), and the intersection of attached
//!    time ranges (`TimeRange`s and a `DiagnosticsScope`'s own range) the time range. A
//!    `DiagnosticsScope` without a reference id names no workflow here.
//! 3. **Tenant.** Otherwise a caller holding `analyze:tenant` (after the agent narrowed the
//!    caller's permissions) searches the whole tenant; anyone else gets 400
//!    `search_scope_required`, whose message says what to pass or attach.

use std::collections::BTreeSet;

use elsa_ai_abstractions::{
    AiContextAttachment, AiError, AiToolExecutionContext, AttachmentKind, Permission,
};
use elsa_workflows::TimeRange;

use super::scope::intersect;
use crate::support::invalid;

/// Which runtime search the rule is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuntimeSearch {
    /// `instance.search`.
    Instances,
    /// `incidents.search`.
    Incidents,
}

impl RuntimeSearch {
    /// What the refusal asks for.
    fn requirement(self) -> &'static str {
        match self {
            Self::Instances => {
                "instance searches do not run across the whole tenant: pass 'definitionId', \
                 'correlationId' or a time range ('from'/'to' on creation, \
                 'updatedFrom'/'updatedTo' on last update), or attach a WorkflowDefinition, \
                 DiagnosticsScope or TimeRange to the conversation; searching the whole tenant \
                 needs the 'analyze:tenant' permission"
            }
            Self::Incidents => {
                "incident searches do not run across the whole tenant: pass 'definitionId', \
                 'instanceId' or a time range ('from'/'to'), or attach a WorkflowDefinition, \
                 WorkflowInstance, DiagnosticsScope or TimeRange to the conversation; searching \
                 the whole tenant needs the 'analyze:tenant' permission"
            }
        }
    }
}

/// What the turn's attachments scope a runtime search to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AttachedScope {
    /// Attached workflows (`WorkflowDefinition` and `DiagnosticsScope` reference ids).
    pub definition_ids: BTreeSet<String>,
    /// Attached instances (read for incident searches only).
    pub instance_ids: BTreeSet<String>,
    /// The intersection of the attached time ranges.
    pub range: Option<TimeRange>,
}

impl AttachedScope {
    /// The scope `attachments` give `search`: 400 `invalid_time_range` for an attached range
    /// that ends before it starts, 400 `empty_time_range` when attached ranges do not overlap.
    fn of(attachments: &[AiContextAttachment], search: RuntimeSearch) -> Result<Self, AiError> {
        let mut scope = Self::default();
        let mut ranges = Vec::new();
        for attachment in attachments {
            let reference = attachment.reference_id.trim();
            match attachment.kind {
                AttachmentKind::WorkflowDefinition if !reference.is_empty() => {
                    scope.definition_ids.insert(reference.to_owned());
                }
                AttachmentKind::DiagnosticsScope => {
                    if !reference.is_empty() {
                        scope.definition_ids.insert(reference.to_owned());
                    }
                    ranges.extend(attachment.time_range);
                }
                AttachmentKind::WorkflowInstance
                    if search == RuntimeSearch::Incidents && !reference.is_empty() =>
                {
                    scope.instance_ids.insert(reference.to_owned());
                }
                AttachmentKind::TimeRange => ranges.extend(attachment.time_range),
                _ => {}
            }
        }
        for range in ranges {
            if range.from > range.to {
                return Err(invalid(
                    "invalid_time_range",
                    "the attached time range ends before it starts",
                ));
            }
            scope.range = Some(match scope.range {
                None => range,
                Some(earlier) => intersect(earlier, range).ok_or_else(|| {
                    invalid(
                        "empty_time_range",
                        "the attached time ranges do not overlap",
                    )
                })?,
            });
        }
        Ok(scope)
    }

    fn is_empty(&self) -> bool {
        self.definition_ids.is_empty() && self.instance_ids.is_empty() && self.range.is_none()
    }

    /// "workflows a, b; instances i; 2024-01-01T00:00:00+00:00 to 2024-12-31T00:00:00+00:00".
    fn describe(&self) -> String {
        let list = |ids: &BTreeSet<String>| ids.iter().cloned().collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        if !self.definition_ids.is_empty() {
            let noun = if self.definition_ids.len() == 1 {
                "workflow"
            } else {
                "workflows"
            };
            parts.push(format!("{noun} {}", list(&self.definition_ids)));
        }
        if !self.instance_ids.is_empty() {
            let noun = if self.instance_ids.len() == 1 {
                "instance"
            } else {
                "instances"
            };
            parts.push(format!("{noun} {}", list(&self.instance_ids)));
        }
        if let Some(range) = &self.range {
            parts.push(format!(
                "{} to {}",
                range.from.to_rfc3339(),
                range.to.to_rfc3339()
            ));
        }
        parts.join("; ")
    }
}

/// What scopes a runtime search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SearchScope {
    /// Its own arguments.
    Arguments,
    /// The turn's attachments.
    Attachments(AttachedScope),
    /// Nothing: the whole tenant, for a caller holding `analyze:tenant`.
    Tenant,
}

impl SearchScope {
    /// Applies the rule: `named` says whether the arguments name a workflow, instance or time
    /// range.
    pub fn of(
        context: &AiToolExecutionContext,
        search: RuntimeSearch,
        named: bool,
    ) -> Result<Self, AiError> {
        if named {
            return Ok(Self::Arguments);
        }
        let attached = AttachedScope::of(&context.attachments, search)?;
        if !attached.is_empty() {
            return Ok(Self::Attachments(attached));
        }
        if context.caller.has(&Permission::ANALYZE_TENANT) {
            return Ok(Self::Tenant);
        }
        Err(invalid("search_scope_required", search.requirement()))
    }

    /// What a result's summary adds about its scope (empty when the arguments scoped it).
    pub fn note(&self) -> String {
        match self {
            Self::Arguments => String::new(),
            Self::Attachments(attached) => format!(
                " Scoped by the conversation's attachments: {}.",
                attached.describe()
            ),
            Self::Tenant => " Searched the whole tenant (analyze:tenant).".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostics::test_support::{at, range};

    use super::*;

    #[test]
    fn attachments_give_workflows_instances_and_the_common_range() {
        let attachments = [
            AiContextAttachment::new(AttachmentKind::WorkflowDefinition, "orders"),
            AiContextAttachment::new(AttachmentKind::DiagnosticsScope, "billing"),
            AiContextAttachment::new(AttachmentKind::DiagnosticsScope, ""),
            AiContextAttachment::new(AttachmentKind::WorkflowInstance, "run-1"),
            AiContextAttachment::new(AttachmentKind::Tenant, "acme"),
            range(1, 10),
            range(4, 12),
        ];
        let incidents = AttachedScope::of(&attachments, RuntimeSearch::Incidents).unwrap();
        assert_eq!(
            incidents.definition_ids,
            BTreeSet::from(["billing".to_owned(), "orders".to_owned()])
        );
        assert_eq!(incidents.instance_ids, BTreeSet::from(["run-1".to_owned()]));
        assert_eq!(
            incidents.range,
            Some(TimeRange {
                from: at(4),
                to: at(10)
            })
        );
        assert!(
            incidents
                .describe()
                .starts_with("workflows billing, orders; instance run-1; ")
        );
        let instances = AttachedScope::of(&attachments, RuntimeSearch::Instances).unwrap();
        assert!(
            instances.instance_ids.is_empty(),
            "instances are not scoped by instances"
        );

        let unscoped = [
            AiContextAttachment::new(AttachmentKind::DiagnosticsScope, ""),
            AiContextAttachment::new(AttachmentKind::WorkflowInstance, "run-1"),
        ];
        assert!(
            AttachedScope::of(&unscoped, RuntimeSearch::Instances)
                .unwrap()
                .is_empty()
        );
        let error =
            AttachedScope::of(&[range(1, 2), range(3, 4)], RuntimeSearch::Incidents).unwrap_err();
        assert_eq!((error.status(), error.code()), (400, "empty_time_range"));
        let error = AttachedScope::of(&[range(5, 4)], RuntimeSearch::Incidents).unwrap_err();
        assert_eq!(error.code(), "invalid_time_range");
    }
}
