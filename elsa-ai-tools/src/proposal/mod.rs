//! Proposal tools: drafts and patches a model writes, turned into reviewable proposals.
//!
//! [`draft`] holds the structured pieces a model writes (activities, inputs, connections,
//! variables, whole new workflows), [`patch`] the operation list `workflow.proposeUpdate`
//! takes, and the operational tools (retry, cancel, restart, publish, unpublish, delete)
//! propose acting on existing instances and definitions. The tools hand what they build to the host's
//! [`AiProposalIntake`](elsa_ai_abstractions::AiProposalIntake), which validates, diffs,
//! stores and audits it; none of them writes a workflow.

pub mod draft;
mod operations;
pub mod patch;
mod tools;

pub use operations::{DefinitionOperationInput, InstanceOperationInput, ProposeOperation};
pub use tools::{
    PatchTarget, ProposeCreate, ProposeCreateInput, ProposeUpdate, ProposeUpdateInput,
    ValidateDraft, ValidateDraftInput,
};
