//! Activity descriptors. (Initial shell: replaced by the full model.)

use serde::{Deserialize, Serialize};

/// Describes one activity type of the catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityDescriptor {
    /// Full type name, for example `Elsa.WriteLine`.
    pub type_name: String,
}
