//! Elsa 3 workflow instances. (Initial shell: replaced by the full model.)

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An Elsa 3 workflow instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkflowInstance {
    document: Value,
}

/// The status of a workflow instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkflowStatus {
    /// Not finished yet.
    Running,
    /// Finished, successfully or not (see the sub-status).
    Finished,
}

/// The sub-status of a workflow instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkflowSubStatus {
    /// Waiting to run.
    Pending,
    /// Running right now.
    Executing,
    /// Waiting on a bookmark.
    Suspended,
    /// Completed.
    Finished,
    /// Cancelled.
    Cancelled,
    /// Failed.
    Faulted,
}
