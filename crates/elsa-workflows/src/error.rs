use thiserror::Error;

/// Why a JSON document is not a readable Elsa 3 artefact, and where.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{problem} at {path}")]
pub struct ParseError {
    /// What is wrong, in a sentence.
    pub problem: String,
    /// JSON path of the offending value, for example `$.root.activities[1]`.
    pub path: String,
}

/// The error type of every `elsa-workflows` operation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum WorkflowError {
    /// The JSON is not an Elsa 3 definition, instance or descriptor.
    #[error("invalid Elsa JSON: {0}")]
    Parse(#[from] ParseError),
    /// The object does not exist for this tenant.
    #[error("{what} not found")]
    NotFound {
        /// What was looked up, for example `workflow definition 'x'`.
        what: String,
    },
    /// A write lost an optimistic-concurrency race or would overwrite an existing object.
    #[error("conflict: {message}")]
    Conflict {
        /// What conflicted.
        message: String,
    },
    /// The backend failed (I/O, network, database).
    #[error("workflow backend failed: {message}")]
    Backend {
        /// What failed.
        message: String,
    },
}
