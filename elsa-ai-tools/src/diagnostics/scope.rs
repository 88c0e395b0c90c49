//! The diagnostics scope of `instance.aggregateFailures` and `instance.detectTrends`: what
//! they may read, taken from the turn's attachments and never from the model.
//!
//! - **Definitions**: the reference ids of the `DiagnosticsScope` attachments (at least one
//!   is required, else 400 `diagnostics_scope_required`). A `DiagnosticsScope` without a
//!   reference id (as Elsa Studio may send it) is the person's explicit choice of every
//!   workflow of the caller's tenant.
//! - **Time range**: the intersection of every attached range — `TimeRange` attachments and
//!   the optional range of each `DiagnosticsScope` (at least one is required, else 400
//!   `time_range_required`; an empty intersection is 400 `empty_time_range`).
//! - **Attached instances**: the `WorkflowInstance` attachments, read by id as well.
//!
//! Arguments may narrow this (a subset of the definitions, a window inside the range) but
//! never widen it: a definition outside the scope is 403 `outside_diagnostics_scope`, a
//! window reaching outside the range 403 `outside_time_range`. A scoped definition the
//! caller's tenant does not have is 404 `not_found`, as for every other id. The tools read the instances
//! of the scoped definitions created inside the range (through the instance store's query,
//! so nothing else is loaded) plus the attached instances, and count only failures
//! timestamped inside the range.

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use elsa_ai_abstractions::{AiContextAttachment, AiError, AiToolExecutionContext, AttachmentKind};
use elsa_workflows::{InstanceQuery, PageRequest, TimeRange, VersionOptions};
use serde::Serialize;

use super::failures::{Failure, failures_of};
use crate::support::{invalid, not_found, quoted};

/// The most instances one analysis reads; beyond it the result says `scanTruncated`.
pub(crate) const MAX_SCANNED_INSTANCES: usize = 2000;

/// The page size used while scanning.
const SCAN_PAGE: usize = PageRequest::MAX_LIMIT;

/// The narrowing arguments the scope-limited tools share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScopeNarrowing {
    /// Only these definitions; each must be in the attached diagnostics scope.
    pub definition_ids: Option<Vec<String>>,
    /// Start of a window inside the attached time range.
    pub from: Option<DateTime<Utc>>,
    /// End of a window inside the attached time range.
    pub to: Option<DateTime<Utc>>,
}

/// What an analysis may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    /// The scoped definitions; empty with `whole_tenant` for every one of the tenant's.
    pub definitions: BTreeSet<String>,
    pub whole_tenant: bool,
    pub instances: BTreeSet<String>,
    pub range: TimeRange,
}

/// The scope as a result shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScopeEcho {
    pub definition_ids: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub whole_tenant: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attached_instance_ids: Vec<String>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub instances_scanned: usize,
    /// Whether more instances were in scope than one analysis reads.
    pub scan_truncated: bool,
}

/// The failures an analysis found, with what it read.
pub(crate) struct Scanned {
    pub failures: Vec<Failure>,
    pub echo: ScopeEcho,
}

/// The overlap of two ranges, `None` when they do not overlap.
pub(super) fn intersect(a: TimeRange, b: TimeRange) -> Option<TimeRange> {
    let range = TimeRange {
        from: a.from.max(b.from),
        to: a.to.min(b.to),
    };
    (range.from <= range.to).then_some(range)
}

fn show(range: &TimeRange) -> String {
    format!("{} to {}", range.from.to_rfc3339(), range.to.to_rfc3339())
}

impl Scope {
    /// The scope the attachments allow, narrowed by the arguments.
    pub fn resolve(
        attachments: &[AiContextAttachment],
        narrowing: &ScopeNarrowing,
    ) -> Result<Self, AiError> {
        let mut definitions = BTreeSet::new();
        let mut whole_tenant = false;
        let mut instances = BTreeSet::new();
        let mut ranges = Vec::new();
        for attachment in attachments {
            match attachment.kind {
                AttachmentKind::DiagnosticsScope => {
                    if attachment.reference_id.is_empty() {
                        whole_tenant = true;
                    } else {
                        definitions.insert(attachment.reference_id.clone());
                    }
                    ranges.extend(attachment.time_range);
                }
                AttachmentKind::TimeRange => ranges.extend(attachment.time_range),
                AttachmentKind::WorkflowInstance => {
                    instances.insert(attachment.reference_id.clone());
                }
                // The other built-in kinds and modules' kinds say nothing about which runs a
                // diagnostics tool may read.
                _ => {}
            }
        }
        if whole_tenant {
            // Every definition of the tenant is in scope; naming some narrows it.
            definitions.clear();
        }
        if definitions.is_empty() && !whole_tenant {
            return Err(invalid(
                "diagnostics_scope_required",
                "this analysis reads only an explicit diagnostics scope: attach a \
                 DiagnosticsScope (a workflow definition) to the conversation",
            ));
        }
        let mut ranges = ranges.into_iter();
        let Some(first) = ranges.next() else {
            return Err(invalid(
                "time_range_required",
                "this analysis reads only an explicit time range: attach a TimeRange to the \
                 conversation",
            ));
        };
        if first.from > first.to {
            return Err(invalid(
                "invalid_time_range",
                "the attached time range ends before it starts",
            ));
        }
        let mut range = first;
        for next in ranges {
            range = intersect(range, next).ok_or_else(|| {
                invalid(
                    "empty_time_range",
                    "the attached time ranges do not overlap",
                )
            })?;
        }

        if let Some(wanted) = &narrowing.definition_ids {
            // An empty list would mean "every definition" to the instance store.
            if wanted.is_empty() {
                return Err(invalid(
                    "invalid_arguments",
                    "'definitionIds' must name at least one definition of the scope",
                ));
            }
            if let Some(outside) = wanted
                .iter()
                .find(|id| !whole_tenant && !definitions.contains(*id))
            {
                return Err(AiError::forbidden(
                    "outside_diagnostics_scope",
                    format!(
                        "workflow definition {} is not in the attached diagnostics scope",
                        quoted(outside)
                    ),
                ));
            }
            definitions = wanted.iter().cloned().collect();
            whole_tenant = false;
        }
        if narrowing.from.is_some() || narrowing.to.is_some() {
            let window = TimeRange {
                from: narrowing.from.unwrap_or(range.from),
                to: narrowing.to.unwrap_or(range.to),
            };
            if window.from > window.to {
                return Err(invalid(
                    "invalid_time_range",
                    format!("the window {} ends before it starts", show(&window)),
                ));
            }
            if window.from < range.from || window.to > range.to {
                return Err(AiError::forbidden(
                    "outside_time_range",
                    format!(
                        "the window {} reaches outside the attached time range {}",
                        show(&window),
                        show(&range)
                    ),
                ));
            }
            range = window;
        }
        Ok(Self {
            definitions,
            whole_tenant,
            instances,
            range,
        })
    }

    /// Reads the scope's failures: instances of the scoped definitions created inside the
    /// range (at most [`MAX_SCANNED_INSTANCES`]) plus the attached instances, keeping the
    /// failures timestamped inside the range.
    pub async fn scan(&self, context: &AiToolExecutionContext) -> Result<Scanned, AiError> {
        let tenant = &context.caller.tenant_id;
        // A scope names definitions of the caller's tenant: another tenant's or an unknown
        // id is the same 404 as everywhere (the context resolver refused it at turn start).
        for definition_id in &self.definitions {
            context
                .services
                .definitions
                .find(tenant, definition_id, VersionOptions::Latest)
                .await?
                .ok_or_else(|| not_found("workflow definition", definition_id))?;
        }
        let store = &context.services.instances;
        let mut seen = HashSet::new();
        let mut failures = Vec::new();
        let mut scanned = 0;
        let mut truncated = false;
        let mut offset = 0;
        loop {
            let query = InstanceQuery {
                definition_ids: self.definitions.iter().cloned().collect(),
                time_range: Some(self.range),
                page: PageRequest::new(offset, SCAN_PAGE.min(MAX_SCANNED_INSTANCES - scanned)),
                ..InstanceQuery::default()
            };
            let page = store.search(tenant, &query).await?;
            let more = page.has_more();
            offset += page.items.len();
            for instance in page.items {
                scanned += 1;
                if seen.insert(instance.id().to_owned()) {
                    failures.extend(failures_of(&instance));
                }
            }
            if !more || offset == 0 {
                break;
            }
            if scanned >= MAX_SCANNED_INSTANCES {
                truncated = true;
                break;
            }
            if context.cancellation.is_cancelled() {
                return Err(AiError::unavailable(
                    "tool_cancelled",
                    "the analysis was cancelled",
                ));
            }
        }
        for id in &self.instances {
            if seen.contains(id) {
                continue;
            }
            // Attached references were resolved for this tenant when the turn began; one
            // deleted since is simply absent.
            if let Some(instance) = store.find(tenant, id).await? {
                scanned += 1;
                seen.insert(id.clone());
                failures.extend(failures_of(&instance));
            }
        }
        failures.retain(|f| f.timestamp.is_some_and(|t| self.range.contains(t)));
        Ok(Scanned {
            failures,
            echo: ScopeEcho {
                definition_ids: self.definitions.iter().cloned().collect(),
                whole_tenant: self.whole_tenant,
                attached_instance_ids: self.instances.iter().cloned().collect(),
                from: self.range.from,
                to: self.range.to,
                instances_scanned: scanned,
                scan_truncated: truncated,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostics::test_support::{at, range};

    use super::*;

    fn scope(id: &str) -> AiContextAttachment {
        AiContextAttachment::new(AttachmentKind::DiagnosticsScope, id)
    }

    #[test]
    fn scope_and_range_are_both_required() {
        let none = ScopeNarrowing::default();
        let error = Scope::resolve(&[range(1, 2)], &none).unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (400, "diagnostics_scope_required")
        );
        let error = Scope::resolve(&[scope("d")], &none).unwrap_err();
        assert_eq!((error.status(), error.code()), (400, "time_range_required"));
        let workflow = AiContextAttachment::new(AttachmentKind::WorkflowDefinition, "d");
        let error = Scope::resolve(&[workflow, range(1, 2)], &none).unwrap_err();
        assert_eq!(
            error.code(),
            "diagnostics_scope_required",
            "a definition is not a scope"
        );
    }

    #[test]
    fn attached_ranges_intersect_and_arguments_only_narrow() {
        let mut scoped = scope("d");
        scoped.time_range = Some(TimeRange {
            from: at(2),
            to: at(10),
        });
        let attachments = [scoped, scope("e"), range(4, 12)];
        let resolved = Scope::resolve(&attachments, &ScopeNarrowing::default()).unwrap();
        assert_eq!(
            resolved.range,
            TimeRange {
                from: at(4),
                to: at(10)
            }
        );
        assert_eq!(resolved.definitions.len(), 2);

        let narrowed = ScopeNarrowing {
            definition_ids: Some(vec!["e".into()]),
            from: Some(at(5)),
            to: None,
        };
        let resolved = Scope::resolve(&attachments, &narrowed).unwrap();
        assert_eq!(resolved.definitions, BTreeSet::from(["e".to_owned()]));
        assert_eq!(
            resolved.range,
            TimeRange {
                from: at(5),
                to: at(10)
            }
        );

        let wider = ScopeNarrowing {
            from: Some(at(1)),
            ..ScopeNarrowing::default()
        };
        let error = Scope::resolve(&attachments, &wider).unwrap_err();
        assert_eq!((error.status(), error.code()), (403, "outside_time_range"));
        let other = ScopeNarrowing {
            definition_ids: Some(vec!["f".into()]),
            ..ScopeNarrowing::default()
        };
        let error = Scope::resolve(&attachments, &other).unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (403, "outside_diagnostics_scope")
        );
        let error = Scope::resolve(
            &[scope("d"), range(1, 2), range(3, 4)],
            &ScopeNarrowing::default(),
        )
        .unwrap_err();
        assert_eq!(error.code(), "empty_time_range");
    }
}
