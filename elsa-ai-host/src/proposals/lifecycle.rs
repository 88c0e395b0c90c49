//! The proposal state machine: which action may leave which state, and what it needs.

use elsa_ai_abstractions::{AuditAction, Permission, ProposalStatus};
use serde::{Deserialize, Serialize};

/// What a person (or the expiry sweep) can do to a stored proposal.
///
/// | action | from | to | permission |
/// |---|---|---|---|
/// | `Validate` | Draft, Blocked | Validated or Blocked | `propose:workflows` |
/// | `Approve` | Validated | Approved | `apply:workflows` |
/// | `Reject` | Validated, Blocked, Approved | Rejected | `apply:workflows` |
/// | `Apply` | Approved | Applied (or Blocked when validation now fails) | `apply:workflows` |
/// | `Expire` | Validated, Blocked, Approved | Expired | `apply:workflows` |
/// | `DropTargets` | Validated | Validated (fewer targets) | `apply:workflows` |
///
/// Operations (retry, cancel, restart, publish, unpublish, delete) also need their kind's
/// permission ([`ProposalKind::operation_permission`](elsa_ai_abstractions::ProposalKind))
/// to be approved and applied.
///
/// These are exactly the transitions [`ProposalStatus`] documents; creating a proposal
/// (Draft → Validated or Blocked in one step) is not an action on a stored proposal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ProposalAction {
    /// Runs validation again against the tenant's current activity catalog.
    Validate,
    /// A reviewer accepts the proposal for applying.
    Approve,
    /// A reviewer turns it down, with a reason.
    Reject,
    /// Writes the definition through the workflow store.
    Apply,
    /// Retires it; the sweep does this when `expires_at` has passed.
    Expire,
    /// A reviewer removes targets from an instance operation before approving it.
    DropTargets,
}

impl ProposalAction {
    /// Every action.
    pub const ALL: [Self; 6] = [
        Self::Validate,
        Self::Approve,
        Self::Reject,
        Self::Apply,
        Self::Expire,
        Self::DropTargets,
    ];

    /// The action's name as it appears in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validate => "validate",
            Self::Approve => "approve",
            Self::Reject => "reject",
            Self::Apply => "apply",
            Self::Expire => "expire",
            Self::DropTargets => "dropTargets",
        }
    }

    /// The states this action may start from.
    pub fn allowed_from(self) -> &'static [ProposalStatus] {
        use ProposalStatus::{Approved, Blocked, Draft, Validated};
        match self {
            Self::Validate => &[Draft, Blocked],
            Self::Approve | Self::DropTargets => &[Validated],
            Self::Apply => &[Approved],
            Self::Reject | Self::Expire => &[Validated, Blocked, Approved],
        }
    }

    /// Whether the action may start from `status`.
    pub fn is_allowed_from(self, status: ProposalStatus) -> bool {
        self.allowed_from().contains(&status)
    }

    /// The permission the caller needs.
    pub fn permission(self) -> Permission {
        match self {
            Self::Validate => Permission::PROPOSE_WORKFLOWS,
            Self::Approve | Self::Reject | Self::Apply | Self::Expire | Self::DropTargets => {
                Permission::APPLY_WORKFLOWS
            }
        }
    }

    /// The audit action its records carry (success, failure or refusal alike).
    pub fn audit_action(self) -> AuditAction {
        match self {
            Self::Validate => AuditAction::PROPOSAL_VALIDATED,
            Self::Approve => AuditAction::PROPOSAL_APPROVED,
            Self::Reject => AuditAction::PROPOSAL_REJECTED,
            Self::Apply => AuditAction::PROPOSAL_APPLIED,
            Self::Expire => AuditAction::PROPOSAL_EXPIRED,
            Self::DropTargets => AuditAction::PROPOSAL_TARGETS_DROPPED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_states_allow_no_action() {
        for status in ProposalStatus::ALL.into_iter().filter(|s| s.is_final()) {
            for action in ProposalAction::ALL {
                assert!(
                    !action.is_allowed_from(status),
                    "{action:?} from {status:?}"
                );
            }
        }
    }

    #[test]
    fn the_table_matches_the_documented_transitions() {
        use ProposalStatus::*;
        // (from, to) pairs documented on ProposalStatus, and the action producing each.
        let documented = [
            (Draft, Validated, ProposalAction::Validate),
            (Draft, Blocked, ProposalAction::Validate),
            (Validated, Approved, ProposalAction::Approve),
            (Validated, Rejected, ProposalAction::Reject),
            (Validated, Expired, ProposalAction::Expire),
            (Blocked, Validated, ProposalAction::Validate),
            (Blocked, Rejected, ProposalAction::Reject),
            (Blocked, Expired, ProposalAction::Expire),
            (Approved, Applied, ProposalAction::Apply),
            (Approved, Blocked, ProposalAction::Apply),
            (Approved, Rejected, ProposalAction::Reject),
            (Approved, Expired, ProposalAction::Expire),
            (Validated, Validated, ProposalAction::DropTargets),
        ];
        for (from, _, action) in documented {
            assert!(action.is_allowed_from(from), "{action:?} from {from:?}");
        }
        let allowed: usize = ProposalAction::ALL
            .iter()
            .map(|a| a.allowed_from().len())
            .sum();
        // Validate leaves Draft two ways and Apply leaves Approved two ways.
        assert_eq!(allowed, documented.len() - 2);
    }
}
