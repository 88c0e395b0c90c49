//! Every component a host builds comes from one `HostCore`, so a secret the host registered
//! in its redactor is redacted by each of them: the governor, the context resolver, the
//! orchestrator, the proposal service and the enablement service. (No component can be
//! built with a redactor of its own: their builders take none.)

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiCaller, AiChatRequest, AiContextAttachment, AiContextProvider, AiContextResolutionRequest,
    AiError, AiOrchestrator, AiProviderToolInvocation, AiResolvedContext, AiStreamEvent,
    AttachmentKind, Permission, ProposalDraft, ProposalKind,
};
use elsa_ai_host::testing::governance::{
    TEST_AGENT, TEST_TENANT, TestTool, all_permissions, empty_services, read_tool, test_agent,
};
use elsa_ai_host::testing::proposals::sample_definition;
use elsa_ai_host::{
    AgentRegistry, ContextRequest, EnablementChange, HostCore, InMemoryAuditLog,
    InMemoryProposalStore, InMemoryToolEnablementStore, REDACTED, Redactor, ToolCallScope,
    ToolRegistry,
};
use elsa_ai_scripted::{Script, ScriptedProvider};
use elsa_workflows::{InMemoryWorkflowBackend, builtin_catalog};
use futures::StreamExt;
use serde_json::json;

/// What the host registered; no built-in rule would catch it.
const SECRET: &str = "plain-looking-host-secret-0042";

struct LeakyContext;

#[async_trait]
impl AiContextProvider for LeakyContext {
    fn kind(&self) -> AttachmentKind {
        AttachmentKind::WorkflowDefinition
    }

    async fn resolve(
        &self,
        request: AiContextResolutionRequest,
    ) -> Result<AiResolvedContext, AiError> {
        Ok(AiResolvedContext {
            kind: self.kind(),
            reference_id: request.attachment.reference_id,
            title: format!("about {SECRET}"),
            content: json!({"note": format!("uses {SECRET}")}),
            truncated: false,
        })
    }
}

fn core() -> (HostCore, Arc<InMemoryAuditLog>) {
    let redactor = Redactor::builder()
        .secret(SECRET)
        .build()
        .expect("a long enough secret");
    let audit = Arc::new(InMemoryAuditLog::new());
    (
        HostCore::builder(Arc::new(redactor), audit.clone()).build(),
        audit,
    )
}

fn registry() -> Arc<ToolRegistry> {
    let tool = TestTool::returning(read_tool("demo.read"), json!({"value": SECRET}));
    let agents = AgentRegistry::builder()
        .agent(test_agent(TEST_AGENT, &["demo.read"], &all_permissions()))
        .expect("a valid agent")
        .build();
    Arc::new(
        ToolRegistry::builder()
            .tool(Arc::new(tool))
            .expect("a valid tool")
            .build(
                Arc::new(agents),
                Arc::new(InMemoryToolEnablementStore::new()),
            ),
    )
}

fn caller() -> AiCaller {
    AiCaller::new("alice", TEST_TENANT, all_permissions())
}

/// Nothing the audit log holds shows the secret.
fn assert_audit_clean(audit: &InMemoryAuditLog) {
    for record in audit.events(&TEST_TENANT.into()) {
        let text = serde_json::to_string(&record).unwrap();
        assert!(!text.contains(SECRET), "{text}");
    }
}

#[tokio::test]
async fn the_governor_redacts_the_hosts_secrets() {
    let (core, audit) = core();
    let governor = core.governor(registry(), empty_services()).build();
    let result = governor
        .bind(ToolCallScope::new(caller(), TEST_AGENT))
        .invoke(AiProviderToolInvocation {
            call_id: "call-1".into(),
            tool_name: "demo.read".into(),
            arguments: json!({}),
        })
        .await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.content["value"], REDACTED);
    assert_audit_clean(&audit);
}

#[tokio::test]
async fn the_context_resolver_redacts_the_hosts_secrets() {
    let (core, _) = core();
    let resolver = core
        .context_resolver()
        .provider(Arc::new(LeakyContext))
        .build();
    let agent = test_agent("reader", &[], &all_permissions());
    let resolved = resolver
        .resolve(ContextRequest {
            caller: &caller(),
            agent: &agent,
            conversation_id: None,
            attachments: &[AiContextAttachment::new(
                AttachmentKind::WorkflowDefinition,
                "wf-1",
            )],
        })
        .await
        .unwrap();
    let shown = serde_json::to_string(&resolved.attachments).unwrap();
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains(REDACTED), "{shown}");
    let audited = serde_json::to_string(&resolved.audit).unwrap();
    assert!(!audited.contains(SECRET), "{audited}");
}

#[tokio::test]
async fn the_orchestrator_redacts_the_hosts_secrets() {
    let (core, audit) = core();
    let governor = core.governor(registry(), empty_services()).build();
    let context = core.context_resolver().build();
    let provider = Arc::new(ScriptedProvider::new(
        Script::new().reply(format!("I saw {SECRET}")),
    ));
    let orchestrator = core.orchestrator(provider, governor, context).build();
    let chat = orchestrator
        .execute_chat(AiChatRequest {
            caller: caller(),
            conversation_id: None,
            agent: Some(TEST_AGENT.into()),
            message: format!("Use {SECRET}"),
            attachments: Vec::new(),
        })
        .await
        .unwrap();
    let events: Vec<AiStreamEvent> = chat.events.collect().await;
    assert!(events.len() > 2, "{events:#?}");
    for event in &events {
        let text = serde_json::to_string(event).unwrap();
        assert!(!text.contains(SECRET), "{text}");
    }
    assert_eq!(events[0].data["message"], format!("Use {REDACTED}"));
    assert_audit_clean(&audit);
}

#[tokio::test]
async fn the_proposal_service_redacts_the_hosts_secrets() {
    let (core, audit) = core();
    let workflows = Arc::new(InMemoryWorkflowBackend::new());
    workflows.set_catalog(&TEST_TENANT.into(), builtin_catalog().to_vec());
    let proposals = core
        .proposals(
            Arc::new(InMemoryProposalStore::new()),
            workflows.clone(),
            workflows.clone(),
            workflows,
        )
        .build();
    let proposal = proposals
        .create(
            &caller(),
            ProposalDraft {
                conversation_id: None,
                kind: ProposalKind::Create,
                baseline: None,
                definition: sample_definition("orders", "Hello"),
                patch: None,
                rationale: format!("Needs {SECRET}"),
            },
        )
        .await
        .unwrap();
    assert_eq!(proposal.rationale, format!("Needs {REDACTED}"));
    assert_audit_clean(&audit);
}

#[tokio::test]
async fn the_enablement_service_redacts_the_hosts_secrets() {
    let (core, audit) = core();
    let enablement = core.enablement(registry());
    // A caller without admin:ai is refused, and the refusal, naming the tool, is audited.
    let reader = AiCaller::new("bob", TEST_TENANT, [Permission::READ_WORKFLOWS]);
    let error = enablement
        .set(
            &reader,
            EnablementChange {
                tool_name: format!("demo.{SECRET}"),
                agent: None,
                enabled: true,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), "permission_denied");
    let records = audit.events(&TEST_TENANT.into());
    assert_eq!(records.len(), 1, "the refusal is audited");
    assert_audit_clean(&audit);
}
