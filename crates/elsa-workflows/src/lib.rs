//! The Elsa Workflows side of Weaver.

mod catalog;
mod definition;
mod descriptor;
mod diagnostic;
pub mod diff;
mod edit;
mod error;
mod instance;
mod json;
mod memory;
mod page;
pub mod store;
mod tenant;
pub mod validate;

pub use catalog::{BuiltinActivityCatalog, builtin_catalog, builtin_descriptor};
pub use definition::{
    Activity, ActivityInput, ActivityNode, ActivitySlot, Connection, ConnectionShape,
    DEFAULT_SOURCE_PORT, DEFAULT_TARGET_PORT, DesignerMetadata, Endpoint, Expression,
    InputExpression, InputValue, IoDeclaration, NewVariable, Variable, WorkflowDefinition,
};
pub use descriptor::{
    ActivityDescriptor, ActivityKind, EmbeddedPort, InputDescriptor, OutputDescriptor,
    PortDescriptor,
};
pub use diagnostic::{Diagnostic, DiagnosticCode, Severity};
pub use diff::GraphDiff;
pub use edit::EditError;
pub use error::{ParseError, WorkflowError};
pub use instance::{
    ActivityExecutionRecord, ActivityStatus, Bookmark, ExceptionInfo, ExecutionRecordSource,
    Incident, WorkflowInstance, WorkflowStatus, WorkflowSubStatus,
};
pub use memory::{InMemoryWorkflowBackend, SeedReport, SkippedFile, SupersededSnapshot};
pub use page::{Page, PageRequest, TimeRange};
pub use store::{
    ActivityCatalog, DefinitionQuery, DefinitionSummary, DefinitionVersionRef, InstanceQuery,
    VersionOptions, WorkflowDefinitionStore, WorkflowDefinitionWriter, WorkflowInstanceStore,
};
pub use tenant::TenantId;
pub use validate::DraftValidator;
