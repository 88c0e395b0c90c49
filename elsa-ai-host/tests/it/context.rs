//! Context resolution over real Elsa data, kind by kind: the caller's own references
//! resolve; unknown and other tenants' references are the same 404 (the store is never even
//! asked about another tenant); a missing permission is a 403 before any data is read; every
//! outcome is audited in the caller's tenant.
//!
//! Two tenants share one in-memory backend seeded with the crate samples of
//! `elsa-workflows`; `globex` also holds one definition and one instance that `acme` lacks.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use elsa_ai_abstractions::{
    AiAuditEvent, AiAuditSink, AiCaller, AiContextAttachment, AiError, AiResolvedContext,
    AttachmentKind, AuditAction, AuditOutcome, Permission,
};
use elsa_ai_host::testing::chat::{ChatHarness, caller_with};
use elsa_ai_host::testing::data::RecordingWorkflowData;
use elsa_ai_host::testing::governance::{TEST_AGENT, all_permissions, test_agent};
use elsa_ai_host::{
    ContextRequest, ContextResolver, HostCore, InMemoryAuditLog, Redactor,
    builtin_context_providers,
};
use elsa_workflows::{InMemoryWorkflowBackend, TenantId, TimeRange, builtin_catalog, samples};

const ACME: &str = "acme";
const GLOBEX: &str = "globex";
const UNKNOWN: &str = "no-such-reference";

/// The references of one tenant's objects.
#[derive(Clone, Debug)]
struct Refs {
    definition: String,
    activity: String,
    instance: String,
}

struct World {
    data: Arc<RecordingWorkflowData>,
    audit: Arc<InMemoryAuditLog>,
    resolver: ContextResolver,
    /// Objects acme has.
    own: Refs,
    /// Objects only globex has.
    foreign: Refs,
}

/// An activity id of the definition (its last activity, typically a leaf).
fn activity_of(definition: &elsa_workflows::WorkflowDefinition) -> String {
    definition
        .activities()
        .iter()
        .rev()
        .find_map(|node| node.id())
        .expect("sample definitions have activities with ids")
        .to_owned()
}

fn world() -> World {
    let backend = Arc::new(InMemoryWorkflowBackend::new());
    let globex = TenantId::new(GLOBEX);
    let acme = TenantId::new(ACME);
    assert!(samples::seed(&backend, &globex).is_complete());

    let definitions = samples::definitions();
    let instances = samples::instances();
    let foreign_definition = &definitions[0];
    let own_definition = definitions
        .iter()
        .rev()
        .find(|d| d.definition_id() != foreign_definition.definition_id())
        .expect("the samples hold several definitions");
    for definition in definitions
        .iter()
        .filter(|d| d.definition_id() != foreign_definition.definition_id())
    {
        backend
            .insert_definition(&acme, definition.clone())
            .expect("a fresh tenant accepts every sample version");
    }
    let (foreign_instance, own_instances) = instances.split_first().expect("sample instances");
    for instance in own_instances {
        backend.insert_instance(&acme, instance.clone());
    }
    backend.set_catalog(&acme, builtin_catalog().to_vec());
    assert!(
        own_instances
            .iter()
            .all(|i| i.id() != foreign_instance.id()),
        "instance ids are distinct"
    );

    let data = RecordingWorkflowData::new(backend);
    let audit = Arc::new(InMemoryAuditLog::new());
    let resolver = HostCore::builder(Arc::new(Redactor::default()), audit.clone())
        .build()
        .context_resolver()
        .providers(builtin_context_providers(
            data.clone(),
            data.clone(),
            data.clone(),
        ))
        .build();
    World {
        data,
        audit,
        resolver,
        own: Refs {
            definition: own_definition.definition_id().to_owned(),
            activity: activity_of(own_definition),
            instance: own_instances[0].id().to_owned(),
        },
        foreign: Refs {
            definition: foreign_definition.definition_id().to_owned(),
            activity: activity_of(foreign_definition),
            instance: foreign_instance.id().to_owned(),
        },
    }
}

fn window() -> TimeRange {
    TimeRange {
        from: Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap(),
        to: Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap(),
    }
}

/// An attachment of `kind` naming the objects of `refs` (the tenant reference is `tenant`).
fn attachment(kind: &AttachmentKind, refs: &Refs, tenant: &str) -> AiContextAttachment {
    let reference = match kind {
        AttachmentKind::WorkflowDefinition
        | AttachmentKind::ActivitySelection
        | AttachmentKind::DiagnosticsScope => refs.definition.clone(),
        AttachmentKind::WorkflowInstance => refs.instance.clone(),
        AttachmentKind::Tenant => tenant.to_owned(),
        AttachmentKind::TimeRange => "window".to_owned(),
        other => panic!("no reference of kind {other}"),
    };
    let mut attachment = AiContextAttachment::new(kind.clone(), reference);
    if *kind == AttachmentKind::ActivitySelection {
        attachment.activity_id = Some(refs.activity.clone());
    }
    if matches!(
        kind,
        AttachmentKind::TimeRange | AttachmentKind::DiagnosticsScope
    ) {
        attachment.time_range = Some(window());
    }
    attachment
}

/// The kinds that name stored objects (every kind but `TimeRange`).
const DATA_KINDS: [AttachmentKind; 5] = [
    AttachmentKind::WorkflowDefinition,
    AttachmentKind::WorkflowInstance,
    AttachmentKind::ActivitySelection,
    AttachmentKind::Tenant,
    AttachmentKind::DiagnosticsScope,
];

async fn resolve(
    world: &World,
    caller: &AiCaller,
    attachment: AiContextAttachment,
) -> Result<AiResolvedContext, AiError> {
    let agent = test_agent("every-kind", &[], &all_permissions());
    let resolved = world
        .resolver
        .resolve(ContextRequest {
            caller,
            agent: &agent,
            conversation_id: None,
            attachments: std::slice::from_ref(&attachment),
        })
        .await?;
    // What the orchestrator does before the context is used: write the resolution's records.
    for event in resolved.audit {
        world.audit.record(event).await?;
    }
    Ok(resolved
        .attachments
        .into_iter()
        .next()
        .expect("one attachment, one context"))
}

fn alice(permissions: &[Permission]) -> AiCaller {
    caller_with("alice", ACME, permissions)
}

fn last_audit(world: &World) -> AiAuditEvent {
    world
        .audit
        .events(&ACME.into())
        .pop()
        .expect("the resolution was audited")
}

#[tokio::test]
async fn every_kind_resolves_the_callers_own_reference_and_is_audited() {
    let world = world();
    let caller = alice(&all_permissions());
    for kind in AttachmentKind::ALL {
        let attachment = attachment(&kind, &world.own, ACME);
        let resolved = resolve(&world, &caller, attachment.clone())
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {} {}", e.code(), e.message()));
        assert_eq!(resolved.kind, kind);
        assert_eq!(resolved.reference_id, attachment.reference_id);
        assert!(!resolved.title.is_empty(), "{kind:?}");
        assert!(
            resolved.content.as_object().is_some_and(|c| !c.is_empty()),
            "{kind:?}: {}",
            resolved.content
        );

        let record = last_audit(&world);
        assert_eq!(
            (record.action, record.outcome),
            (AuditAction::CONTEXT_RESOLVED, AuditOutcome::Success),
            "{kind:?}"
        );
        assert_eq!(
            (record.tenant_id.as_str(), record.actor_id.as_str()),
            (ACME, "alice")
        );
        assert_eq!(record.details["kind"], kind.as_str());
        assert_eq!(record.details["referenceId"], attachment.reference_id);
    }
    // What each kind says about its object.
    let activity = resolve(
        &world,
        &caller,
        attachment(&AttachmentKind::ActivitySelection, &world.own, ACME),
    )
    .await
    .unwrap();
    assert_eq!(activity.content["activity"]["id"], world.own.activity);
    assert!(
        activity.content["descriptor"].is_object(),
        "the catalog describes the type"
    );
    let instance = resolve(
        &world,
        &caller,
        attachment(&AttachmentKind::WorkflowInstance, &world.own, ACME),
    )
    .await
    .unwrap();
    assert_eq!(instance.content["instanceId"], world.own.instance);
    let scope = resolve(
        &world,
        &caller,
        attachment(&AttachmentKind::DiagnosticsScope, &world.own, ACME),
    )
    .await
    .unwrap();
    assert!(scope.content["instances"]["total"].is_u64());

    assert!(
        world.data.reads().iter().all(|r| r.tenant.as_str() == ACME),
        "only acme's partition was read"
    );
    assert!(world.audit.events(&GLOBEX.into()).is_empty());
}

#[tokio::test]
async fn another_tenants_reference_is_a_404_exactly_like_an_unknown_one() {
    let world = world();
    let caller = alice(&all_permissions());
    let unknown = Refs {
        definition: UNKNOWN.into(),
        activity: world.foreign.activity.clone(),
        instance: UNKNOWN.into(),
    };
    for kind in DATA_KINDS {
        let foreign = resolve(&world, &caller, attachment(&kind, &world.foreign, GLOBEX))
            .await
            .expect_err("another tenant's object is refused");
        let denied = last_audit(&world);
        let missing = resolve(&world, &caller, attachment(&kind, &unknown, UNKNOWN))
            .await
            .expect_err("an unknown object is refused");

        assert_eq!(
            (foreign.status(), foreign.code()),
            (404, "not_found"),
            "{kind:?}"
        );
        assert_eq!(
            (missing.status(), missing.code()),
            (foreign.status(), foreign.code())
        );
        // The same words, but for the reference the caller sent.
        let foreign_reference = attachment(&kind, &world.foreign, GLOBEX).reference_id;
        assert_eq!(
            foreign.message().replace(&foreign_reference, UNKNOWN),
            missing.message(),
            "{kind:?}"
        );

        assert_eq!(
            (denied.action, denied.outcome),
            (AuditAction::CONTEXT_DENIED, AuditOutcome::Denied),
            "{kind:?}"
        );
        assert_eq!(denied.tenant_id.as_str(), ACME);
        assert_eq!(denied.details["error"]["status"], 404);
    }
    assert!(
        world.data.reads().iter().all(|r| r.tenant.as_str() == ACME),
        "globex's partition was never even asked: {:?}",
        world.data.reads()
    );
    assert!(
        world.audit.events(&GLOBEX.into()).is_empty(),
        "nothing is recorded in the other tenant"
    );
    assert_eq!(world.audit.len(), 2 * DATA_KINDS.len());
}

#[tokio::test]
async fn a_missing_permission_is_a_403_before_any_data_is_read() {
    let world = world();
    // Holds everything except what the kind needs; the answer is the same whether the object
    // exists, belongs to another tenant or does not exist, so a 403 reveals nothing either.
    for (kind, needed) in [
        (
            AttachmentKind::WorkflowDefinition,
            Permission::READ_WORKFLOWS,
        ),
        (
            AttachmentKind::WorkflowInstance,
            Permission::READ_WORKFLOW_INSTANCES,
        ),
        (
            AttachmentKind::ActivitySelection,
            Permission::READ_WORKFLOWS,
        ),
        (AttachmentKind::Tenant, Permission::READ_WORKFLOWS),
        (AttachmentKind::DiagnosticsScope, Permission::READ_WORKFLOWS),
    ] {
        let lacking: Vec<Permission> = all_permissions()
            .into_iter()
            .filter(|p| *p != needed)
            .collect();
        let caller = alice(&lacking);
        let mut errors = Vec::new();
        for (refs, tenant) in [(&world.own, ACME), (&world.foreign, GLOBEX)] {
            let error = resolve(&world, &caller, attachment(&kind, refs, tenant))
                .await
                .expect_err("refused");
            assert_eq!(
                (error.status(), error.code()),
                (403, "permission_denied"),
                "{kind:?}"
            );
            let record = last_audit(&world);
            assert_eq!(
                (record.action, record.outcome),
                (AuditAction::CONTEXT_DENIED, AuditOutcome::Denied)
            );
            errors.push(error);
        }
        assert_eq!(errors[0], errors[1], "{kind:?}: own and foreign look alike");
    }
    assert!(
        world.data.reads().is_empty(),
        "no read before the permission check: {:?}",
        world.data.reads()
    );
    // A time range reads no data and needs no permission.
    let nobody = alice(&[]);
    resolve(
        &world,
        &nobody,
        attachment(&AttachmentKind::TimeRange, &world.own, ACME),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn optional_parts_need_their_own_permission() {
    let world = world();
    // Without read:activities, an activity selection leaves out the descriptor and never
    // reads the catalog; without read:workflow-instances, a diagnostics scope leaves out
    // the instance counts and never searches instances.
    let reader = alice(&[Permission::READ_WORKFLOWS]);
    let activity = resolve(
        &world,
        &reader,
        attachment(&AttachmentKind::ActivitySelection, &world.own, ACME),
    )
    .await
    .unwrap();
    assert!(activity.content.get("descriptor").is_none());
    let scope = resolve(
        &world,
        &reader,
        attachment(&AttachmentKind::DiagnosticsScope, &world.own, ACME),
    )
    .await
    .unwrap();
    assert!(scope.content.get("instances").is_none());
    let operations: Vec<&str> = world.data.reads().iter().map(|r| r.operation).collect();
    assert_eq!(operations, ["definitions.find", "definitions.find"]);
}

#[tokio::test]
async fn malformed_references_are_400s_and_audited() {
    let world = world();
    let caller = alice(&all_permissions());
    let mut no_activity = attachment(&AttachmentKind::ActivitySelection, &world.own, ACME);
    no_activity.activity_id = None;
    let mut inverted = attachment(&AttachmentKind::DiagnosticsScope, &world.own, ACME);
    inverted.time_range = Some(TimeRange {
        from: window().to,
        to: window().from,
    });
    let mut unknown_activity = attachment(&AttachmentKind::ActivitySelection, &world.own, ACME);
    unknown_activity.activity_id = Some(UNKNOWN.into());
    for (attachment, status, code) in [
        (
            AiContextAttachment::new(AttachmentKind::WorkflowDefinition, " "),
            400,
            "invalid_attachment",
        ),
        (
            AiContextAttachment::new(AttachmentKind::WorkflowInstance, ""),
            400,
            "invalid_attachment",
        ),
        (no_activity, 400, "missing_activity_id"),
        (inverted, 400, "invalid_time_range"),
        (unknown_activity, 404, "not_found"),
    ] {
        let error = resolve(&world, &caller, attachment.clone())
            .await
            .expect_err("refused");
        assert_eq!(
            (error.status(), error.code()),
            (status, code),
            "{attachment:?}"
        );
        assert_eq!(last_audit(&world).action, AuditAction::CONTEXT_DENIED);
    }
}

#[tokio::test]
async fn a_chat_naming_another_tenants_object_is_refused_before_anything_starts() {
    let world = world();
    let harness = ChatHarness::builder()
        .services(world.data.services())
        .build();
    let caller = harness.caller();
    assert_eq!(caller.tenant_id.as_str(), ACME);
    let foreign = harness
        .refused(harness.request_with(
            caller.clone(),
            TEST_AGENT,
            vec![attachment(
                &AttachmentKind::WorkflowDefinition,
                &world.foreign,
                GLOBEX,
            )],
        ))
        .await;
    let missing = harness
        .refused(harness.request_with(
            caller.clone(),
            TEST_AGENT,
            vec![AiContextAttachment::new(
                AttachmentKind::WorkflowDefinition,
                UNKNOWN,
            )],
        ))
        .await;
    assert_eq!((foreign.status(), foreign.code()), (404, "not_found"));
    assert_eq!(
        foreign
            .message()
            .replace(&world.foreign.definition, UNKNOWN),
        missing.message()
    );
    assert!(
        harness.provider.turns().is_empty(),
        "the provider was never asked"
    );
    assert!(harness.conversations.is_empty(), "nothing was stored");
    let denials = harness
        .audit
        .events(&ACME.into())
        .into_iter()
        .filter(|e| e.action == AuditAction::CONTEXT_DENIED)
        .count();
    assert_eq!(denials, 2);

    // The caller's own definition is resolved and reaches the provider.
    let events = harness
        .run(harness.request_with(
            caller,
            TEST_AGENT,
            vec![attachment(
                &AttachmentKind::WorkflowDefinition,
                &world.own,
                ACME,
            )],
        ))
        .await;
    assert!(!events.is_empty());
    let turns = harness.provider.turns();
    assert_eq!(turns[0].context.len(), 1);
    assert_eq!(turns[0].context[0].reference_id, world.own.definition);
    // The resolution is on record, written with the turn's opening records.
    let actions: Vec<AuditAction> = harness
        .audit
        .events(&ACME.into())
        .into_iter()
        .map(|e| e.action)
        .filter(|a| *a != AuditAction::CONTEXT_DENIED)
        .take(3)
        .collect();
    assert_eq!(
        actions,
        [
            AuditAction::CONTEXT_RESOLVED,
            AuditAction::SESSION_CREATED,
            AuditAction::PROMPT_SUBMITTED
        ]
    );
}

#[tokio::test]
async fn a_resolved_attachment_whose_record_cannot_be_written_never_reaches_the_model() {
    let world = world();
    let harness = ChatHarness::builder()
        .services(world.data.services())
        .audit(Arc::new(
            elsa_ai_host::testing::governance::FailingAuditSink,
        ))
        .build();
    let error = harness
        .refused(harness.request_with(
            harness.caller(),
            TEST_AGENT,
            vec![attachment(
                &AttachmentKind::WorkflowDefinition,
                &world.own,
                ACME,
            )],
        ))
        .await;
    assert_eq!((error.status(), error.code()), (500, "audit_failed"));
    assert!(
        harness.provider.turns().is_empty(),
        "no model saw the context"
    );
    assert!(harness.conversations.is_empty(), "nothing was stored");
    assert_eq!(
        harness.provider.closed(),
        1,
        "the session opened for it is closed"
    );
}

#[tokio::test]
async fn a_diagnostics_scope_without_a_reference_covers_the_callers_tenant_only() {
    let world = world();
    let caller = alice(&all_permissions());
    let mut whole = AiContextAttachment::new(AttachmentKind::DiagnosticsScope, "");
    whole.time_range = Some(window());
    let resolved = resolve(&world, &caller, whole).await.unwrap();
    assert_eq!(resolved.reference_id, "");
    assert_eq!(resolved.content["scope"], "tenant");
    assert!(resolved.content.get("definition").is_none());
    let own_scope = resolve(
        &world,
        &caller,
        attachment(&AttachmentKind::DiagnosticsScope, &world.own, ACME),
    )
    .await
    .unwrap();
    let total = resolved.content["instances"]["total"].as_u64().unwrap();
    assert!(
        total >= own_scope.content["instances"]["total"].as_u64().unwrap(),
        "the tenant holds at least the one definition's runs"
    );
    let text = serde_json::to_string(&resolved).unwrap();
    assert!(!text.contains(&world.foreign.instance), "{text}");
    assert!(!text.to_lowercase().contains(GLOBEX), "{text}");

    // A time range needs no reference either.
    let mut window_only = AiContextAttachment::new(AttachmentKind::TimeRange, "");
    window_only.time_range = Some(window());
    assert!(resolve(&world, &caller, window_only).await.is_ok());
    // Still read:workflows.
    let mut whole = AiContextAttachment::new(AttachmentKind::DiagnosticsScope, "");
    whole.time_range = Some(window());
    let error = resolve(
        &world,
        &alice(&[Permission::READ_WORKFLOW_INSTANCES]),
        whole,
    )
    .await
    .unwrap_err();
    assert_eq!(error.status(), 403);
}
