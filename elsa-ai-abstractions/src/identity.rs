use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use elsa_workflows::TenantId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A permission a caller holds, such as `read:workflows`.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct Permission(Cow<'static, str>);

impl Permission {
    /// Read workflow definitions.
    pub const READ_WORKFLOWS: Self = Self::from_static("read:workflows");
    /// Read workflow instances and their execution records.
    pub const READ_WORKFLOW_INSTANCES: Self = Self::from_static("read:workflow-instances");
    /// Read the activity catalog.
    pub const READ_ACTIVITIES: Self = Self::from_static("read:activities");
    /// Create and validate workflow proposals.
    pub const PROPOSE_WORKFLOWS: Self = Self::from_static("propose:workflows");
    /// Approve, reject and apply workflow proposals.
    pub const APPLY_WORKFLOWS: Self = Self::from_static("apply:workflows");
    /// Administer the AI platform: tool enablement and the audit trail.
    pub const ADMIN_AI: Self = Self::from_static("admin:ai");
    /// Search a tenant's runtime records (instances, incidents) without naming a workflow,
    /// instance, diagnostics scope or time range (SPEC §9, upstream FR-010).
    pub const ANALYZE_TENANT: Self = Self::from_static("analyze:tenant");
    /// Propose, approve and apply operations on workflow instances (retry, cancel,
    /// restart), besides the proposal permissions.
    pub const OPERATE_WORKFLOW_INSTANCES: Self = Self::from_static("operate:workflow-instances");
    /// Propose, approve and apply publishing, unpublishing and deleting definitions,
    /// besides the proposal permissions.
    pub const PUBLISH_WORKFLOWS: Self = Self::from_static("publish:workflows");

    /// Every permission Weaver defines.
    pub const ALL: [Self; 9] = [
        Self::READ_WORKFLOWS,
        Self::READ_WORKFLOW_INSTANCES,
        Self::READ_ACTIVITIES,
        Self::PROPOSE_WORKFLOWS,
        Self::APPLY_WORKFLOWS,
        Self::ADMIN_AI,
        Self::ANALYZE_TENANT,
        Self::OPERATE_WORKFLOW_INSTANCES,
        Self::PUBLISH_WORKFLOWS,
    ];

    /// A permission from a static name.
    pub const fn from_static(name: &'static str) -> Self {
        Self(Cow::Borrowed(name))
    }

    /// A permission from a runtime name (configuration, token claims).
    pub fn new(name: impl Into<String>) -> Self {
        Self(Cow::Owned(name.into()))
    }

    /// The permission's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who is asking: the authenticated actor, the tenant they act in and what they may do.
///
/// Built by the server's identity extractor; never by a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AiCaller {
    /// The actor (user or service) id.
    pub actor_id: String,
    /// The tenant the actor works in.
    pub tenant_id: TenantId,
    /// The permissions granted to the actor.
    pub permissions: BTreeSet<Permission>,
}

impl AiCaller {
    /// A caller with the given permissions.
    pub fn new(
        actor_id: impl Into<String>,
        tenant_id: impl Into<TenantId>,
        permissions: impl IntoIterator<Item = Permission>,
    ) -> Self {
        Self {
            actor_id: actor_id.into(),
            tenant_id: tenant_id.into(),
            permissions: permissions.into_iter().collect(),
        }
    }

    /// Whether the caller holds `permission`.
    pub fn has(&self, permission: &Permission) -> bool {
        self.permissions.contains(permission)
    }

    /// `Ok` when the caller holds `permission`, else 403 `permission_denied` saying that
    /// `action` (for example "reading the audit trail") requires it.
    pub fn require(
        &self,
        permission: &Permission,
        action: impl std::fmt::Display,
    ) -> Result<(), crate::AiError> {
        if self.has(permission) {
            return Ok(());
        }
        Err(crate::AiError::forbidden(
            "permission_denied",
            format!("{action} requires '{permission}'"),
        ))
    }

    /// The first of `required` the caller lacks, if any.
    pub fn missing<'a>(&self, required: &'a [Permission]) -> Option<&'a Permission> {
        required.iter().find(|p| !self.has(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_the_first_absent_permission() {
        let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
        assert!(caller.has(&Permission::new("read:workflows")));
        let required = [Permission::READ_WORKFLOWS, Permission::ADMIN_AI];
        assert_eq!(caller.missing(&required), Some(&Permission::ADMIN_AI));
        assert_eq!(caller.missing(&required[..1]), None);
    }
}
