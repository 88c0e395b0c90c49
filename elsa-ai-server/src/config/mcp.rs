//! `[[mcp.servers]]`: the external MCP servers whose allowlisted tools weaver offers.

use std::collections::BTreeMap;
use std::time::Duration;

use elsa_ai_abstractions::{
    AiMcpServerRegistration, DangerLevel, McpTransport, Permission, SecretValue, ToolMutability,
};
use elsa_workflows::TenantId;
use serde::Deserialize;

use super::ConfigError;

/// `[mcp]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// `[[mcp.servers]]`, in order.
    #[serde(default)]
    pub servers: Vec<McpServerConfig>,
}

/// `[[mcp.servers]]`: one external MCP server. Secrets are named by the host variables
/// holding them, never written here.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Its tools become `mcp.<name>.<tool>`.
    pub name: String,
    /// stdio: the program to start (not with `url`).
    pub command: Option<String>,
    /// Streamable HTTP: the endpoint (not with `command`).
    pub url: Option<String>,
    /// The program's arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Plain variables for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Child variable → the host variable holding its (secret) value.
    #[serde(default)]
    pub secret_env: BTreeMap<String, String>,
    /// Plain headers (HTTP only).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Header → the host variable holding its (secret) value (HTTP only).
    #[serde(default)]
    pub secret_headers: BTreeMap<String, String>,
    /// The allowlist: no other tool of the server exists for weaver.
    pub tools: Vec<String>,
    /// What a caller needs to use them.
    #[serde(default)]
    pub permissions: Vec<String>,
    /// Agents allowed to use them (default: every agent).
    pub agents: Option<Vec<String>>,
    /// Tenants that see the server (default: all).
    pub tenants: Option<Vec<String>>,
    /// `ReadOnly` (default), `Proposal` or `Administrative`.
    pub mutability: Option<ToolMutability>,
    /// `Low`, `Medium` (default), `High` or `Critical`.
    pub danger_level: Option<DangerLevel>,
    /// Seconds one call may take (default 30).
    pub timeout_s: Option<u64>,
}

/// Whether `name` can be one dot-separated segment of a tool name.
fn is_segment(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl McpConfig {
    /// The registrations, with secrets read through `env`. Every mistake is refused with the
    /// server's name and what to fix; a secret's value never appears in a message.
    pub fn registrations(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<AiMcpServerRegistration>, ConfigError> {
        let mut seen = Vec::new();
        self.servers
            .iter()
            .map(|server| {
                if seen.contains(&server.name.as_str()) {
                    return Err(ConfigError::Invalid(format!(
                        "[[mcp.servers]] names '{}' twice",
                        server.name
                    )));
                }
                seen.push(&server.name);
                server.registration(env)
            })
            .collect()
    }
}

impl McpServerConfig {
    fn invalid(&self, what: impl std::fmt::Display) -> ConfigError {
        ConfigError::Invalid(format!("[[mcp.servers]] '{}': {what}", self.name))
    }

    fn secrets(
        &self,
        entries: &BTreeMap<String, String>,
        key: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, SecretValue)>, ConfigError> {
        entries
            .iter()
            .map(|(name, variable)| match env(variable) {
                Some(value) if !value.is_empty() => Ok((name.clone(), SecretValue::new(value))),
                _ => Err(self.invalid(format!(
                    "{key} {name} reads the environment variable {variable}, which is not set"
                ))),
            })
            .collect()
    }

    fn registration(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<AiMcpServerRegistration, ConfigError> {
        if !is_segment(&self.name) {
            return Err(ConfigError::Invalid(format!(
                "[[mcp.servers]] name '{}' must start with a lowercase letter and hold only \
                 letters, digits, '_' and '-'",
                self.name
            )));
        }
        let transport = match (&self.command, &self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() || !self.secret_headers.is_empty() {
                    return Err(self.invalid("headers and secret_headers need url, not command"));
                }
                if command.trim().is_empty() {
                    return Err(self.invalid("command is empty"));
                }
                McpTransport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.clone().into_iter().collect(),
                    secret_env: self.secrets(&self.secret_env, "secret_env", env)?,
                }
            }
            (None, Some(url)) => {
                if !self.env.is_empty() || !self.secret_env.is_empty() || !self.args.is_empty() {
                    return Err(self.invalid("args, env and secret_env need command, not url"));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(self.invalid("url must start with http:// or https://"));
                }
                McpTransport::Http {
                    url: url.clone(),
                    headers: self.headers.clone().into_iter().collect(),
                    secret_headers: self.secrets(&self.secret_headers, "secret_headers", env)?,
                }
            }
            _ => return Err(self.invalid("set exactly one of command (stdio) and url (HTTP)")),
        };
        if self.tools.is_empty() {
            return Err(
                self.invalid("tools is the required allowlist; list the tools weaver may offer")
            );
        }
        if let Some(tool) = self.tools.iter().find(|tool| !is_segment(tool)) {
            return Err(self.invalid(format!(
                "tool '{tool}' cannot be offered as mcp.{}.{tool}: tool names must start with \
                 a lowercase letter and hold only letters, digits, '_' and '-'",
                self.name
            )));
        }
        if self.permissions.iter().all(|p| p.trim().is_empty()) {
            return Err(self.invalid(
                "permissions must name what a caller needs (for example [\"read:workflows\"])",
            ));
        }
        if self.agents.as_ref().is_some_and(Vec::is_empty)
            || self.tenants.as_ref().is_some_and(Vec::is_empty)
        {
            return Err(self.invalid("agents and tenants, when given, must not be empty"));
        }
        let timeout = match self.timeout_s {
            Some(0) => return Err(self.invalid("timeout_s must be at least 1")),
            Some(seconds) => Duration::from_secs(seconds),
            None => AiMcpServerRegistration::DEFAULT_TIMEOUT,
        };
        let mut registration = AiMcpServerRegistration::new(
            self.name.clone(),
            transport,
            self.tools.clone(),
            self.permissions
                .iter()
                .cloned()
                .map(Permission::new)
                .collect(),
        );
        registration.allowed_agents = self.agents.clone();
        registration.tenants = self
            .tenants
            .as_ref()
            .map(|tenants| tenants.iter().cloned().map(TenantId::from).collect());
        registration.mutability = self.mutability.unwrap_or(ToolMutability::ReadOnly);
        registration.danger_level = self.danger_level.unwrap_or(DangerLevel::Medium);
        registration.timeout = timeout;
        Ok(registration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WeaverConfig;

    fn parse(text: &str) -> McpConfig {
        WeaverConfig::from_toml(text).unwrap().mcp
    }

    fn env(name: &str) -> Option<String> {
        (name == "HOST_TOKEN").then(|| "tok-9f8e7d6c5b4a".to_owned())
    }

    #[test]
    fn a_stdio_server_reads_its_secrets_from_the_host_environment() {
        let config = parse(
            r#"
            [[mcp.servers]]
            name = "everything"
            command = "mcp-server-everything"
            env = { LOG_LEVEL = "info" }
            secret_env = { API_TOKEN = "HOST_TOKEN" }
            tools = ["echo", "get-env"]
            permissions = ["read:workflows"]
            agents = ["workflow-author"]
            tenants = ["acme"]
            timeout_s = 5
            "#,
        );
        let registration = &config.registrations(&env).unwrap()[0];
        assert_eq!(registration.tool_name("get-env"), "mcp.everything.get-env");
        assert_eq!(registration.mutability, ToolMutability::ReadOnly);
        assert_eq!(registration.danger_level, DangerLevel::Medium);
        assert_eq!(registration.timeout, Duration::from_secs(5));
        assert_eq!(registration.tenants, Some(vec![TenantId::from("acme")]));
        let McpTransport::Stdio {
            env, secret_env, ..
        } = &registration.transport
        else {
            panic!("stdio expected");
        };
        assert_eq!(env, &[("LOG_LEVEL".to_owned(), "info".to_owned())]);
        assert_eq!(secret_env[0].1.expose(), "tok-9f8e7d6c5b4a");
        assert!(!format!("{registration:?}").contains("tok-9f8e7d6c5b4a"));
    }

    #[test]
    fn mistakes_are_refused_with_the_server_and_what_to_fix() {
        let cases = [
            (
                "command = \"x\"\nurl = \"http://h/mcp\"\ntools = [\"a\"]\npermissions = [\"p\"]",
                "exactly one of command",
            ),
            (
                "tools = [\"a\"]\npermissions = [\"p\"]",
                "exactly one of command",
            ),
            (
                "command = \"x\"\ntools = []\npermissions = [\"p\"]",
                "required allowlist",
            ),
            (
                "command = \"x\"\ntools = [\"Echo\"]\npermissions = [\"p\"]",
                "tool 'Echo'",
            ),
            ("command = \"x\"\ntools = [\"a\"]", "permissions must name"),
            (
                "command = \"x\"\ntools = [\"a\"]\npermissions = [\"p\"]\nheaders = { A = \"b\" }",
                "need url",
            ),
            (
                "url = \"ftp://h\"\ntools = [\"a\"]\npermissions = [\"p\"]",
                "http:// or https://",
            ),
            (
                "url = \"http://h/mcp\"\ntools = [\"a\"]\npermissions = [\"p\"]\nsecret_headers = { Authorization = \"UNSET_VAR\" }",
                "UNSET_VAR, which is not set",
            ),
            (
                "command = \"x\"\ntools = [\"a\"]\npermissions = [\"p\"]\ntimeout_s = 0",
                "timeout_s",
            ),
            (
                "command = \"x\"\ntools = [\"a\"]\npermissions = [\"p\"]\nagents = []",
                "must not be empty",
            ),
        ];
        for (body, expected) in cases {
            let config = parse(&format!("[[mcp.servers]]\nname = \"srv\"\n{body}\n"));
            let error = config.registrations(&env).unwrap_err().to_string();
            assert!(error.contains("'srv'"), "{error}");
            assert!(error.contains(expected), "{body}: {error}");
        }
        let twice = parse(
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\ntools = [\"t\"]\npermissions = [\"p\"]\n\
             [[mcp.servers]]\nname = \"a\"\ncommand = \"y\"\ntools = [\"t\"]\npermissions = [\"p\"]\n",
        );
        assert!(
            twice
                .registrations(&env)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        let bad_name = parse(
            "[[mcp.servers]]\nname = \"Bad.Name\"\ncommand = \"x\"\ntools = [\"t\"]\npermissions = [\"p\"]\n",
        );
        assert!(
            bad_name
                .registrations(&env)
                .unwrap_err()
                .to_string()
                .contains("lowercase")
        );
        assert!(
            WeaverConfig::from_toml("[[mcp.servers]]\nname = \"a\"\ncomand = \"x\"\n")
                .unwrap_err()
                .contains("comand")
        );
    }
}
