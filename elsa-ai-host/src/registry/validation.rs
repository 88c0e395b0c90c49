//! Registration-time validation of tool metadata (SPEC §2): unsafe or ambiguous
//! definitions never enter the registry.

use std::time::Duration;

use elsa_ai_abstractions::{AiToolDefinition, TenantBehavior, ToolMutability, ToolSource};
use serde_json::Value;

/// Longest tool name accepted, in bytes.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Why a tool definition was refused at registration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistrationError {
    /// The name is not namespaced as `namespace.name`: two or more dot-separated segments,
    /// each matching `[a-z][A-Za-z0-9_-]*`, at most [`MAX_TOOL_NAME_LEN`] bytes in all.
    #[error("tool name '{name}' is invalid: {reason}")]
    InvalidName {
        /// The refused name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// MCP-backed tools must be named `mcp.<server>.<tool>`, and only they may use `mcp.`.
    #[error("tool '{name}': MCP-backed tools, and only they, are named mcp.<server>.<tool>")]
    McpNamespace {
        /// The refused name.
        name: String,
    },
    /// Another tool already has this name.
    #[error("tool '{name}' is registered twice")]
    Duplicate {
        /// The duplicated name.
        name: String,
    },
    /// A text field a model or a person relies on is empty.
    #[error("tool '{name}' has an empty {field}")]
    MissingText {
        /// The tool.
        name: String,
        /// `displayName` or `description`.
        field: &'static str,
    },
    /// The tool claims to be on by default although it must be enabled explicitly.
    #[error("tool '{name}' claims enabledByDefault but {reason}")]
    UnsafeDefault {
        /// The tool.
        name: String,
        /// Why it may not be on by default.
        reason: &'static str,
    },
    /// A tool that touches tenant data names no permission.
    #[error("tool '{name}' reads or writes tenant data but requires no permission")]
    MissingPermissions {
        /// The tool.
        name: String,
    },
    /// A permission in the list is empty.
    #[error("tool '{name}' lists an empty permission")]
    EmptyPermission {
        /// The tool.
        name: String,
    },
    /// The input schema is not a compilable JSON Schema for an object.
    #[error("tool '{name}' has an invalid input schema: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// `allowedAgents` is present but empty (use `None` for "any agent that names it").
    #[error("tool '{name}' has an empty allowedAgents list; omit it to allow any agent")]
    EmptyAllowedAgents {
        /// The tool.
        name: String,
    },
    /// The timeout is zero.
    #[error("tool '{name}' has a zero timeout")]
    ZeroTimeout {
        /// The tool.
        name: String,
    },
}

fn invalid(name: &str, reason: &'static str) -> ToolRegistrationError {
    ToolRegistrationError::InvalidName {
        name: name.to_owned(),
        reason,
    }
}

fn check_name(name: &str) -> Result<(), ToolRegistrationError> {
    if name.len() > MAX_TOOL_NAME_LEN {
        return Err(invalid(name, "longer than 128 bytes"));
    }
    let mut segments = 0;
    for segment in name.split('.') {
        segments += 1;
        let mut bytes = segment.bytes();
        match bytes.next() {
            Some(b'a'..=b'z') => {}
            Some(_) => {
                return Err(invalid(
                    name,
                    "each segment must start with a lowercase letter",
                ));
            }
            None => return Err(invalid(name, "empty segment")),
        }
        if !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(invalid(
                name,
                "segments may only hold letters, digits, '_' and '-'",
            ));
        }
    }
    if segments < 2 {
        return Err(invalid(name, "must be namespaced as namespace.name"));
    }
    Ok(())
}

/// The MCP server a tool name belongs to (`mcp.<server>.<tool>`).
pub(super) fn mcp_server(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp.")?;
    let (server, tool) = rest.split_once('.')?;
    (!tool.is_empty()).then_some(server)
}

/// Checks everything about a definition except its schema's compilability and uniqueness.
pub(super) fn check_definition(definition: &AiToolDefinition) -> Result<(), ToolRegistrationError> {
    let name = definition.name.as_str();
    let owned = || name.to_owned();
    check_name(name)?;
    if (definition.source == ToolSource::Mcp) != mcp_server(name).is_some() {
        return Err(ToolRegistrationError::McpNamespace { name: owned() });
    }
    if let Some(grounding) = &definition.grounding_name {
        check_name(grounding)?;
        // A second name under `mcp.` would let a tool pass for an MCP server's.
        if mcp_server(grounding).is_some() {
            return Err(ToolRegistrationError::McpNamespace {
                name: grounding.clone(),
            });
        }
        if grounding == name {
            return Err(invalid(grounding, "the grounding name repeats the name"));
        }
    }
    for (field, text) in [
        ("displayName", &definition.display_name),
        ("description", &definition.description),
    ] {
        if text.trim().is_empty() {
            return Err(ToolRegistrationError::MissingText {
                name: owned(),
                field,
            });
        }
    }
    if definition.enabled_by_default {
        let reason = match (definition.mutability, definition.source) {
            (ToolMutability::Proposal, _) => {
                Some("proposal tools need explicit administrator enablement")
            }
            (ToolMutability::Administrative, _) => {
                Some("administrative tools are disabled in this release")
            }
            (_, ToolSource::Mcp) => Some("MCP-backed tools need explicit administrator enablement"),
            (ToolMutability::ReadOnly, _) => None,
            _ => Some("tools of a mutability this host does not know need explicit enablement"),
        };
        if let Some(reason) = reason {
            return Err(ToolRegistrationError::UnsafeDefault {
                name: owned(),
                reason,
            });
        }
    }
    let touches_tenant_data = matches!(
        definition.tenant_behavior,
        TenantBehavior::TenantScoped | TenantBehavior::CrossTenantDenied
    );
    if touches_tenant_data && definition.permissions.is_empty() {
        return Err(ToolRegistrationError::MissingPermissions { name: owned() });
    }
    if definition
        .permissions
        .iter()
        .any(|p| p.as_str().trim().is_empty())
    {
        return Err(ToolRegistrationError::EmptyPermission { name: owned() });
    }
    if definition
        .allowed_agents
        .as_ref()
        .is_some_and(Vec::is_empty)
    {
        return Err(ToolRegistrationError::EmptyAllowedAgents { name: owned() });
    }
    if definition.timeout == Some(Duration::ZERO) {
        return Err(ToolRegistrationError::ZeroTimeout { name: owned() });
    }
    if definition.input_schema.get("type") != Some(&Value::String("object".into())) {
        return Err(ToolRegistrationError::InvalidSchema {
            name: owned(),
            reason: "the root must be an object schema (\"type\": \"object\")".into(),
        });
    }
    Ok(())
}

/// Compiles the input schema once; arguments are validated against it on every call.
pub(super) fn compile_schema(
    definition: &AiToolDefinition,
) -> Result<jsonschema::Validator, ToolRegistrationError> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(&definition.input_schema)
        .map_err(|error| ToolRegistrationError::InvalidSchema {
            name: definition.name.clone(),
            reason: error.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_namespaced_segments() {
        for good in [
            "workflow.getDefinition",
            "instance.aggregate-failures",
            "mcp.github.get_issue",
        ] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "getDefinition",
            "workflow.",
            ".x",
            "Workflow.get",
            "workflow.get def",
            "a..b",
            "w.9x",
        ] {
            assert!(
                matches!(
                    check_name(bad),
                    Err(ToolRegistrationError::InvalidName { .. })
                ),
                "{bad}"
            );
        }
        assert!(check_name(&format!("a.{}", "b".repeat(200))).is_err());
    }

    #[test]
    fn mcp_server_is_the_second_segment() {
        assert_eq!(mcp_server("mcp.github.get_issue"), Some("github"));
        assert_eq!(mcp_server("mcp.github"), None);
        assert_eq!(mcp_server("workflow.get"), None);
    }
}
