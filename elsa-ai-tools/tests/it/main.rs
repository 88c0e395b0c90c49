//! elsa-ai-tools' integration tests, one binary: each built-in tool through the host's governor,
//! the cross-tenant matrix and diagnostics scopes; `support` holds the worlds they share.

mod cross_tenant;
mod diagnostics_scope;
mod grounding_filters;
mod incident_tools;
mod instance_tools;
mod linking;
mod proposal_tools;
mod runtime_search;
mod support;
mod workflow_tools;
