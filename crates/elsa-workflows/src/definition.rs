//! Elsa 3 workflow definitions. (Initial shell: replaced by the full model.)

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An Elsa 3 workflow definition that writes back exactly what was read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkflowDefinition {
    document: Value,
}

impl WorkflowDefinition {
    /// The stable definition id shared by all versions.
    pub fn definition_id(&self) -> &str {
        self.document
            .get("definitionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}
