//! Step 7: mutability and danger policy.

use std::collections::BTreeSet;

use elsa_ai_abstractions::{AiError, AiToolDefinition, Permission};

use crate::registry::ToolPolicy;

/// Applies the host's [`ToolPolicy`]: Administrative tools are always refused (403
/// `administrative_tool_denied`), Proposal tools need `propose:workflows` (403
/// `permission_denied`; their enablement was checked in step 4), and no tool above the
/// maximum danger level runs (403 `danger_level_exceeded`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CheckMutabilityPolicy<'r> {
    pub policy: &'r ToolPolicy,
}

impl CheckMutabilityPolicy<'_> {
    pub fn run(
        &self,
        definition: &AiToolDefinition,
        permissions: &BTreeSet<Permission>,
    ) -> Result<(), AiError> {
        self.policy.check(definition, permissions)
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::{DangerLevel, ToolMutability};

    use super::*;
    use crate::testing::governance::{proposal_tool, read_tool};

    #[test]
    fn administrative_proposal_and_danger_rules() {
        let policy = ToolPolicy {
            max_danger_level: DangerLevel::Medium,
        };
        let step = CheckMutabilityPolicy { policy: &policy };
        let all: BTreeSet<Permission> =
            [Permission::READ_WORKFLOWS, Permission::PROPOSE_WORKFLOWS].into();
        let read_only: BTreeSet<Permission> = [Permission::READ_WORKFLOWS].into();

        step.run(&read_tool("demo.read"), &read_only).unwrap();
        step.run(&proposal_tool("demo.propose"), &all).unwrap();
        assert_eq!(
            step.run(&proposal_tool("demo.propose"), &read_only)
                .unwrap_err()
                .code(),
            "permission_denied"
        );

        let mut admin = read_tool("demo.admin");
        admin.mutability = ToolMutability::Administrative;
        let error = step.run(&admin, &all).unwrap_err();
        assert_eq!(
            (error.status(), error.code()),
            (403, "administrative_tool_denied")
        );

        let mut dangerous = read_tool("demo.dangerous");
        dangerous.danger_level = DangerLevel::High;
        assert_eq!(
            step.run(&dangerous, &all).unwrap_err().code(),
            "danger_level_exceeded"
        );
    }
}
