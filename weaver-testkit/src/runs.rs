//! A faulted run with everything Elsa records about it, written by this project in Elsa 3's
//! formats, for the runtime diagnosis tools: its definition, its instance (a workflow state
//! with one incident), its activity execution records (inputs, outputs and the root
//! flowchart's variables) and its execution log.
//!
//! The same run can be put into an in-memory backend ([`FaultedRun::seed`]) and into the
//! Elsa Server stand-in ([`FaultedRun::serve`]), so a suite can check that both backends give
//! the tools the same answers. Some recorded values are secrets under sensitive names
//! (`Authorization`, `Set-Cookie`, a variable named `ApiToken`): whatever shows them to a
//! model must have gone through redaction.

use chrono::{DateTime, TimeDelta, Utc};
use elsa_workflows::{
    ActivityExecutionRecord, ExecutionLogEntry, InMemoryWorkflowBackend, TenantId,
    WorkflowDefinition, WorkflowInstance,
};
use serde_json::{Value, json};

use crate::elsa_api::ElsaApiStandIn;

/// The definition the run executes.
pub const RUN_DEFINITION: &str = "invoice-upload";
/// The secret recorded as the upload's `Authorization` input.
pub const SECRET_HEADER: &str = "Bearer eyJhbGciOi.upload-secret-77";
/// The secret recorded as the `ApiToken` variable. Its id, `c7e1f0a29b3d4e58` (in the style
/// of Elsa's generated ids), is not a sensitive name: only the variable's name tells that it
/// is one.
pub const SECRET_VARIABLE: &str = "tok-variable-secret-41";
/// The secret cookie in the upload's recorded response headers.
pub const SECRET_COOKIE: &str = "session=cookie-secret-93";
/// The id of the faulted upload's execution.
pub const UPLOAD_EXECUTION: &str = "exec-upload";
/// The id of the root flowchart's execution.
pub const FLOWCHART_EXECUTION: &str = "exec-flowchart";

/// One faulted run of [`RUN_DEFINITION`] as Elsa records it.
#[derive(Clone, Debug)]
pub struct FaultedRun {
    /// The instance id.
    pub instance_id: String,
    /// When it started.
    pub started: DateTime<Utc>,
}

impl FaultedRun {
    /// A run `instance_id` that started at `started` (RFC 3339).
    ///
    /// # Panics
    ///
    /// When `started` is not RFC 3339.
    pub fn new(instance_id: &str, started: &str) -> Self {
        Self {
            instance_id: instance_id.to_owned(),
            started: started.parse().expect("an RFC 3339 start"),
        }
    }

    fn at(&self, ms: i64) -> String {
        (self.started + TimeDelta::milliseconds(ms)).to_rfc3339()
    }

    /// The definition (version 2, published): a flowchart declaring `InvoiceCount` and
    /// `ApiToken`, that collects invoices, uploads them and reports.
    pub fn definition() -> Value {
        let literal = |value: &str| json!({"typeName": "String", "expression": {"type": "Literal", "value": value}});
        json!({
            "id": "invoice-upload-v2",
            "definitionId": RUN_DEFINITION,
            "name": "Invoice upload",
            "version": 2,
            "isLatest": true,
            "isPublished": true,
            "variables": [],
            "root": {
                "id": "Flowchart1",
                "type": "Elsa.Flowchart",
                "version": 1,
                "variables": [
                    {"id": "invoice-count", "name": "InvoiceCount", "typeName": "Int32", "value": "0"},
                    {"id": "c7e1f0a29b3d4e58", "name": "ApiToken", "typeName": "String"}
                ],
                "activities": [
                    {"id": "Start1", "type": "Elsa.Start", "version": 1},
                    {"id": "CollectInvoices", "type": "Elsa.WriteLine", "version": 1,
                     "text": literal("Collecting invoices")},
                    {"id": "UploadExport", "type": "Elsa.SendHttpRequest", "version": 1,
                     "url": {"typeName": "Uri", "expression": {"type": "Literal", "value": "https://exports.example.com/invoices"}},
                     "method": literal("PUT")},
                    {"id": "Report", "type": "Elsa.WriteLine", "version": 1, "text": literal("Uploaded")}
                ],
                "connections": [
                    {"source": {"activity": "Start1", "port": "Done"}, "target": {"activity": "CollectInvoices", "port": "In"}},
                    {"source": {"activity": "CollectInvoices", "port": "Done"}, "target": {"activity": "UploadExport", "port": "In"}},
                    {"source": {"activity": "UploadExport", "port": "Done"}, "target": {"activity": "Report", "port": "In"}}
                ]
            }
        })
    }

    /// The instance: Finished, Faulted, with the upload's incident (tied to its execution by
    /// `activityInstanceId`).
    pub fn instance(&self) -> WorkflowInstance {
        let message = "Response status code does not indicate success: 503 (Service Unavailable).";
        WorkflowInstance::from_value(json!({
            "id": self.instance_id,
            "definitionId": RUN_DEFINITION,
            "definitionVersionId": "invoice-upload-v2",
            "definitionVersion": 2,
            "name": "Invoice upload",
            "status": "Finished",
            "subStatus": "Faulted",
            "bookmarks": [],
            "incidents": [{
                "activityId": "UploadExport",
                "activityNodeId": "Workflow1:Flowchart1:UploadExport",
                "activityInstanceId": UPLOAD_EXECUTION,
                "activityType": "Elsa.SendHttpRequest",
                "message": message,
                "exception": {
                    "type": "System.Net.Http.HttpRequestException, System.Net.Http",
                    "message": message,
                    "stackTrace": "   at System.Net.Http.HttpResponseMessage.EnsureSuccessStatusCode()\r\n   at Elsa.Http.SendHttpRequestBase.ExecuteAsync(ActivityExecutionContext context)"
                },
                "timestamp": self.at(1_200)
            }],
            "activityExecutionContexts": [],
            "createdAt": self.at(0),
            "updatedAt": self.at(1_250),
            "finishedAt": self.at(1_250)
        }))
        .expect("a valid instance")
    }

    /// The activity execution records, as `activity-executions/list` answers with them.
    pub fn execution_records(&self) -> Vec<Value> {
        let record = |id: &str,
                      activity: &str,
                      node: &str,
                      type_name: &str,
                      status: &str,
                      start: i64,
                      end: Option<i64>| {
            json!({
                "id": id,
                "workflowInstanceId": self.instance_id,
                "activityId": activity,
                "activityNodeId": node,
                "activityType": type_name,
                "activityTypeVersion": 1,
                "activityName": null,
                "activityState": {},
                "outputs": {},
                "properties": {},
                "metadata": {},
                "exception": null,
                "startedAt": self.at(start),
                "hasBookmarks": false,
                "status": status,
                "aggregateFaultCount": 0,
                "completedAt": end.map(|ms| self.at(ms)),
                "tenantId": null
            })
        };
        let mut flowchart = record(
            FLOWCHART_EXECUTION,
            "Flowchart1",
            "Workflow1:Flowchart1",
            "Elsa.Flowchart",
            "Faulted",
            0,
            None,
        );
        flowchart["properties"] =
            json!({"Variables": {"invoice-count": 42, "c7e1f0a29b3d4e58": SECRET_VARIABLE}});
        flowchart["aggregateFaultCount"] = json!(1);
        let start = record(
            "exec-start",
            "Start1",
            "Workflow1:Flowchart1:Start1",
            "Elsa.Start",
            "Completed",
            10,
            Some(12),
        );
        let mut collect = record(
            "exec-collect",
            "CollectInvoices",
            "Workflow1:Flowchart1:CollectInvoices",
            "Elsa.WriteLine",
            "Completed",
            20,
            Some(40),
        );
        collect["activityName"] = json!("Collect invoices");
        collect["activityState"] = json!({"Text": "Collecting invoices"});
        let mut upload = record(
            UPLOAD_EXECUTION,
            "UploadExport",
            "Workflow1:Flowchart1:UploadExport",
            "Elsa.SendHttpRequest",
            "Faulted",
            50,
            Some(1_200),
        );
        upload["activityName"] = json!("Upload export");
        upload["activityState"] = json!({
            "Url": "https://exports.example.com/invoices",
            "Method": "PUT",
            "Authorization": SECRET_HEADER,
            "Content": {"invoices": 42}
        });
        upload["outputs"] =
            json!({"StatusCode": 503, "ResponseHeaders": {"Set-Cookie": SECRET_COOKIE}});
        upload["exception"] = json!({
            "type": "System.Net.Http.HttpRequestException, System.Net.Http",
            "message": "Response status code does not indicate success: 503 (Service Unavailable).",
            "stackTrace": "   at System.Net.Http.HttpResponseMessage.EnsureSuccessStatusCode()"
        });
        vec![flowchart, start, collect, upload]
    }

    /// The execution log, as Elsa's log store holds it: `Started`, `Completed` and `Faulted`
    /// events in sequence.
    pub fn execution_log(&self) -> Vec<Value> {
        let events = [
            (
                "exec-flowchart",
                "Flowchart1",
                "Elsa.Flowchart",
                "Started",
                None,
                0,
            ),
            ("exec-start", "Start1", "Elsa.Start", "Started", None, 10),
            ("exec-start", "Start1", "Elsa.Start", "Completed", None, 12),
            (
                "exec-collect",
                "CollectInvoices",
                "Elsa.WriteLine",
                "Started",
                None,
                20,
            ),
            (
                "exec-collect",
                "CollectInvoices",
                "Elsa.WriteLine",
                "Completed",
                None,
                40,
            ),
            (
                UPLOAD_EXECUTION,
                "UploadExport",
                "Elsa.SendHttpRequest",
                "Started",
                None,
                50,
            ),
            (
                UPLOAD_EXECUTION,
                "UploadExport",
                "Elsa.SendHttpRequest",
                "Faulted",
                Some("Response status code does not indicate success: 503 (Service Unavailable)."),
                1_200,
            ),
        ];
        events
            .iter()
            .enumerate()
            .map(|(sequence, (execution, activity, type_name, event, message, ms))| {
                let node = if *activity == "Flowchart1" {
                    "Workflow1:Flowchart1".to_owned()
                } else {
                    format!("Workflow1:Flowchart1:{activity}")
                };
                json!({
                    "id": format!("{}-log-{sequence}", self.instance_id),
                    "workflowDefinitionId": RUN_DEFINITION,
                    "workflowDefinitionVersionId": "invoice-upload-v2",
                    "workflowInstanceId": self.instance_id,
                    "workflowVersion": 2,
                    "activityInstanceId": execution,
                    "parentActivityInstanceId": (*activity != "Flowchart1").then_some(FLOWCHART_EXECUTION),
                    "activityId": activity,
                    "activityType": type_name,
                    "activityTypeVersion": 1,
                    "activityNodeId": node,
                    "timestamp": self.at(*ms),
                    "sequence": sequence,
                    "eventName": event,
                    "message": message,
                    "source": "ExecutionLogMiddleware.cs:27",
                    "payload": null
                })
            })
            .collect()
    }

    /// Puts the definition (unless present), the instance, its records and its log into
    /// `backend` under `tenant`.
    ///
    /// # Panics
    ///
    /// When the run's own documents do not read back (a bug in this module).
    pub fn seed(&self, backend: &InMemoryWorkflowBackend, tenant: &TenantId) {
        if backend
            .definition_versions(tenant, RUN_DEFINITION)
            .is_empty()
        {
            let definition =
                WorkflowDefinition::from_value(Self::definition()).expect("a valid definition");
            backend
                .insert_definition(tenant, definition)
                .expect("a new definition");
        }
        backend.insert_instance(tenant, self.instance());
        let records = self.execution_records();
        backend.insert_activity_executions(
            tenant,
            &self.instance_id,
            records
                .iter()
                .map(|r| ActivityExecutionRecord::from_json(r).expect("a record")),
        );
        let log = self.execution_log();
        backend.insert_execution_log(
            tenant,
            &self.instance_id,
            log.iter()
                .map(|e| ExecutionLogEntry::from_json(e).expect("an entry")),
        );
    }

    /// Puts the definition, the instance, its records and its log into the stand-in.
    pub fn serve(&self, elsa: &ElsaApiStandIn) {
        if elsa.versions(RUN_DEFINITION).is_empty() {
            elsa.insert_definition(Self::definition());
        }
        elsa.insert_instance(&self.instance(), self.started);
        for record in self.execution_records() {
            elsa.insert_activity_execution(record);
        }
        for entry in self.execution_log() {
            elsa.insert_journal_entry(entry);
        }
    }
}
