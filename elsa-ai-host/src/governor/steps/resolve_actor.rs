//! Step 1: resolve actor and tenant.

use elsa_ai_abstractions::{AiCaller, AiError};
use elsa_workflows::TenantId;

/// Who the call is made for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Actor<'a> {
    pub caller: &'a AiCaller,
    /// `None` for a host-level caller (empty tenant id).
    pub tenant: Option<&'a TenantId>,
}

/// Refuses calls without an authenticated actor; a blank tenant means "no tenant".
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ResolveActor;

impl ResolveActor {
    pub fn run<'a>(&self, caller: &'a AiCaller) -> Result<Actor<'a>, AiError> {
        if caller.actor_id.trim().is_empty() {
            return Err(AiError::unauthenticated(
                "the tool call has no authenticated actor",
            ));
        }
        let tenant = (!caller.tenant_id.as_str().trim().is_empty()).then_some(&caller.tenant_id);
        Ok(Actor { caller, tenant })
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::Permission;

    use super::*;

    #[test]
    fn an_anonymous_caller_is_refused_with_401() {
        let caller = AiCaller::new(" ", "acme", [Permission::READ_WORKFLOWS]);
        assert_eq!(ResolveActor.run(&caller).unwrap_err().status(), 401);
    }

    #[test]
    fn the_tenant_is_resolved_and_blank_means_none() {
        let caller = AiCaller::new("alice", "acme", []);
        assert_eq!(
            ResolveActor
                .run(&caller)
                .unwrap()
                .tenant
                .map(TenantId::as_str),
            Some("acme")
        );
        let host = AiCaller::new("ops", "", []);
        assert_eq!(ResolveActor.run(&host).unwrap().tenant, None);
    }
}
