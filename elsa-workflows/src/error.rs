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
#[non_exhaustive]
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
    /// The backend refused Weaver's own credentials (an Elsa Server answering 401): a
    /// configuration problem of the host, not of the caller.
    #[error("workflow backend refused Weaver's credentials: {message}")]
    Unauthorized {
        /// Which backend refused what; never the credential itself.
        message: String,
    },
    /// The backend could not be reached, did not answer in time, or failed on its side (a
    /// 5xx answer); trying again later may succeed.
    #[error("workflow backend unavailable: {message}")]
    Unavailable {
        /// Which backend failed how.
        message: String,
    },
    /// The backend answered, but not with what was asked for (a body that is not JSON, or
    /// not an Elsa definition, instance, list or catalog); the path points into its answer.
    #[error("workflow backend answered with an unreadable body: {0}")]
    InvalidAnswer(ParseError),
    /// The backend failed otherwise (I/O, a refused request, a misconfigured URL).
    #[error("workflow backend failed: {message}")]
    Backend {
        /// What failed.
        message: String,
    },
}
