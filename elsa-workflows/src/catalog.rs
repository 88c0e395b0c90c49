//! The activity catalog shipped with the crate: Elsa 3's built-in activities (control flow,
//! flowchart nodes, looping, scheduling, HTTP, scripting, composition, email), written down in
//! `catalog/builtin.json` and embedded at compile time.
//!
//! `Elsa.Start` is marked as a start node and `Elsa.Break`, `Elsa.Complete`, `Elsa.End` and
//! `Elsa.Finish` as terminal nodes, as Elsa's describer marks its `IStartNode` and
//! `ITerminalNode` activities. Every built-in is listed as browsable, including the few that
//! Elsa Server reports with `isBrowsable: false` because Elsa hides them from its toolbox
//! (`Flowchart`, `Sequence`, `Parallel`, `Fork`, `Inline`, `Workflow`, `NotFoundActivity`,
//! `BpmnProcess` and the alteration-plan activities): a definition may still use them.
//!
//! It is what validation uses when no Elsa server is at hand. Activities that Elsa creates at
//! run time (workflows used as activities, agent activities, other dynamic providers) cannot be
//! in it; a host that knows them passes its own catalog instead.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;

use crate::{ActivityCatalog, ActivityDescriptor, TenantId, WorkflowError};

static BUILTIN: LazyLock<Arc<[ActivityDescriptor]>> = LazyLock::new(|| {
    // The file is part of the crate and a unit test reads it; it cannot fail at run time.
    ActivityDescriptor::catalog_from_json_str(include_str!("../catalog/builtin.json"))
        .expect("catalog/builtin.json is a valid activity catalog")
        .into()
});

/// Elsa 3's built-in activity descriptors, sorted by type name.
pub fn builtin_catalog() -> &'static [ActivityDescriptor] {
    &BUILTIN
}

/// The descriptor of a built-in activity type, if Elsa has one by that name.
pub fn builtin_descriptor(type_name: &str) -> Option<&'static ActivityDescriptor> {
    BUILTIN
        .binary_search_by(|descriptor| descriptor.type_name.as_str().cmp(type_name))
        .ok()
        .and_then(|index| BUILTIN.get(index))
}

/// An [`ActivityCatalog`] that offers every tenant the built-in activities.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinActivityCatalog;

#[async_trait]
impl ActivityCatalog for BuiltinActivityCatalog {
    async fn list(&self, _tenant: &TenantId) -> Result<Arc<[ActivityDescriptor]>, WorkflowError> {
        Ok(Arc::clone(&BUILTIN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_catalog_reads_and_is_sorted_without_duplicates() {
        let catalog = builtin_catalog();
        assert!(catalog.len() >= 50, "{} descriptors", catalog.len());
        for pair in catalog.windows(2) {
            assert!(
                pair[0].type_name < pair[1].type_name,
                "{} before {}",
                pair[0].type_name,
                pair[1].type_name
            );
        }
        for descriptor in catalog {
            assert_eq!(
                builtin_descriptor(&descriptor.type_name),
                Some(descriptor),
                "lookup of {}",
                descriptor.type_name
            );
            assert!(
                descriptor.display_name.is_some(),
                "{}",
                descriptor.type_name
            );
            assert!(!descriptor.outcomes.is_empty(), "{}", descriptor.type_name);
        }
    }

    #[test]
    fn core_facts_hold() {
        let decision = builtin_descriptor("Elsa.FlowDecision").expect("FlowDecision");
        assert_eq!(decision.outcomes, ["True", "False"]);
        let switch = builtin_descriptor("Elsa.FlowSwitch").expect("FlowSwitch");
        assert!(switch.has_dynamic_outcomes());
        let fork = builtin_descriptor("Elsa.FlowFork").expect("FlowFork");
        assert!(fork.allows_outcome("Branch 1"));
        let script = builtin_descriptor("Elsa.RunJavaScript").expect("RunJavaScript");
        assert!(script.has_dynamic_outcomes());
        let cron = builtin_descriptor("Elsa.Cron").expect("Cron");
        assert!(cron.is_trigger() && cron.input("cronExpression").is_some());
        let flowchart = builtin_descriptor("Elsa.Flowchart").expect("Flowchart");
        assert!(flowchart.is_container);
        let write_line = builtin_descriptor("Elsa.WriteLine").expect("WriteLine");
        assert!(!write_line.allows_outcome("True"));
        assert!(builtin_descriptor("Elsa.Nothing").is_none());
    }

    #[test]
    fn start_and_terminal_nodes_are_marked_as_elsa_marks_them() {
        // Elsa's `ActivityDescriber` sets `isStart` for `IStartNode` and `isTerminal` for
        // `ITerminalNode` implementations.
        let starts: Vec<&str> = builtin_catalog()
            .iter()
            .filter(|d| d.is_start)
            .map(|d| d.type_name.as_str())
            .collect();
        assert_eq!(starts, ["Elsa.Start"]);
        let terminals: Vec<&str> = builtin_catalog()
            .iter()
            .filter(|d| d.is_terminal)
            .map(|d| d.type_name.as_str())
            .collect();
        assert_eq!(
            terminals,
            ["Elsa.Break", "Elsa.Complete", "Elsa.End", "Elsa.Finish"]
        );
        assert!(builtin_catalog().iter().all(|d| d.is_browsable));
        let start = builtin_descriptor("Elsa.Start").expect("Start");
        assert!(start.can_start_workflow() && !start.is_trigger());
        let http = builtin_descriptor("Elsa.HttpEndpoint").expect("HttpEndpoint");
        assert!(http.can_start_workflow());
        let write_line = builtin_descriptor("Elsa.WriteLine").expect("WriteLine");
        assert!(!write_line.can_start_workflow());
    }

    #[tokio::test]
    async fn the_catalog_service_lists_the_builtin_descriptors() {
        let listed = BuiltinActivityCatalog
            .list(&TenantId::new("acme"))
            .await
            .expect("listed");
        assert_eq!(&*listed, builtin_catalog());
    }
}
