//! Graph diff between two definitions. (Initial shell: replaced by the full diff.)

use serde::{Deserialize, Serialize};

/// What changed between two versions of a workflow, shaped for a review screen.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphDiff {}
