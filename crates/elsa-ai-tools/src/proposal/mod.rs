//! Proposal tools: drafts and patches a model writes, turned into reviewable proposals.

pub mod draft;
pub mod patch;
