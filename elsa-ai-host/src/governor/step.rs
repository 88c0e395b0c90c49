use elsa_ai_abstractions::AiError;

/// The eleven steps of governed tool execution (SPEC §3), in their contractual order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum GovernanceStep {
    /// 1. The caller is an authenticated actor; their tenant is known.
    ResolveActor,
    /// 2. The agent exists, is enabled and its scope names the tool.
    ResolveAgentScope,
    /// 3. The tool is registered and admits the agent.
    FindTool,
    /// 4. The tool is enabled in the tenant, globally and for the agent.
    CheckEnablement,
    /// 5. The tool's tenant behaviour holds for this caller and these arguments.
    CheckTenantBehavior,
    /// 6. The caller, narrowed by the agent, holds every permission; the caller owns the conversation.
    CheckPermissions,
    /// 7. Mutability and danger policy.
    CheckMutabilityPolicy,
    /// 8. Arguments are redacted.
    RedactArguments,
    /// 9. Arguments are validated against the schema and the tool runs under its timeout.
    ExecuteTool,
    /// 10. The result (or error) is redacted and clamped.
    RedactResult,
    /// 11. Audit record, stream events, counters.
    EmitEvents,
}

impl GovernanceStep {
    /// Every step, in order.
    pub const ALL: [Self; 11] = [
        Self::ResolveActor,
        Self::ResolveAgentScope,
        Self::FindTool,
        Self::CheckEnablement,
        Self::CheckTenantBehavior,
        Self::CheckPermissions,
        Self::CheckMutabilityPolicy,
        Self::RedactArguments,
        Self::ExecuteTool,
        Self::RedactResult,
        Self::EmitEvents,
    ];

    /// The step's position, 1 to 11.
    pub fn number(self) -> usize {
        self as usize + 1
    }

    /// The step's camelCase name, as audit records carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ResolveActor => "resolveActor",
            Self::ResolveAgentScope => "resolveAgentScope",
            Self::FindTool => "findTool",
            Self::CheckEnablement => "checkEnablement",
            Self::CheckTenantBehavior => "checkTenantBehavior",
            Self::CheckPermissions => "checkPermissions",
            Self::CheckMutabilityPolicy => "checkMutabilityPolicy",
            Self::RedactArguments => "redactArguments",
            Self::ExecuteTool => "executeTool",
            Self::RedactResult => "redactResult",
            Self::EmitEvents => "emitEvents",
        }
    }
}

/// Watches the pipeline: told after each step of each call whether it let the call pass.
/// For tracing and tests (for example, proving that a refused call stops where it should).
pub trait StepObserver: Send + Sync {
    /// `step` finished for `call_id`; `error` is set when the step refused the call (steps
    /// 1–7) or the execution failed (step 9).
    fn step_finished(&self, call_id: &str, step: GovernanceStep, error: Option<&AiError>);
}

/// A check step's refusal: which step stopped the call and why.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Refusal {
    pub step: GovernanceStep,
    pub error: AiError,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_numbered_in_contract_order() {
        let numbers: Vec<usize> = GovernanceStep::ALL.iter().map(|s| s.number()).collect();
        assert_eq!(numbers, (1..=11).collect::<Vec<_>>());
        assert!(GovernanceStep::CheckEnablement < GovernanceStep::CheckPermissions);
        assert_eq!(GovernanceStep::EmitEvents.as_str(), "emitEvents");
    }
}
