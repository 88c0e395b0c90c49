//! Helpers for proposal tests: a [`ProposalHarness`] wiring the real [`ProposalService`]
//! over an in-memory proposal store, `elsa-workflows`' [`InMemoryWorkflowBackend`] (its
//! writer behind a [`CountingWriter`], its operations behind [`CountingOperations`]), a manual clock, one audit log, and a chat harness
//! whose conversation streams carry the `proposal.*` events.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiCaller, AiError, AiProposal, AiProposalStore, AiStreamEvent, AiStreamEventType,
    AiToolServices, BaselineRef, ConversationId, ManualClock, Permission, ProposalDraft,
    ProposalId, ProposalKind,
};
use elsa_workflows::{
    Activity, DEFAULT_SOURCE_PORT, DEFAULT_TARGET_PORT, DefinitionVersionRef, Endpoint,
    InMemoryWorkflowBackend, InputExpression, TenantId, VersionOptions, WorkflowDefinition,
    WorkflowDefinitionPublisher, WorkflowDefinitionStore, WorkflowDefinitionWriter, WorkflowError,
    WorkflowInstance, WorkflowInstanceOperator, builtin_catalog,
};
use futures::StreamExt;

use super::chat::{ChatHarness, ChatHarnessBuilder, REGISTERED_SECRET};
use super::governance::{TEST_TENANT, all_permissions};
use crate::audit::InMemoryAuditLog;
use crate::host_core::HostCore;
use crate::proposals::{
    InMemoryProposalStore, OperationServices, ProposalService, ProposalSettings,
};
use crate::redaction::Redactor;

/// Wraps a writer and counts attempted and successful writes.
pub struct CountingWriter {
    inner: Arc<dyn WorkflowDefinitionWriter>,
    attempts: AtomicUsize,
    writes: AtomicUsize,
}

impl std::fmt::Debug for CountingWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingWriter")
            .field("attempts", &self.attempts())
            .field("writes", &self.writes())
            .finish()
    }
}

impl CountingWriter {
    /// Counts the writes made through `inner`.
    pub fn new(inner: Arc<dyn WorkflowDefinitionWriter>) -> Self {
        Self {
            inner,
            attempts: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
        }
    }

    /// Writes attempted (successful or not).
    pub fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Writes that succeeded.
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    fn count<T>(&self, result: Result<T, WorkflowError>) -> Result<T, WorkflowError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if result.is_ok() {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        result
    }
}

#[async_trait]
impl WorkflowDefinitionWriter for CountingWriter {
    async fn create(
        &self,
        tenant: &TenantId,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let result = self.inner.create(tenant, definition).await;
        self.count(result)
    }

    async fn update(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        expected_version: i32,
        definition: WorkflowDefinition,
    ) -> Result<DefinitionVersionRef, WorkflowError> {
        let result = self
            .inner
            .update(tenant, definition_id, expected_version, definition)
            .await;
        self.count(result)
    }
}

/// Wraps the in-memory backend's instance operations and publication and counts the
/// operations carried out (successful or not).
pub struct CountingOperations {
    inner: Arc<InMemoryWorkflowBackend>,
    calls: AtomicUsize,
}

impl std::fmt::Debug for CountingOperations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingOperations")
            .field("calls", &self.calls())
            .finish()
    }
}

impl CountingOperations {
    /// Counts the operations made on `inner`.
    pub fn new(inner: Arc<InMemoryWorkflowBackend>) -> Self {
        Self {
            inner,
            calls: AtomicUsize::new(0),
        }
    }

    /// Operations attempted so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl WorkflowInstanceOperator for CountingOperations {
    async fn cancel(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        self.count();
        self.inner.cancel(tenant, instance_id).await
    }

    async fn retry(&self, tenant: &TenantId, instance_id: &str) -> Result<(), WorkflowError> {
        self.count();
        self.inner.retry(tenant, instance_id).await
    }

    async fn restart(
        &self,
        tenant: &TenantId,
        instance: &WorkflowInstance,
    ) -> Result<String, WorkflowError> {
        self.count();
        self.inner.restart(tenant, instance).await
    }
}

#[async_trait]
impl WorkflowDefinitionPublisher for CountingOperations {
    async fn publish(
        &self,
        tenant: &TenantId,
        definition_id: &str,
        version: i32,
    ) -> Result<(), WorkflowError> {
        self.count();
        self.inner.publish(tenant, definition_id, version).await
    }

    async fn unpublish(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        self.count();
        self.inner.unpublish(tenant, definition_id).await
    }

    async fn delete(&self, tenant: &TenantId, definition_id: &str) -> Result<(), WorkflowError> {
        self.count();
        self.inner.delete(tenant, definition_id).await
    }
}

/// A small valid flowchart: `Elsa.Start` (`start1`) connected to an `Elsa.WriteLine`
/// (`write1`) that writes `text`.
///
/// # Panics
///
/// Never for a plain id: the edits fit an empty flowchart.
pub fn sample_definition(definition_id: &str, text: &str) -> WorkflowDefinition {
    let mut definition =
        WorkflowDefinition::new_flowchart(definition_id, format!("Sample {definition_id}"));
    let built = definition
        .insert_activity(None, Activity::new("start1", "Elsa.Start"), None)
        .and_then(|()| {
            definition.insert_activity(None, Activity::new("write1", "Elsa.WriteLine"), None)
        })
        .and_then(|()| {
            definition.set_input("write1", "text", &InputExpression::literal("String", text))
        })
        .and_then(|()| {
            definition.add_connection(
                None,
                Endpoint::new("start1", DEFAULT_SOURCE_PORT),
                Endpoint::new("write1", DEFAULT_TARGET_PORT),
            )
        });
    built.expect("the sample edits fit an empty flowchart");
    definition
}

/// Adjusts the harness's chat harness (tools, script) before it is built.
type ChatSetup = Box<dyn FnOnce(ChatHarnessBuilder) -> ChatHarnessBuilder>;

/// Builds a [`ProposalHarness`].
#[derive(Default)]
pub struct ProposalHarnessBuilder {
    settings: ProposalSettings,
    store: Option<Arc<dyn AiProposalStore>>,
    chat: Option<ChatSetup>,
}

impl std::fmt::Debug for ProposalHarnessBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProposalHarnessBuilder")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl ProposalHarnessBuilder {
    /// The service's settings (default: [`ProposalSettings::default`]).
    pub fn settings(mut self, settings: ProposalSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Stores proposals in `store` instead of an [`InMemoryProposalStore`].
    pub fn store(mut self, store: Arc<dyn AiProposalStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Adjusts the chat harness (register tools, set the script); its services, proposal
    /// service, audit log and clock are the harness's.
    pub fn chat(
        mut self,
        setup: impl FnOnce(ChatHarnessBuilder) -> ChatHarnessBuilder + 'static,
    ) -> Self {
        self.chat = Some(Box::new(setup));
        self
    }

    /// Wires everything.
    pub fn build(self) -> ProposalHarness {
        let workflows = Arc::new(InMemoryWorkflowBackend::new());
        workflows.set_catalog(&TEST_TENANT.into(), builtin_catalog().to_vec());
        let writer = Arc::new(CountingWriter::new(workflows.clone()));
        let operations = Arc::new(CountingOperations::new(workflows.clone()));
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(InMemoryProposalStore::new()));
        let audit = Arc::new(InMemoryAuditLog::new());
        let clock = Arc::new(ManualClock::new(
            Utc.with_ymd_and_hms(2025, 1, 6, 9, 0, 0)
                .single()
                .expect("a valid instant"),
        ));
        let redactor = Arc::new(
            Redactor::builder()
                .secret(REGISTERED_SECRET)
                .build()
                .expect("the test secret is long enough"),
        );
        let core = HostCore::builder(redactor, audit.clone())
            .clock(clock.clone())
            .build();
        let service = core
            .proposals(
                store.clone(),
                workflows.clone(),
                writer.clone(),
                workflows.clone(),
            )
            .settings(self.settings)
            .operations(OperationServices {
                instances: workflows.clone(),
                operator: operations.clone(),
                publisher: operations.clone(),
            })
            .build();
        let services = AiToolServices {
            definitions: workflows.clone(),
            instances: workflows.clone(),
            executions: workflows.clone(),
            incidents: workflows.clone(),
            catalog: workflows.clone(),
            proposals: Arc::new(service.clone()),
        };
        let setup = self.chat.unwrap_or_else(|| Box::new(|builder| builder));
        let chat = setup(ChatHarness::builder())
            .services(services)
            .proposals(service.clone())
            .audit(audit.clone())
            .clock(clock.clone())
            .build();
        ProposalHarness {
            service,
            store,
            workflows,
            writer,
            operations,
            audit,
            clock,
            chat,
        }
    }
}

/// The real proposal service over in-memory stores, everything observable, for one test.
pub struct ProposalHarness {
    /// The service under test.
    pub service: ProposalService,
    /// Where proposals are stored.
    pub store: Arc<dyn AiProposalStore>,
    /// The workflow backend: definitions, instances, the catalog of [`TEST_TENANT`] (the
    /// built-in one) and, through `writer`, the service's writes.
    pub workflows: Arc<InMemoryWorkflowBackend>,
    /// The service's writer, counting writes into `workflows`.
    pub writer: Arc<CountingWriter>,
    /// The service's instance operations and publication, counted, on `workflows`.
    pub operations: Arc<CountingOperations>,
    /// Every audit record of the service and the chat harness.
    pub audit: Arc<InMemoryAuditLog>,
    /// The clock of the service and the chat harness.
    pub clock: Arc<ManualClock>,
    /// A chat harness whose tools submit to `service` and whose streams carry its events.
    pub chat: ChatHarness,
}

impl std::fmt::Debug for ProposalHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProposalHarness").finish_non_exhaustive()
    }
}

impl ProposalHarness {
    /// The conversation service over the harness's chat and proposal service (a 30-day
    /// retention window, a one-second wait for stopped turns).
    pub fn conversation_service(&self) -> crate::ConversationService {
        HostCore::builder(self.chat.redactor.clone(), self.audit.clone())
            .clock(self.clock.clone())
            .stores(self.chat.conversations.clone(), self.chat.journal.clone())
            .build()
            .conversation_service(
                self.chat.orchestrator.clone(),
                self.service.clone(),
                chrono::TimeDelta::days(30),
            )
            .stop_wait(std::time::Duration::from_secs(1))
    }

    /// A builder with default settings.
    pub fn builder() -> ProposalHarnessBuilder {
        ProposalHarnessBuilder::default()
    }

    /// A harness with default settings.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// `alice` in [`TEST_TENANT`] with every built-in permission.
    pub fn caller(&self) -> AiCaller {
        AiCaller::new("alice", TEST_TENANT, all_permissions())
    }

    /// Tool services over the harness's workflow backend whose intake is the real service,
    /// for other harnesses (`GovernanceHarness::builder().services(..)`).
    pub fn services(&self) -> AiToolServices {
        AiToolServices {
            definitions: self.workflows.clone(),
            instances: self.workflows.clone(),
            executions: self.workflows.clone(),
            incidents: self.workflows.clone(),
            catalog: self.workflows.clone(),
            proposals: Arc::new(self.service.clone()),
        }
    }

    /// The operation services the harness's service uses (for a second replica).
    pub fn operation_services(&self) -> OperationServices {
        OperationServices {
            instances: self.workflows.clone(),
            operator: self.operations.clone(),
            publisher: self.operations.clone(),
        }
    }

    /// `actor` in `tenant` holding exactly `permissions`.
    pub fn caller_with(&self, actor: &str, tenant: &str, permissions: &[Permission]) -> AiCaller {
        AiCaller::new(actor, tenant, permissions.iter().cloned())
    }

    /// Stores `definition` in the harness tenant directly (not through the counted
    /// writer) as its next version, and returns the baseline a proposal would name.
    pub async fn seed(&self, definition: WorkflowDefinition) -> BaselineRef {
        let tenant = TenantId::from(TEST_TENANT);
        let id = definition.definition_id().to_owned();
        let latest = self
            .workflows
            .find(&tenant, &id, VersionOptions::Latest)
            .await
            .expect("the in-memory backend reads");
        let written = match latest {
            Some(latest) => {
                self.workflows
                    .update(&tenant, &id, latest.version(), definition)
                    .await
            }
            None => self.workflows.create(&tenant, definition).await,
        }
        .expect("the in-memory backend writes");
        BaselineRef {
            definition_id: written.definition_id,
            version: written.version,
        }
    }

    /// A conversation of the harness caller (one finished chat turn), for proposal events.
    pub async fn conversation(&self) -> ConversationId {
        let events = self
            .chat
            .run(self.chat.request("Let us change a workflow."))
            .await;
        events[0].conversation_id.clone()
    }

    /// The `proposal.*` events on `conversation`'s stream, in order.
    pub async fn proposal_events(&self, conversation: &ConversationId) -> Vec<AiStreamEvent> {
        let stream = elsa_ai_abstractions::AiOrchestrator::resume(
            &self.chat.orchestrator,
            &self.caller(),
            conversation,
            0,
        )
        .await
        .expect("the harness caller owns the conversation");
        stream
            .events
            .filter(|e| {
                std::future::ready(matches!(
                    e.event_type,
                    AiStreamEventType::ProposalCreated | AiStreamEventType::ProposalUpdated
                ))
            })
            .collect()
            .await
    }

    /// The audit records about `proposal`, oldest first.
    pub fn audit_of(&self, proposal: &ProposalId) -> Vec<AiAuditEvent> {
        self.audit
            .events(&TEST_TENANT.into())
            .into_iter()
            .filter(|e| e.proposal_id.as_ref() == Some(proposal))
            .collect()
    }

    /// The stored proposal, read around the service.
    pub async fn stored(&self, id: &ProposalId) -> AiProposal {
        self.store
            .find(id, &TEST_TENANT.into())
            .await
            .expect("the store reads")
            .expect("the proposal exists")
    }

    /// The latest stored version of `definition_id` in the harness tenant.
    pub async fn latest(&self, definition_id: &str) -> Option<WorkflowDefinition> {
        self.workflows
            .find(&TEST_TENANT.into(), definition_id, VersionOptions::Latest)
            .await
            .expect("the in-memory backend reads")
            .map(Arc::unwrap_or_clone)
    }

    /// A creation draft of [`sample_definition`] `definition_id`.
    pub fn create_draft(
        &self,
        definition_id: &str,
        conversation: Option<&ConversationId>,
    ) -> ProposalDraft {
        ProposalDraft {
            conversation_id: conversation.cloned(),
            kind: ProposalKind::Create,
            baseline: None,
            definition: sample_definition(definition_id, "Hello"),
            patch: None,
            rationale: format!("Create {definition_id} to greet people."),
        }
    }

    /// An update draft of `baseline` to `definition`.
    pub fn update_draft(
        &self,
        baseline: &BaselineRef,
        definition: WorkflowDefinition,
        conversation: Option<&ConversationId>,
    ) -> ProposalDraft {
        ProposalDraft {
            conversation_id: conversation.cloned(),
            kind: ProposalKind::Update,
            baseline: Some(baseline.clone()),
            definition,
            patch: Some(serde_json::json!([{"op": "setInput"}])),
            rationale: format!("Update {} to say more.", baseline.definition_id),
        }
    }

    /// Seeds `definition_id`, proposes an update of it and returns the `Validated` proposal.
    pub async fn validated_update(
        &self,
        definition_id: &str,
        conversation: Option<&ConversationId>,
    ) -> AiProposal {
        let baseline = self.seed(sample_definition(definition_id, "Hello")).await;
        let draft = self.update_draft(
            &baseline,
            sample_definition(definition_id, "Hello, world"),
            conversation,
        );
        self.service
            .create(&self.caller(), draft)
            .await
            .unwrap_or_else(|e| panic!("the draft was refused: {} {}", e.code(), e.message()))
    }

    /// Like [`validated_update`](Self::validated_update), then approved by the caller.
    pub async fn approved_update(
        &self,
        definition_id: &str,
        conversation: Option<&ConversationId>,
    ) -> AiProposal {
        let proposal = self.validated_update(definition_id, conversation).await;
        self.service
            .approve(&self.caller(), &proposal.id)
            .await
            .unwrap_or_else(|e| panic!("the approval was refused: {} {}", e.code(), e.message()))
    }
}

impl Default for ProposalHarness {
    fn default() -> Self {
        Self::new()
    }
}

/// The error of a refused call.
///
/// # Panics
///
/// When the call succeeded.
pub fn refused<T: std::fmt::Debug>(result: Result<T, AiError>) -> AiError {
    match result {
        Ok(value) => panic!("expected a refusal, got {value:?}"),
        Err(error) => error,
    }
}
