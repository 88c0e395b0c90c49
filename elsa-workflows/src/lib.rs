//! The Elsa Workflows side of Weaver: Elsa 3 workflow definitions, instances and activity
//! descriptors as typed views over the JSON Elsa writes (unknown fields kept, bad shapes
//! reported as a [`ParseError`] with a JSON path), and the service traits in [`store`]
//! through which everything above this crate reaches Elsa data, tenant by tenant. It also
//! holds draft validation, graph diff, an in-memory backend ([`InMemoryWorkflowBackend`],
//! seeded from code, from a folder of Elsa JSON files or from the built-in [`samples`]) and
//! Elsa's built-in activity catalog.
//!
//! ```
//! use elsa_workflows::{
//!     InMemoryWorkflowBackend, TenantId, VersionOptions, WorkflowDefinitionStore, samples,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), elsa_workflows::WorkflowError> {
//! let backend = InMemoryWorkflowBackend::new();
//! let acme = TenantId::new("acme");
//! let report = samples::seed(&backend, &acme);
//! assert!(report.is_complete());
//!
//! // The backend is every service at once; look it up as a definition store.
//! let definitions: &dyn WorkflowDefinitionStore = &backend;
//! let published = definitions
//!     .find(&acme, "sample-order-approval", VersionOptions::Published)
//!     .await?
//!     .expect("seeded");
//! assert_eq!(published.version(), 1);
//! assert!(published.find_activity("CheckAmount").is_some());
//!
//! // Another tenant sees nothing of acme's.
//! let globex = TenantId::new("globex");
//! let hidden = definitions
//!     .find(&globex, "sample-order-approval", VersionOptions::Latest)
//!     .await?;
//! assert!(hidden.is_none());
//! # Ok(())
//! # }
//! ```
//!
//! Drafts are checked with a [`DraftValidator`] (stable diagnostic codes, activity ids and
//! JSON paths; see [`validate`]) and compared with [`GraphDiff`] for review (see [`diff`]):
//!
//! ```
//! use elsa_workflows::{DiagnosticCode, DraftValidator, GraphDiff, WorkflowDefinition};
//!
//! let before = WorkflowDefinition::new_flowchart("greeter", "Greeter");
//! let after: WorkflowDefinition = r#"{
//!     "definitionId": "greeter", "name": "Greeter",
//!     "root": {"id": "Flowchart1", "type": "Elsa.Flowchart", "activities": [
//!         {"id": "start", "type": "Elsa.Start", "version": 1},
//!         {"id": "hello", "type": "Elsa.WriteLine", "version": 1,
//!          "text": {"typeName": "String", "expression": {"type": "Literal", "value": "Hello"}}}
//!     ], "connections": [
//!         {"source": {"activity": "start", "port": "Done"}, "target": {"activity": "hello", "port": "In"}},
//!         {"source": {"activity": "hello", "port": "True"}, "target": {"activity": "start", "port": "In"}}
//!     ]}
//! }"#
//! .parse()?;
//!
//! // The built-in catalog knows Elsa's activities: WriteLine has no `True` outcome.
//! let diagnostics = DraftValidator::builtin().validate(&after);
//! assert_eq!(diagnostics.len(), 1);
//! assert_eq!(diagnostics[0].code, DiagnosticCode::UnknownPort);
//! assert_eq!(diagnostics[0].path, "$.root.connections[1].source.port");
//!
//! // What a reviewer sees: two activities and two connections added.
//! let diff = GraphDiff::between(&before, &after);
//! assert_eq!(diff.counts().activities_added, 2);
//! assert_eq!(diff.counts().connections_added, 2);
//! # Ok::<(), elsa_workflows::ParseError>(())
//! ```

mod catalog;
mod definition;
mod descriptor;
mod diagnostic;
pub mod diff;
mod edit;
#[cfg(feature = "elsa-server")]
pub mod elsa_server;
mod error;
mod instance;
mod json;
mod memory;
mod page;
mod router;
pub mod samples;
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
pub use diff::{DiffCounts, GraphDiff};
pub use edit::EditError;
#[cfg(feature = "elsa-server")]
pub use elsa_server::{
    ElsaCredentials, ElsaServerBackend, ElsaServerConfig, ElsaServerConfigError,
};
pub use error::{ParseError, WorkflowError};
pub use instance::{
    ActivityExecutionRecord, ActivityStatus, Bookmark, ExceptionInfo, ExecutionLogEntry,
    ExecutionRecordSource, Incident, WorkflowInstance, WorkflowStatus, WorkflowSubStatus,
};
#[cfg(feature = "folder")]
pub use memory::FolderDefinitionWriter;
pub use memory::{InMemoryWorkflowBackend, SeedReport, SkippedFile, SupersededSnapshot};
pub use page::{Page, PageRequest, TimeRange};
pub use router::{TenantRouter, WorkflowServices};
pub use store::{
    ActivityCatalog, DefinitionQuery, DefinitionSummary, DefinitionVersionRef,
    ExecutionRecordStore, IncidentQuery, IncidentSearch, IncidentStore, InstanceIncident,
    InstanceQuery, VersionOptions, WorkflowDefinitionPublisher, WorkflowDefinitionStore,
    WorkflowDefinitionWriter, WorkflowInstanceOperator, WorkflowInstanceStore,
};
pub use tenant::TenantId;
pub use validate::{DraftValidator, mark_predating};
