//! An allowlisted tool of an external MCP server, as a Weaver tool.

use std::sync::Arc;

use async_trait::async_trait;
use elsa_ai_abstractions::{
    AiError, AiTool, AiToolDefinition, AiToolExecutionContext, AuditBehavior, TenantBehavior,
    ToolSource,
};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};

use super::connection::McpConnection;

/// Longest error text of a failed MCP tool handed on, in bytes.
const MAX_ERROR_TEXT: usize = 2048;

/// A tool named `mcp.<server>.<tool>`: its metadata from the registration and the server's
/// listing, its execution a `tools/call` on the server. Only the governor runs it, so every
/// call is validated, redacted, clamped, timed out and audited like a built-in tool.
pub(crate) struct McpTool {
    definition: AiToolDefinition,
    server_name: String,
    connection: Arc<McpConnection>,
}

impl McpTool {
    /// The tool for `listed`, one of the allowlisted tools the server offered.
    pub(crate) fn new(connection: Arc<McpConnection>, listed: &Tool) -> Self {
        let registration = connection.registration();
        let server_name = listed.name.to_string();
        let description = listed
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map_or_else(
                || {
                    format!(
                        "Tool '{server_name}' of the MCP server '{}'.",
                        registration.name
                    )
                },
                str::to_owned,
            );
        let display_name = listed
            .title
            .clone()
            .or_else(|| listed.annotations.as_ref().and_then(|a| a.title.clone()))
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| server_name.clone());
        let definition = AiToolDefinition {
            name: registration.tool_name(&server_name),
            grounding_name: None,
            display_name,
            description,
            input_schema: Value::Object(listed.input_schema.as_ref().clone()),
            mutability: registration.mutability,
            danger_level: registration.danger_level,
            permissions: registration.permissions.clone(),
            tenant_behavior: TenantBehavior::TenantScoped,
            audit_behavior: AuditBehavior::RecordInvocationAndResult,
            allowed_agents: registration.allowed_agents.clone(),
            source: ToolSource::Mcp,
            enabled_by_default: false,
            timeout: Some(registration.timeout),
        };
        Self {
            definition,
            server_name,
            connection,
        }
    }
}

#[async_trait]
impl AiTool for McpTool {
    fn definition(&self) -> &AiToolDefinition {
        &self.definition
    }

    async fn execute(&self, context: AiToolExecutionContext) -> Result<Value, AiError> {
        let result = tokio::select! {
            result = self.connection.call(&self.server_name, Arc::unwrap_or_clone(context.arguments)) => result?,
            // Dropping the request future makes rmcp send notifications/cancelled.
            () = context.cancellation.cancelled() => {
                return Err(AiError::unavailable("tool_cancelled", "the call was cancelled"));
            }
        };
        into_content(&self.definition.name, result)
    }
}

/// The result as the model sees it: `content` blocks and, when the server sent it,
/// `structuredContent`. A result the server marks as an error becomes 422
/// `mcp_tool_error` carrying the server's text.
fn into_content(tool: &str, result: CallToolResult) -> Result<Value, AiError> {
    if result.is_error == Some(true) {
        let mut text: String = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        if text.len() > MAX_ERROR_TEXT {
            let mut end = MAX_ERROR_TEXT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        if text.is_empty() {
            text = "the tool reported an error without text".to_owned();
        }
        return Err(AiError::Unprocessable {
            code: "mcp_tool_error".into(),
            message: format!("{tool}: {text}"),
            diagnostics: Vec::new(),
        });
    }
    let mut content = Map::new();
    content.insert(
        "content".into(),
        serde_json::to_value(&result.content).unwrap_or_else(|_| json!([])),
    );
    if let Some(structured) = result.structured_content {
        content.insert("structuredContent".into(), structured);
    }
    Ok(Value::Object(content))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock;

    use super::*;

    #[test]
    fn results_keep_text_and_structured_content() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("Echo: hi")]);
        result.structured_content = Some(json!({"sum": 3}));
        let content = into_content("mcp.s.echo", result).unwrap();
        assert_eq!(content["content"][0]["text"], "Echo: hi");
        assert_eq!(content["content"][0]["type"], "text");
        assert_eq!(content["structuredContent"]["sum"], 3);
    }

    #[test]
    fn error_results_are_typed_errors_with_the_servers_text() {
        let result = CallToolResult::error(vec![ContentBlock::text("bad input".repeat(1000))]);
        let error = into_content("mcp.s.echo", result).unwrap_err();
        assert_eq!((error.status(), error.code()), (422, "mcp_tool_error"));
        assert!(error.message().starts_with("mcp.s.echo: bad input"));
        assert!(error.message().len() <= MAX_ERROR_TEXT + "mcp.s.echo: ".len());
    }
}
