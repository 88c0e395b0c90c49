use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The tenant that owns a workflow, an instance or any AI artefact.
///
/// Every store call takes one: data of one tenant is never visible through another's id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
// Shared text: every store call, event and audit record carries the tenant, and a clone is a
// reference count, not a copy.
pub struct TenantId(Arc<str>);

impl TenantId {
    /// Wraps a tenant identifier as given by the host.
    pub fn new(id: impl Into<String>) -> Self {
        Self(Arc::from(id.into()))
    }

    /// The identifier as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for TenantId {
    fn from(value: &str) -> Self {
        Self(Arc::from(value))
    }
}

impl From<String> for TenantId {
    fn from(value: String) -> Self {
        Self(Arc::from(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_the_text_and_the_wire_form_is_a_plain_string() {
        let tenant = TenantId::new(String::from("acme"));
        let copy = tenant.clone();
        assert_eq!(
            tenant.as_str().as_ptr(),
            copy.as_str().as_ptr(),
            "not copied"
        );
        assert_eq!(serde_json::to_string(&tenant).unwrap(), "\"acme\"");
        let back: TenantId = serde_json::from_str("\"acme\"").unwrap();
        assert_eq!(back, TenantId::from("acme"));
        assert_eq!(back.to_string(), "acme");
    }
}
