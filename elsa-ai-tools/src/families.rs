//! The grounding families of upstream Elsa's spec 012: which built-in tools ground a model in
//! the server's activity registry, its workflow definitions, its proposals and its runtime
//! records. A server turns families on and off as a whole and reports each family's
//! availability for a caller (`GET /ai/capabilities`, `grounding`).

use elsa_ai_abstractions::AttachmentKind;

use crate::names;

/// One grounding family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GroundingFamily {
    /// Activity discovery: the catalog and its descriptors.
    Activities,
    /// Workflow definitions: search, definitions and graphs, versions, usages.
    Workflows,
    /// Workflow proposals: validating drafts, proposing creations and updates.
    Proposals,
    /// Runtime inspection: instances, their execution and activity state, incidents.
    Runtime,
}

impl GroundingFamily {
    /// Every family, in the order upstream lists them.
    pub const ALL: [Self; 4] = [
        Self::Activities,
        Self::Workflows,
        Self::Proposals,
        Self::Runtime,
    ];

    /// The family's name (`activities`, `workflows`, `proposals`, `runtime`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Activities => "activities",
            Self::Workflows => "workflows",
            Self::Proposals => "proposals",
            Self::Runtime => "runtime",
        }
    }

    /// The family's name for people.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Activities => "Activity discovery",
            Self::Workflows => "Workflow definitions",
            Self::Proposals => "Workflow proposals",
            Self::Runtime => "Runtime inspection",
        }
    }

    /// What the family lets a model ground its answers in.
    pub fn description(self) -> &'static str {
        match self {
            Self::Activities => {
                "The activity types installed for the tenant, with their inputs, outputs and \
                 outcomes."
            }
            Self::Workflows => {
                "The tenant's workflow definitions: search, graphs, versions and their \
                 differences, and where activities, variables and expressions are used."
            }
            Self::Proposals => {
                "Drafts validated against the installed activities and turned into proposals \
                 a person reviews, and proposed operations on instances and definitions \
                 (retry, cancel, restart, publish, unpublish, delete); nothing changes without \
                 approval."
            }
            Self::Runtime => {
                "Workflow instances, their execution history and activity state, and \
                 incidents, within an attached workflow, instance, scope or time range."
            }
        }
    }

    /// The built-in tools of the family, by canonical name.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Self::Activities => &[names::ACTIVITIES_CATALOG, names::ACTIVITIES_GET_DESCRIPTOR],
            Self::Workflows => &[
                names::LIST_DEFINITIONS,
                names::GET_DEFINITION,
                names::GET_DEFINITION_GRAPH,
                names::LIST_VERSIONS,
                names::COMPARE_VERSIONS,
                names::FIND_USAGES,
                names::EXPLAIN,
            ],
            Self::Proposals => &[
                names::VALIDATE_DRAFT,
                names::PROPOSE_CREATE,
                names::PROPOSE_UPDATE,
                names::PROPOSE_RETRY,
                names::PROPOSE_CANCEL,
                names::PROPOSE_RESTART,
                names::PROPOSE_PUBLISH,
                names::PROPOSE_UNPUBLISH,
                names::PROPOSE_DELETE,
            ],
            Self::Runtime => &[
                names::INSTANCE_SEARCH,
                names::INSTANCE_GET,
                names::EXECUTION_HISTORY,
                names::INSTANCE_ACTIVITY_STATE,
                names::INSTANCE_ERRORS,
                names::INSTANCE_SUMMARIZE,
                names::AGGREGATE_FAILURES,
                names::DETECT_TRENDS,
                names::INCIDENTS_SEARCH,
                names::INCIDENTS_GET,
            ],
        }
    }

    /// The attachment kinds that ground the family's answers.
    pub fn attachment_kinds(self) -> &'static [AttachmentKind] {
        match self {
            Self::Activities => &[AttachmentKind::ActivitySelection],
            Self::Workflows => &[AttachmentKind::WorkflowDefinition],
            Self::Proposals => &[
                AttachmentKind::WorkflowDefinition,
                AttachmentKind::ActivitySelection,
            ],
            Self::Runtime => &[
                AttachmentKind::WorkflowInstance,
                AttachmentKind::DiagnosticsScope,
                AttachmentKind::TimeRange,
            ],
        }
    }

    /// The family a built-in tool belongs to (by canonical name).
    pub fn of(tool: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|family| family.tools().contains(&tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_tool_is_in_exactly_one_family() {
        for tool in names::ALL {
            let families: Vec<_> = GroundingFamily::ALL
                .into_iter()
                .filter(|f| f.tools().contains(tool))
                .collect();
            assert_eq!(families.len(), 1, "{tool}: {families:?}");
        }
        let listed: usize = GroundingFamily::ALL.iter().map(|f| f.tools().len()).sum();
        assert_eq!(listed, names::ALL.len());
        assert_eq!(
            GroundingFamily::of(names::INCIDENTS_GET),
            Some(GroundingFamily::Runtime)
        );
        assert_eq!(GroundingFamily::of("acme.tool"), None);
    }
}
