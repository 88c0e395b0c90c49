//! The governed tool pipeline end to end: every denial path, the step order, redaction at
//! every boundary, clamping, timeouts and audit guarantees.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiAuditEvent, AiCaller, AiError, AiTool, AiToolDefinition, AiToolExecutionContext,
    AiToolOutcome, AiToolResult, AuditAction, AuditBehavior, AuditOutcome, DangerLevel, Permission,
    TenantBehavior, ToolMutability,
};
use elsa_ai_host::testing::data::RecordingWorkflowData;
use elsa_ai_host::testing::governance::{
    FailingAuditSink, GovernanceHarness, TEST_AGENT, TEST_TENANT, TestTool, all_permissions,
    invocation, proposal_tool, read_tool,
};
use elsa_ai_host::{
    GovernanceStep, REDACTED, Redactor, ToolCallScope, ToolEvent, ToolPolicy, json_size,
};
use elsa_workflows::{InMemoryWorkflowBackend, VersionOptions, samples};
use serde_json::{Value, json};

use GovernanceStep::*;

fn audited(harness: &GovernanceHarness) -> Vec<AiAuditEvent> {
    harness.audit.events(&TEST_TENANT.into())
}

fn assert_denied(result: &AiToolResult, status: u16, code: &str) {
    assert_eq!(result.outcome, AiToolOutcome::Denied, "{result:?}");
    let error = result.error.as_ref().expect("a denial carries an error");
    assert_eq!(
        (error.status, error.code.as_str()),
        (status, code),
        "{error:?}"
    );
    assert_eq!(result.content, Value::Null, "a denial carries no data");
    let text: Value = serde_json::from_str(&result.to_model_text()).unwrap();
    assert_eq!(text["error"]["code"], code, "the model can read why");
}

fn assert_denial_audited(harness: &GovernanceHarness, step: GovernanceStep) {
    let records = audited(harness);
    let denial = records.last().expect("the denial was audited");
    assert_eq!(denial.action, AuditAction::TOOL_DENIED);
    assert_eq!(denial.outcome, AuditOutcome::Denied);
    assert_eq!(denial.details["step"], step.as_str());
}

/// A read-only tool that reads the definition its arguments name through the Elsa
/// services, as the built-in read tools do: its reads show up in the data probe.
struct ReadingTool(AiToolDefinition);

#[async_trait]
impl AiTool for ReadingTool {
    fn definition(&self) -> &AiToolDefinition {
        &self.0
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let id = context.arguments["id"].as_str().unwrap_or_default();
        let found = context
            .services
            .definitions
            .find(&context.caller.tenant_id, id, VersionOptions::Latest)
            .await?;
        Ok(json!({"found": found.is_some()}))
    }
}

/// Elsa data for the harness tenant (the crate samples), behind a probe recording reads.
fn probed_data() -> Arc<RecordingWorkflowData> {
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    samples::seed(&backend, &TEST_TENANT.into());
    RecordingWorkflowData::new(backend)
}

fn a_sample_definition_id() -> String {
    samples::definitions()[0].definition_id().to_owned()
}

#[tokio::test]
async fn a_denial_at_step_4_stops_before_step_6_data_access_and_execution() {
    let data = probed_data();
    let tool = Arc::new(ReadingTool(proposal_tool("demo.propose")));
    let harness = GovernanceHarness::builder()
        .services(data.services())
        .tool(tool.clone())
        .build();
    let id = a_sample_definition_id();

    let result = harness.call("demo.propose", json!({"id": id})).await;

    assert_denied(&result, 403, "tool_disabled");
    assert_eq!(
        harness.steps.steps(),
        [
            ResolveActor,
            ResolveAgentScope,
            FindTool,
            CheckEnablement,
            RedactResult,
            EmitEvents
        ],
        "nothing between the refusing step and reporting ran"
    );
    assert_eq!(
        harness.steps.outcomes()[3].1.as_deref(),
        Some("tool_disabled")
    );
    assert_eq!(harness.enablement.reads(), 1, "step 4 did read enablement");
    assert_eq!(
        harness.conversations.finds(),
        0,
        "step 6's ownership lookup never happened"
    );
    assert!(data.reads().is_empty(), "no workflow data was read");
    assert_denial_audited(&harness, CheckEnablement);

    // The probes do see an allowed call: once enabled, step 6 looks the conversation up
    // and the tool reads the definition.
    harness.decide("demo.propose", None, true).await;
    let result = harness.call("demo.propose", json!({"id": id})).await;
    assert_eq!(result.content, json!({"found": true}), "{result:?}");
    assert_eq!(harness.conversations.finds(), 1);
    let reads = data.reads();
    assert_eq!(reads.len(), 1);
    assert_eq!(
        (reads[0].tenant.as_str(), reads[0].operation),
        (TEST_TENANT, "definitions.find")
    );
}

/// A call that one check step refuses.
struct Refused {
    step: GovernanceStep,
    code: &'static str,
    tool: AiToolDefinition,
    agent_tools: Option<&'static [&'static str]>,
    caller: AiCaller,
    arguments: Value,
}

fn refusals() -> Vec<Refused> {
    let id = a_sample_definition_id();
    let alice = AiCaller::new("alice", TEST_TENANT, all_permissions());
    let refused = |step, code, change: &dyn Fn(&mut AiToolDefinition)| {
        let mut tool = read_tool("demo.reader");
        change(&mut tool);
        Refused {
            step,
            code,
            tool,
            agent_tools: None,
            caller: alice.clone(),
            arguments: json!({"id": id}),
        }
    };
    vec![
        Refused {
            caller: AiCaller::new(" ", TEST_TENANT, all_permissions()),
            ..refused(ResolveActor, "unauthenticated", &|_| {})
        },
        Refused {
            agent_tools: Some(&["demo.other"]),
            ..refused(ResolveAgentScope, "tool_not_in_agent_scope", &|_| {})
        },
        refused(FindTool, "tool_not_in_agent_scope", &|t| {
            t.allowed_agents = Some(vec!["instance-diagnostics".into()]);
        }),
        refused(CheckEnablement, "tool_disabled", &|t| {
            *t = proposal_tool("demo.reader");
        }),
        Refused {
            arguments: json!({"id": id, "tenantId": "globex"}),
            ..refused(CheckTenantBehavior, "cross_tenant_denied", &|t| {
                t.tenant_behavior = TenantBehavior::CrossTenantDenied;
            })
        },
        Refused {
            caller: AiCaller::new("alice", TEST_TENANT, [Permission::READ_WORKFLOW_INSTANCES]),
            ..refused(CheckPermissions, "permission_denied", &|_| {})
        },
        refused(CheckMutabilityPolicy, "danger_level_exceeded", &|t| {
            t.danger_level = DangerLevel::Critical;
        }),
    ]
}

#[tokio::test]
async fn each_refusing_step_ends_the_call_there_and_is_audited_with_its_number() {
    let cases = refusals();
    assert_eq!(
        cases.iter().map(|c| c.step).collect::<Vec<_>>(),
        GovernanceStep::ALL[..7],
        "one case per check step"
    );
    for case in cases {
        let step = case.step;
        let data = probed_data();
        let mut builder = GovernanceHarness::builder()
            .services(data.services())
            .tool(Arc::new(ReadingTool(case.tool)));
        if let Some(tools) = case.agent_tools {
            builder = builder.agent_tools(tools);
        }
        let harness = builder.build();
        let invoker = harness.governor.bind(harness.scope(case.caller));
        let result = invoker
            .invoke(invocation("demo.reader", case.arguments))
            .await;

        assert_eq!(
            result.outcome,
            AiToolOutcome::Denied,
            "{step:?}: {result:?}"
        );
        assert_eq!(result.error.as_ref().unwrap().code, case.code, "{step:?}");
        let mut expected = GovernanceStep::ALL[..step.number()].to_vec();
        expected.extend([RedactResult, EmitEvents]);
        assert_eq!(harness.steps.steps(), expected, "{step:?}");
        assert_eq!(
            harness.steps.outcomes()[step.number() - 1].1.as_deref(),
            Some(case.code),
            "{step:?} is the step that refused"
        );
        assert!(
            data.reads().is_empty(),
            "{step:?}: no workflow data was read"
        );
        assert_eq!(
            harness.conversations.finds(),
            usize::from(step > CheckPermissions),
            "{step:?}: step 6's lookup runs only when the call got that far"
        );
        let records = audited(&harness);
        assert_eq!(records.len(), 1, "{step:?}: exactly the denial is audited");
        assert_eq!(records[0].action, AuditAction::TOOL_DENIED);
        assert_eq!(records[0].details["stepNumber"], step.number());
        let mut per_step = [0; 7];
        per_step[step.number() - 1] = 1;
        assert_eq!(
            harness.governor.metrics().tools.snapshot().denied_by_step,
            per_step,
            "{step:?}"
        );
        assert_eq!(
            harness.events.events().len(),
            2,
            "{step:?}: tool.started and tool.failed"
        );
    }
}

#[tokio::test]
async fn an_allowed_call_runs_all_eleven_steps_in_order() {
    let tool = Arc::new(TestTool::returning(
        read_tool("demo.read"),
        json!({"ok": true}),
    ));
    let harness = GovernanceHarness::builder().tool(tool.clone()).build();

    let result = harness.call("demo.read", json!({"id": "wf-1"})).await;

    assert!(result.is_success(), "{result:?}");
    assert_eq!(result.content, json!({"ok": true}));
    assert_eq!(harness.steps.steps(), GovernanceStep::ALL);
    assert_eq!(
        harness.conversations.finds(),
        1,
        "ownership was checked at step 6"
    );
    assert_eq!(
        harness.enablement.reads(),
        1,
        "one enablement read per call"
    );
    let context = tool.last_context().unwrap();
    assert_eq!(&*context.agent, TEST_AGENT);
    assert_eq!(context.caller.tenant_id.as_str(), TEST_TENANT);
    let records = audited(&harness);
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0].action.clone(), records[0].outcome),
        (AuditAction::TOOL_INVOKED, AuditOutcome::Success)
    );
    assert_eq!(records[0].tool_name.as_deref(), Some("demo.read"));
    assert_eq!(
        records[0].conversation_id.as_ref().map(|c| c.as_str()),
        Some("conv-1")
    );
}

#[tokio::test]
async fn a_tool_outside_the_agents_scope_is_denied_at_step_2() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(read_tool("demo.other"))
        .agent_tools(&["demo.read"])
        .build();
    let result = harness.call("demo.other", json!({})).await;
    assert_denied(&result, 403, "tool_not_in_agent_scope");
    assert_eq!(
        harness.steps.steps()[..2],
        [ResolveActor, ResolveAgentScope]
    );
    assert_denial_audited(&harness, ResolveAgentScope);

    // The tool's own allowed_agents narrows too.
    let mut picky = read_tool("demo.picky");
    picky.allowed_agents = Some(vec!["instance-diagnostics".into()]);
    let harness = GovernanceHarness::builder().definition(picky).build();
    assert_denied(
        &harness.call("demo.picky", json!({})).await,
        403,
        "tool_not_in_agent_scope",
    );
    assert_denial_audited(&harness, FindTool);
}

#[tokio::test]
async fn an_unknown_tool_is_a_404_the_model_can_read() {
    let harness = GovernanceHarness::builder()
        .agent_tools(&["demo.ghost"])
        .build();
    assert_denied(
        &harness.call("demo.ghost", json!({})).await,
        404,
        "tool_not_found",
    );
    assert_denial_audited(&harness, FindTool);
}

#[tokio::test]
async fn unknown_and_disabled_agents_are_denied() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .build();
    let invoker = harness
        .governor
        .bind(ToolCallScope::new(harness.caller(), "no-such-agent"));
    assert_denied(
        &invoker.invoke(invocation("demo.read", json!({}))).await,
        404,
        "agent_not_found",
    );
}

#[tokio::test]
async fn an_anonymous_caller_is_denied_at_step_1() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .build();
    let anonymous = AiCaller::new("", TEST_TENANT, all_permissions());
    let invoker = harness.governor.bind(harness.scope(anonymous));
    assert_denied(
        &invoker.invoke(invocation("demo.read", json!({}))).await,
        401,
        "unauthenticated",
    );
    assert_eq!(
        harness.steps.steps(),
        [ResolveActor, RedactResult, EmitEvents]
    );
}

#[tokio::test]
async fn a_disabled_tool_is_denied_and_an_enabled_proposal_tool_runs() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(proposal_tool("demo.propose"))
        .build();
    harness.decide("demo.read", None, false).await;
    assert_denied(
        &harness.call("demo.read", json!({})).await,
        403,
        "tool_disabled",
    );

    harness.decide("demo.propose", Some(TEST_AGENT), true).await;
    assert!(harness.call("demo.propose", json!({})).await.is_success());
}

#[tokio::test]
async fn wrong_tenant_calls_are_denied() {
    let mut cross = read_tool("demo.cross");
    cross.tenant_behavior = TenantBehavior::CrossTenantDenied;
    let tool = Arc::new(TestTool::echo(cross));
    let harness = GovernanceHarness::builder()
        .tool(tool.clone())
        .definition(read_tool("demo.read"))
        .build();

    let result = harness
        .call("demo.cross", json!({"tenantId": "globex"}))
        .await;
    assert_denied(&result, 403, "cross_tenant_denied");
    assert_denial_audited(&harness, CheckTenantBehavior);
    assert!(
        harness
            .call("demo.cross", json!({"tenantId": TEST_TENANT}))
            .await
            .is_success()
    );
    assert_eq!(tool.calls(), 1);

    let no_tenant = AiCaller::new("alice", "", all_permissions());
    let invoker = harness
        .governor
        .bind(ToolCallScope::new(no_tenant, TEST_AGENT));
    assert_denied(
        &invoker.invoke(invocation("demo.read", json!({}))).await,
        403,
        "tenant_required",
    );
}

#[tokio::test]
async fn a_conversation_of_another_actor_is_reported_as_missing() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .build();
    let mallory = AiCaller::new("mallory", TEST_TENANT, all_permissions());
    let invoker = harness.governor.bind(harness.scope(mallory));
    assert_denied(
        &invoker.invoke(invocation("demo.read", json!({}))).await,
        404,
        "conversation_not_found",
    );
    assert_denial_audited(&harness, CheckPermissions);
}

#[tokio::test]
async fn a_missing_permission_is_denied_and_agents_only_narrow() {
    let mut instances = read_tool("demo.instances");
    instances.permissions = vec![Permission::READ_WORKFLOW_INSTANCES];
    let harness = GovernanceHarness::builder()
        .definition(instances.clone())
        .agent_permissions(&[Permission::READ_WORKFLOWS])
        .build();
    // The caller holds it, but the agent does not allow it.
    let result = harness.call("demo.instances", json!({})).await;
    assert_denied(&result, 403, "permission_denied");
    assert_denial_audited(&harness, CheckPermissions);

    // The agent allows it, but the caller does not hold it.
    let harness = GovernanceHarness::builder().definition(instances).build();
    let reader = AiCaller::new("alice", TEST_TENANT, [Permission::READ_WORKFLOWS]);
    let invoker = harness.governor.bind(harness.scope(reader));
    assert_denied(
        &invoker
            .invoke(invocation("demo.instances", json!({})))
            .await,
        403,
        "permission_denied",
    );
}

#[tokio::test]
async fn tools_act_with_the_agent_narrowed_permissions() {
    let tool = Arc::new(TestTool::echo(read_tool("demo.read")));
    let harness = GovernanceHarness::builder()
        .tool(tool.clone())
        .agent_permissions(&[Permission::READ_WORKFLOWS])
        .build();
    assert!(harness.call("demo.read", json!({})).await.is_success());
    let permissions: Vec<Permission> = tool
        .last_context()
        .unwrap()
        .caller
        .permissions
        .iter()
        .cloned()
        .collect();
    assert_eq!(permissions, [Permission::READ_WORKFLOWS]);
}

#[tokio::test]
async fn the_calls_of_a_turn_share_one_narrowed_caller_and_another_turn_gets_its_own() {
    let tool = Arc::new(TestTool::echo(read_tool("demo.read")));
    let harness = GovernanceHarness::builder()
        .tool(tool.clone())
        .agent_permissions(&[Permission::READ_WORKFLOWS])
        .build();
    let turn = harness.invoker();
    let mut callers = Vec::new();
    for _ in 0..2 {
        assert!(
            turn.invoke(invocation("demo.read", json!({})))
                .await
                .is_success()
        );
        callers.push(tool.last_context().unwrap().caller);
    }
    assert!(
        Arc::ptr_eq(&callers[0], &callers[1]),
        "one turn, one caller"
    );
    assert!(harness.call("demo.read", json!({})).await.is_success());
    let other = tool.last_context().unwrap().caller;
    assert!(!Arc::ptr_eq(&callers[0], &other), "a turn of its own");
    assert_eq!(*other, *callers[0], "the same narrowing");
}

#[tokio::test]
async fn administrative_tools_are_denied_even_when_enabled_in_the_store() {
    let mut admin = read_tool("demo.admin");
    admin.mutability = ToolMutability::Administrative;
    admin.enabled_by_default = false;
    let tool = Arc::new(TestTool::echo(admin));
    let harness = GovernanceHarness::builder().tool(tool.clone()).build();
    harness.decide("demo.admin", None, true).await;
    assert_denied(
        &harness.call("demo.admin", json!({})).await,
        403,
        "tool_disabled",
    );
    assert_eq!(tool.calls(), 0);
    assert_denial_audited(&harness, CheckEnablement);
}

#[tokio::test]
async fn the_danger_policy_refuses_tools_above_the_maximum() {
    let mut high = read_tool("demo.high");
    high.danger_level = DangerLevel::High;
    let harness = GovernanceHarness::builder()
        .definition(high)
        .policy(ToolPolicy {
            max_danger_level: DangerLevel::Medium,
        })
        .build();
    assert_denied(
        &harness.call("demo.high", json!({})).await,
        403,
        "danger_level_exceeded",
    );
    assert_denial_audited(&harness, CheckMutabilityPolicy);
}

#[tokio::test]
async fn proposal_tools_need_the_propose_permission() {
    let harness = GovernanceHarness::builder()
        .definition(proposal_tool("demo.propose"))
        .build();
    harness.decide("demo.propose", None, true).await;
    // The tool requires propose:workflows itself, so step 6 refuses a caller without it
    // before the mutability policy (step 7) is consulted.
    let reader = AiCaller::new("alice", TEST_TENANT, [Permission::READ_WORKFLOWS]);
    let invoker = harness.governor.bind(harness.scope(reader));
    assert_denied(
        &invoker.invoke(invocation("demo.propose", json!({}))).await,
        403,
        "permission_denied",
    );
}

#[tokio::test]
async fn schema_invalid_arguments_fail_without_running_the_tool() {
    let mut strict = read_tool("demo.strict");
    strict.input_schema = json!({
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
        "additionalProperties": false
    });
    let tool = Arc::new(TestTool::echo(strict));
    let harness = GovernanceHarness::builder().tool(tool.clone()).build();
    let result = harness
        .call("demo.strict", json!({"id": 7, "extra": true}))
        .await;
    assert_eq!(result.outcome, AiToolOutcome::Error);
    let error = result.error.unwrap();
    assert_eq!(
        (error.status, error.code.as_str()),
        (400, "invalid_arguments")
    );
    assert_eq!(tool.calls(), 0);
    let records = audited(&harness);
    assert_eq!(records.last().unwrap().outcome, AuditOutcome::Failure);
}

#[tokio::test]
async fn a_slow_tool_times_out() {
    let slow = TestTool::sleeping(read_tool("demo.slow"), Duration::from_secs(30));
    let harness = GovernanceHarness::builder()
        .tool(Arc::new(slow))
        .default_timeout(Duration::from_millis(30))
        .build();
    let result = harness.call("demo.slow", json!({})).await;
    let error = result.error.unwrap();
    assert_eq!((error.status, error.code.as_str()), (503, "tool_timeout"));
    let snapshot = harness.governor.metrics().tools.snapshot();
    assert_eq!((snapshot.timed_out, snapshot.failed), (1, 1));
    assert!(matches!(
        harness.events.events().last(),
        Some(ToolEvent::Failed { .. })
    ));
    let record = audited(&harness).pop().expect("the timeout was audited");
    assert_eq!(
        (record.action, record.outcome),
        (AuditAction::TOOL_INVOKED, AuditOutcome::Failure)
    );
    assert_eq!(record.details["error"]["code"], "tool_timeout");
}

#[tokio::test]
async fn an_oversize_result_is_clamped_to_valid_json_with_a_marker() {
    let rows: Vec<Value> = (0..5_000)
        .map(|i| json!({"id": i, "name": format!("row {i}")}))
        .collect();
    let mut definition = read_tool("demo.big");
    definition.audit_behavior = AuditBehavior::RecordInvocationAndResult;
    let harness = GovernanceHarness::builder()
        .tool(Arc::new(TestTool::returning(
            definition,
            json!({"rows": rows}),
        )))
        .result_limit(4096)
        .build();
    let result = harness.call("demo.big", json!({})).await;
    assert!(result.is_success() && result.truncated);
    let text = result.to_model_text();
    assert!(text.len() <= 4096, "{}", text.len());
    let reparsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reparsed["_truncated"]["omitted"][0]["path"], "/rows");
    assert!(
        json_size(&audited(&harness)[0].details["result"]) <= 4096,
        "the audit keeps the clamped result"
    );
    assert_eq!(harness.governor.metrics().tools.snapshot().truncated, 1);
}

#[tokio::test]
async fn secrets_are_redacted_for_the_model_the_stream_and_the_audit_alike() {
    const HOST_SECRET: &str = "host-configured-api-key-123";
    let leaky = json!({
        "connection": "Server=db;Password=hunter2;",
        "token": "abc",
        "echo": format!("key {HOST_SECRET}"),
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    });
    let mut definition = read_tool("demo.leaky");
    definition.audit_behavior = AuditBehavior::RecordInvocationAndResult;
    let tool = Arc::new(TestTool::returning(definition, leaky));
    let harness = GovernanceHarness::builder()
        .tool(tool.clone())
        .redactor(Redactor::builder().secret(HOST_SECRET).build().unwrap())
        .build();

    let arguments =
        json!({"id": "wf-1", "apiKey": "sk-live-argument", "note": "Bearer abcdef123456"});
    let result = harness.call("demo.leaky", arguments).await;
    assert!(result.is_success());

    let expected_result = json!({
        "connection": "Server=db;Password=[REDACTED];",
        "token": REDACTED,
        "echo": "key [REDACTED]",
        "jwt": REDACTED,
    });
    let expected_arguments = json!({"id": "wf-1", "apiKey": REDACTED, "note": "Bearer [REDACTED]"});
    assert_eq!(result.content, expected_result, "model-facing result");
    assert_eq!(
        *tool.last_context().unwrap().arguments,
        expected_arguments,
        "the tool gets redacted arguments"
    );

    let events = harness.events.events();
    assert!(
        matches!(&events[0], ToolEvent::Started { arguments, .. } if ***arguments == expected_arguments)
    );
    assert!(
        matches!(&events[1], ToolEvent::Completed { result, .. } if result.content == expected_result)
    );

    let record = &audited(&harness)[0];
    assert_eq!(record.details["arguments"], expected_arguments);
    assert_eq!(record.details["result"], expected_result);
    let everything = format!("{events:?}{record:?}{}", result.to_model_text());
    for secret in [
        "hunter2",
        "sk-live-argument",
        "abcdef123456",
        HOST_SECRET,
        "c2lnbmF0dXJl",
    ] {
        assert!(!everything.contains(secret), "{secret} leaked");
    }
}

#[tokio::test]
async fn secrets_in_tool_errors_and_denied_arguments_are_redacted() {
    let failing = TestTool::failing(
        read_tool("demo.fail"),
        AiError::internal("db_failed", "login failed: Password=hunter2;"),
    );
    let harness = GovernanceHarness::builder()
        .tool(Arc::new(failing))
        .definition(proposal_tool("demo.propose"))
        .build();
    let failed = harness.call("demo.fail", json!({})).await;
    assert_eq!(
        failed.error.as_ref().unwrap().message,
        "login failed: Password=[REDACTED];"
    );

    let denied = harness
        .call("demo.propose", json!({"password": "hunter2"}))
        .await;
    assert_eq!(denied.outcome, AiToolOutcome::Denied);
    let records = format!("{:?}{:?}", audited(&harness), harness.events.events());
    assert!(!records.contains("hunter2"));
}

#[tokio::test]
async fn every_denial_is_audited_whatever_the_audit_behaviour() {
    let mut quiet = read_tool("demo.quiet");
    quiet.audit_behavior = AuditBehavior::None;
    let harness = GovernanceHarness::builder().definition(quiet).build();

    assert!(harness.call("demo.quiet", json!({})).await.is_success());
    assert!(
        audited(&harness).is_empty(),
        "a quiet success leaves no record"
    );

    harness.decide("demo.quiet", None, false).await;
    assert_eq!(
        harness.call("demo.quiet", json!({})).await.outcome,
        AiToolOutcome::Denied
    );
    assert_eq!(audited(&harness).len(), 1);
    assert_denial_audited(&harness, CheckEnablement);
}

#[tokio::test]
async fn a_failing_audit_sink_turns_results_and_denials_into_errors() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(proposal_tool("demo.propose"))
        .audit(Arc::new(FailingAuditSink))
        .build();
    for tool in ["demo.read", "demo.propose"] {
        let result = harness.call(tool, json!({"id": "x"})).await;
        assert_eq!(result.outcome, AiToolOutcome::Error, "{tool}");
        assert_eq!(result.content, Value::Null, "no data leaves unaudited");
        assert_eq!(result.error.unwrap().code, "audit_failed");
    }
    assert_eq!(
        harness.governor.metrics().tools.snapshot().audit_failures,
        2
    );
}

#[tokio::test]
async fn each_call_gets_one_started_and_one_terminal_event() {
    let harness = GovernanceHarness::builder()
        .definition(read_tool("demo.read"))
        .definition(proposal_tool("demo.propose"))
        .build();
    let invoker = harness.invoker();
    for (call_id, tool) in [("a", "demo.read"), ("b", "demo.propose")] {
        let mut call = invocation(tool, json!({}));
        call.call_id = call_id.into();
        invoker.invoke(call).await;
    }
    let kinds: Vec<(String, &str)> = harness
        .events
        .events()
        .iter()
        .map(|e| (e.call_id().to_owned(), e.event_type().as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a".into(), "tool.started"),
            ("a".into(), "tool.completed"),
            ("b".into(), "tool.started"),
            ("b".into(), "tool.failed"),
        ]
    );
    let snapshot = harness.governor.metrics().tools.snapshot();
    assert_eq!(
        (snapshot.invocations, snapshot.succeeded, snapshot.denied),
        (2, 1, 1)
    );
}
