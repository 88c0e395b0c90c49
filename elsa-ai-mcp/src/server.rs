//! Weaver as an MCP server: the caller's governed tools over streamable HTTP.

use std::sync::Arc;

use elsa_ai_abstractions::{
    AiCaller, AiError, AiProviderToolInvocation, AiToolDefinition, AiToolQuery, AiToolRegistry,
    AiToolResult, ToolMutability,
};
use elsa_ai_host::{AgentRegistry, ToolCallScope, ToolGovernor, ToolRegistry};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Serves the host's governed tools to MCP clients (VS Code, Claude Desktop, agent
/// frameworks) over streamable HTTP.
///
/// The layer in front of it authenticates every HTTP request and puts the [`AiCaller`] into
/// the request's extensions; a request without one is refused. `tools/list` returns exactly
/// what that caller may call under the agent named by `?agent=` (default
/// `workflow-author`): permissions, tenant, enablement and agent scope, named as in
/// `/ai/tools`. `tools/call` goes through the [`ToolGovernor`] like a provider's call: a
/// denial is a result with `isError: true` and the reason, and every call is audited with
/// the caller as actor. The endpoint is stateless: each HTTP request stands alone, so it
/// works the same behind any replica.
#[derive(Clone)]
pub struct McpEndpoint {
    registry: Arc<ToolRegistry>,
    governor: ToolGovernor,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEndpoint").finish_non_exhaustive()
    }
}

impl McpEndpoint {
    /// An endpoint over the governor (and the registry it enforces); cancelling `shutdown`
    /// ends the responses still open when the server stops.
    pub fn new(governor: ToolGovernor, shutdown: CancellationToken) -> Self {
        Self {
            registry: governor.registry().clone(),
            governor,
            shutdown,
        }
    }

    /// The endpoint as an axum route handler for every method MCP uses (POST; GET and
    /// DELETE are answered as not allowed, there being no sessions).
    pub fn into_route<S: Clone + Send + Sync + 'static>(self) -> axum::routing::MethodRouter<S> {
        let shutdown = self.shutdown.clone();
        // Host validation guards unauthenticated local servers against DNS rebinding; this
        // endpoint authenticates every request with a header a browser never adds across
        // origins, and runs under whatever host name the operator gives it.
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_cancellation_token(shutdown)
            .disable_allowed_hosts();
        let service = StreamableHttpService::new(
            move || Ok(Handler(self.clone())),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        axum::routing::any_service(service)
    }
}

/// The authenticated caller and the agent of one HTTP request.
fn who(context: &RequestContext<RoleServer>) -> Result<(AiCaller, String), ErrorData> {
    let parts = context.extensions.get::<http::request::Parts>();
    let caller = parts
        .and_then(|parts| parts.extensions.get::<AiCaller>())
        .cloned()
        .ok_or_else(|| {
            ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                "unauthenticated: send 'Authorization: ApiKey <key>' or 'Authorization: Bearer <token>'",
                None,
            )
        })?;
    let agent = parts
        .and_then(|parts| parts.uri.query())
        .and_then(|query| {
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == "agent")
                .map(|(_, value)| value.to_owned())
        })
        .filter(|agent| !agent.is_empty())
        .unwrap_or_else(|| AgentRegistry::DEFAULT_AGENT.to_owned());
    Ok((caller, agent))
}

/// An [`AiError`] as a JSON-RPC error: the readable message, the code and status as data.
fn protocol_error(error: &AiError) -> ErrorData {
    let code = match error.status() {
        400 | 404 | 422 => ErrorCode::INVALID_PARAMS,
        401 | 403 => ErrorCode::INVALID_REQUEST,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    ErrorData::new(
        code,
        error.message().to_owned(),
        Some(serde_json::json!({ "code": error.code(), "status": error.status() })),
    )
}

/// A Weaver tool as MCP lists it.
fn listed(definition: &AiToolDefinition) -> Tool {
    let schema = match &definition.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => serde_json::Map::new(),
    };
    let read_only = definition.mutability == ToolMutability::ReadOnly;
    Tool::new(
        definition.name.clone(),
        definition.description.clone(),
        Arc::new(schema),
    )
    .with_title(definition.display_name.clone())
    .with_annotations(
        ToolAnnotations::with_title(definition.display_name.clone())
            .read_only(read_only)
            .destructive(false),
    )
}

/// A governed result as MCP returns it: the content as JSON text (and as structured
/// content when it is an object), or the error or denial as readable text with
/// `isError: true`.
fn call_result(result: AiToolResult) -> CallToolResult {
    let text = result.to_model_text();
    if !result.is_success() {
        return CallToolResult::error(vec![ContentBlock::text(text)]);
    }
    let mut answer = CallToolResult::success(vec![ContentBlock::text(text)]);
    if result.content.is_object() {
        answer.structured_content = Some(result.content);
    }
    answer
}

/// The MCP server behind an [`McpEndpoint`]: a type of its own, so that no `rmcp` trait is
/// part of the endpoint's public API.
struct Handler(McpEndpoint);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("weaver", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Weaver's governed tools for Elsa Workflows. Changes are proposals that a \
                 person reviews and applies; no tool writes a workflow.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (caller, agent) = who(&context)?;
        let query = AiToolQuery {
            agent: Some(agent),
            ..AiToolQuery::for_caller(caller)
        };
        let tools = self
            .0
            .registry
            .list(&query)
            .await
            .map_err(|e| protocol_error(&e))?;
        Ok(ListToolsResult::with_all_items(
            tools.iter().map(|definition| listed(definition)).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (caller, agent) = who(&context)?;
        let scope = ToolCallScope::new(caller, agent).with_cancellation(context.ct.clone());
        let invocation = AiProviderToolInvocation {
            call_id: format!("mcp-{}", uuid::Uuid::new_v4()),
            tool_name: request.name.into_owned(),
            arguments: Value::Object(request.arguments.unwrap_or_default()),
        };
        let result = self.0.governor.bind(scope).invoke(invocation).await;
        Ok(call_result(result).into())
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::AiToolError;
    use serde_json::json;

    use super::*;

    #[test]
    fn denials_are_error_results_with_the_reason() {
        let denied = AiToolResult::denied(&AiError::forbidden(
            "permission_denied",
            "missing permission 'read:workflows'",
        ));
        let result = call_result(denied);
        assert_eq!(result.is_error, Some(true));
        let text = &result.content[0].as_text().unwrap().text;
        let parsed: Value = serde_json::from_str(text).unwrap();
        let error: AiToolError = serde_json::from_value(parsed["error"].clone()).unwrap();
        assert_eq!(
            (error.code.as_str(), error.status),
            ("permission_denied", 403)
        );
    }

    #[test]
    fn object_results_are_also_structured_content() {
        let result = call_result(AiToolResult::success(json!({"id": "w1"})));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(json!({"id": "w1"})));
        let listed = call_result(AiToolResult::success(json!([1, 2])));
        assert_eq!(listed.structured_content, None);
        assert_eq!(listed.content[0].as_text().unwrap().text, "[1,2]");
    }

    #[test]
    fn not_found_and_forbidden_map_to_protocol_codes() {
        let missing = protocol_error(&AiError::not_found("agent 'x'"));
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        let forbidden = protocol_error(&AiError::forbidden("permission_denied", "no"));
        assert_eq!(forbidden.code, ErrorCode::INVALID_REQUEST);
    }
}
