//! Step 5: tenant behaviour.

use elsa_ai_abstractions::{AiError, AiToolDefinition, TenantBehavior};
use serde_json::Value;

use super::Actor;
use crate::registry::requires_tenant;

/// Tenant-scoped and cross-tenant-denied tools need a caller in a tenant (403
/// `tenant_required`); a cross-tenant-denied tool refuses arguments that name another tenant
/// anywhere (a `tenant`/`tenantId`/`tenant_id` key, any case or separator, whose value is a
/// different tenant id; 403 `cross_tenant_denied`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CheckTenantBehavior;

impl CheckTenantBehavior {
    pub fn run(
        &self,
        actor: &Actor<'_>,
        definition: &AiToolDefinition,
        arguments: &Value,
    ) -> Result<(), AiError> {
        let Some(tenant) = actor.tenant else {
            return if requires_tenant(definition) {
                Err(AiError::forbidden(
                    "tenant_required",
                    format!(
                        "tool '{}' works on tenant data and needs a caller in a tenant",
                        definition.name
                    ),
                ))
            } else {
                Ok(())
            };
        };
        if definition.tenant_behavior == TenantBehavior::CrossTenantDenied
            && names_other_tenant(arguments, tenant.as_str())
        {
            return Err(AiError::forbidden(
                "cross_tenant_denied",
                format!(
                    "tool '{}' never works on a tenant other than the caller's",
                    definition.name
                ),
            ));
        }
        Ok(())
    }
}

fn is_tenant_key(key: &str) -> bool {
    let mut normalized = key
        .bytes()
        .filter(|b| !matches!(b, b'_' | b'-' | b'.' | b' '));
    let mut matches_word = |word: &[u8]| {
        word.iter()
            .all(|w| normalized.next().is_some_and(|b| b.eq_ignore_ascii_case(w)))
    };
    if !matches_word(b"tenant") {
        return false;
    }
    let rest: Vec<u8> = normalized.map(|b| b.to_ascii_lowercase()).collect();
    rest.is_empty() || rest == b"id"
}

fn names_other_tenant(value: &Value, tenant: &str) -> bool {
    let other = |v: &Value| match v {
        Value::String(s) => s != tenant,
        Value::Array(items) => items
            .iter()
            .any(|i| i.as_str().is_some_and(|s| s != tenant)),
        _ => false,
    };
    match value {
        Value::Object(map) => map.iter().any(|(key, item)| {
            (is_tenant_key(key) && other(item)) || names_other_tenant(item, tenant)
        }),
        Value::Array(items) => items.iter().any(|item| names_other_tenant(item, tenant)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::AiCaller;
    use serde_json::json;

    use super::*;
    use crate::governor::steps::ResolveActor;
    use crate::testing::governance::read_tool;

    #[test]
    fn tenant_scoped_tools_need_a_tenant_host_scoped_do_not() {
        let host_caller = AiCaller::new("ops", "", []);
        let actor = ResolveActor.run(&host_caller).unwrap();
        let scoped = read_tool("demo.read");
        let error = CheckTenantBehavior
            .run(&actor, &scoped, &json!({}))
            .unwrap_err();
        assert_eq!((error.status(), error.code()), (403, "tenant_required"));
        let mut host = read_tool("demo.host");
        host.tenant_behavior = TenantBehavior::HostScoped;
        CheckTenantBehavior.run(&actor, &host, &json!({})).unwrap();
    }

    #[test]
    fn cross_tenant_denied_tools_refuse_another_tenants_id_anywhere() {
        let caller = AiCaller::new("alice", "acme", []);
        let actor = ResolveActor.run(&caller).unwrap();
        let mut tool = read_tool("demo.cross");
        tool.tenant_behavior = TenantBehavior::CrossTenantDenied;
        for refused in [
            json!({"tenantId": "globex"}),
            json!({"filter": {"TENANT_ID": "globex"}}),
            json!({"items": [{"tenant": "globex"}]}),
            json!({"tenant-id": ["acme", "globex"]}),
        ] {
            let error = CheckTenantBehavior
                .run(&actor, &tool, &refused)
                .unwrap_err();
            assert_eq!(error.code(), "cross_tenant_denied", "{refused}");
        }
        for allowed in [
            json!({"tenantId": "acme"}),
            json!({"tenantName": "globex"}),
            json!({"tenant": null}),
        ] {
            CheckTenantBehavior.run(&actor, &tool, &allowed).unwrap();
        }
    }
}
