//! The Elsa Workflows side of Weaver. (Initial shell: crate docs follow with the full model.)

mod definition;
mod descriptor;
mod diagnostic;
mod diff;
mod error;
mod instance;
mod page;
pub mod store;
mod tenant;

pub use definition::WorkflowDefinition;
pub use descriptor::ActivityDescriptor;
pub use diagnostic::{Diagnostic, DiagnosticCode, Severity};
pub use diff::GraphDiff;
pub use error::{ParseError, WorkflowError};
pub use instance::{WorkflowInstance, WorkflowStatus, WorkflowSubStatus};
pub use page::{Page, PageRequest, TimeRange};
pub use store::{
    ActivityCatalog, DefinitionQuery, DefinitionSummary, DefinitionVersionRef, InstanceQuery,
    VersionOptions, WorkflowDefinitionStore, WorkflowDefinitionWriter, WorkflowInstanceStore,
};
pub use tenant::TenantId;
