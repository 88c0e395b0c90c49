//! The provider's configuration: what a host writes (`[provider]` in TOML) and what the
//! provider resolves it to (the CLI to run, the model endpoint, the key by reference).

use std::fmt;
use std::path::{Path, PathBuf};

use elsa_ai_abstractions::AiError;
use serde::Deserialize;

/// The environment variable that names the Copilot CLI when `cli_path` is not configured.
pub const CLI_PATH_ENV: &str = "COPILOT_CLI_PATH";

/// The value of the `kind` key that selects this provider.
pub const PROVIDER_KIND: &str = "copilot";

/// The configuration of the Copilot provider, as a host deserialises it (snake_case keys).
///
/// ```toml
/// [provider]
/// kind = "copilot"
/// cli_path = "node_modules/.bin/copilot"   # default: COPILOT_CLI_PATH, then `copilot` on PATH
/// model = "gpt-4.1"
/// byok_type = "openai"                      # openai | azure | anthropic
/// base_url = "http://127.0.0.1:11434/v1"
/// api_key_env = "OPENAI_API_KEY"            # the key is read from this variable, never logged
/// ```
///
/// Without `base_url` the CLI talks to GitHub-hosted models, which needs a GitHub token
/// (`github_token_env`): the provider never uses the machine's logged-in GitHub user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "snake_case")]
pub struct CopilotProviderConfig {
    /// The provider selector a host's configuration carries; accepted when it is `copilot`.
    pub kind: Option<String>,
    /// The Copilot CLI to run. Relative paths are resolved against the working directory.
    pub cli_path: Option<PathBuf>,
    /// The model name sent to the endpoint (any name the endpoint serves, for BYOK).
    pub model: Option<String>,
    /// The kind of bring-your-own-key endpoint; defaults to `openai` when `base_url` is set.
    pub byok_type: Option<ByokType>,
    /// The endpoint's base URL, such as `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// The name of the environment variable holding the endpoint's API key.
    pub api_key_env: Option<String>,
    /// The OpenAI/Azure API shape: chat completions (default) or responses.
    pub wire_api: Option<WireApi>,
    /// For GitHub-hosted models: the environment variable holding a GitHub token.
    pub github_token_env: Option<String>,
}

/// The bring-your-own-key endpoint types the Copilot CLI supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ByokType {
    /// An OpenAI-compatible API (OpenAI, Ollama, vLLM, LM Studio, llama.cpp, ...).
    Openai,
    /// Azure OpenAI.
    Azure,
    /// Anthropic's messages API.
    Anthropic,
}

impl ByokType {
    /// The name the CLI knows the type by.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Azure => "azure",
            Self::Anthropic => "anthropic",
        }
    }
}

/// The OpenAI/Azure API the CLI calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WireApi {
    /// `POST {base_url}/chat/completions`.
    Completions,
    /// `POST {base_url}/responses`.
    Responses,
}

impl WireApi {
    /// The name the CLI knows the API by.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completions => "completions",
            Self::Responses => "responses",
        }
    }
}

/// Why a configuration cannot be used. Every variant is a 503 (`provider_misconfigured`)
/// when it reaches a client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CopilotConfigError {
    /// `kind` names another provider.
    #[error("provider kind '{0}' is not '{PROVIDER_KIND}'")]
    WrongKind(String),
    /// A BYOK endpoint type was given without its `base_url`.
    #[error("byok_type is set but base_url is missing")]
    MissingBaseUrl,
    /// `base_url` is not an http(s) URL.
    #[error("base_url must be an http:// or https:// URL")]
    InvalidBaseUrl,
    /// A BYOK endpoint needs a model name.
    #[error("model is required when base_url is set")]
    MissingModel,
    /// `wire_api` applies to OpenAI and Azure only.
    #[error("wire_api is only supported for byok_type openai or azure")]
    WireApiNotSupported,
    /// A key setting only makes sense for one kind of endpoint.
    #[error("{0} is set but does not apply without base_url")]
    NotApplicable(&'static str),
    /// A `*_env` setting names an empty or unusable variable name.
    #[error("{setting} must name an environment variable")]
    InvalidVariableName {
        /// The setting.
        setting: &'static str,
    },
    /// The named variable is not set (or empty). The message names the variable, never a value.
    #[error("environment variable {variable} (from {setting}) is not set")]
    MissingSecret {
        /// The setting that names it.
        setting: &'static str,
        /// The variable.
        variable: String,
    },
}

impl From<CopilotConfigError> for AiError {
    fn from(error: CopilotConfigError) -> Self {
        AiError::unavailable("provider_misconfigured", error.to_string())
    }
}

/// A secret read from the environment. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A BYOK endpoint, resolved: its key is read, its URL checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ByokEndpoint {
    pub kind: ByokType,
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// The variable the key came from; removed from the CLI's environment.
    pub api_key_env: Option<String>,
    pub wire_api: Option<WireApi>,
}

/// A configuration checked and with its secrets read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResolvedConfig {
    pub cli_path: Option<PathBuf>,
    pub model: Option<String>,
    pub endpoint: Option<ByokEndpoint>,
    pub github_token: Option<Secret>,
    /// The variables that held secrets; the CLI process does not inherit them.
    pub secret_variables: Vec<String>,
}

impl CopilotProviderConfig {
    /// A configuration for an OpenAI-compatible endpoint with `model`, without a key.
    pub fn openai_compatible(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            model: Some(model.into()),
            byok_type: Some(ByokType::Openai),
            base_url: Some(base_url.into()),
            ..Self::default()
        }
    }

    /// Checks the configuration and reads its secrets through `env` (a variable lookup).
    pub(crate) fn resolve(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ResolvedConfig, CopilotConfigError> {
        if let Some(kind) = &self.kind
            && kind != PROVIDER_KIND
        {
            return Err(CopilotConfigError::WrongKind(kind.clone()));
        }
        let model = self.model.clone().filter(|m| !m.trim().is_empty());
        let mut secret_variables = Vec::new();
        let mut read_secret = |setting: &'static str, variable: &Option<String>| {
            let Some(variable) = variable else {
                return Ok(None);
            };
            if variable.is_empty() || variable.contains(['=', '\0']) {
                return Err(CopilotConfigError::InvalidVariableName { setting });
            }
            secret_variables.push(variable.clone());
            match env(variable) {
                Some(value) if !value.is_empty() => Ok(Some(Secret(value))),
                _ => Err(CopilotConfigError::MissingSecret {
                    setting,
                    variable: variable.clone(),
                }),
            }
        };
        let endpoint = match (&self.base_url, self.byok_type) {
            (None, None) => {
                if self.api_key_env.is_some() {
                    return Err(CopilotConfigError::NotApplicable("api_key_env"));
                }
                if self.wire_api.is_some() {
                    return Err(CopilotConfigError::NotApplicable("wire_api"));
                }
                None
            }
            (None, Some(_)) => return Err(CopilotConfigError::MissingBaseUrl),
            (Some(base_url), kind) => {
                let kind = kind.unwrap_or(ByokType::Openai);
                let url = base_url.trim();
                let valid = ["http://", "https://"]
                    .iter()
                    .any(|scheme| url.len() > scheme.len() && url.starts_with(scheme));
                if !valid || url.contains(char::is_whitespace) {
                    return Err(CopilotConfigError::InvalidBaseUrl);
                }
                if model.is_none() {
                    return Err(CopilotConfigError::MissingModel);
                }
                if self.wire_api.is_some() && kind == ByokType::Anthropic {
                    return Err(CopilotConfigError::WireApiNotSupported);
                }
                Some(ByokEndpoint {
                    kind,
                    base_url: url.trim_end_matches('/').to_owned(),
                    api_key: read_secret("api_key_env", &self.api_key_env)?,
                    api_key_env: self.api_key_env.clone(),
                    wire_api: self.wire_api,
                })
            }
        };
        let github_token = read_secret("github_token_env", &self.github_token_env)?;
        Ok(ResolvedConfig {
            cli_path: self.cli_path.clone(),
            model,
            endpoint,
            github_token,
            secret_variables,
        })
    }
}

/// Finds the CLI: the configured path, else `COPILOT_CLI_PATH`, else `copilot` on `PATH`.
/// An npm-installed CLI is replaced by its native platform binary (see [`native_binary`]).
pub(crate) fn locate_cli(
    configured: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<PathBuf, AiError> {
    let from_env = env(CLI_PATH_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let (candidate, source) = match (configured, from_env) {
        (Some(path), _) => (Some(path.to_path_buf()), "cli_path"),
        (None, Some(path)) => (Some(path), CLI_PATH_ENV),
        (None, None) => (search_path("copilot", env("PATH").as_deref()), "PATH"),
    };
    let Some(candidate) = candidate else {
        return Err(AiError::unavailable(
            "copilot_cli_not_found",
            format!("no Copilot CLI: set cli_path or {CLI_PATH_ENV}, or put `copilot` on PATH"),
        ));
    };
    if !candidate.is_file() {
        return Err(AiError::unavailable(
            "copilot_cli_not_found",
            format!(
                "the Copilot CLI from {source} does not exist: {}",
                candidate.display()
            ),
        ));
    }
    Ok(native_binary(&candidate).unwrap_or(candidate))
}

/// The first file named `program` in the directories of `path` (a `PATH` value).
pub(crate) fn search_path(program: &str, path: Option<&str>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The native binary behind the npm package's Node.js loader, if `path` is that loader.
///
/// `@github/copilot` installs `npm-loader.js`, which starts the platform package's binary
/// as a child and waits. Launching the binary directly makes the process the SDK owns the
/// server itself, so stopping or killing it never leaves a grandchild behind.
pub(crate) fn native_binary(path: &Path) -> Option<PathBuf> {
    let loader = path.canonicalize().ok()?;
    if loader.file_name()? != "npm-loader.js" {
        return None;
    }
    let package = loader.parent()?;
    if package.file_name()? != "copilot" {
        return None;
    }
    let scope = package.parent()?;
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let binary = if cfg!(windows) {
        "copilot.exe"
    } else {
        "copilot"
    };
    [
        format!("copilot-{os}-{arch}"),
        format!("copilot-{os}musl-{arch}"),
    ]
    .into_iter()
    .map(|name| scope.join(name).join(binary))
    .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    const ISSUE_EXAMPLE: &str = r#"
        [provider]
        kind = "copilot"
        cli_path = "node_modules/.bin/copilot"
        model = "gpt-4.1"
        byok_type = "openai"
        base_url = "http://127.0.0.1:11434/v1"
        api_key_env = "OPENAI_API_KEY"
    "#;

    #[derive(Deserialize)]
    struct File {
        provider: CopilotProviderConfig,
    }

    #[test]
    fn the_documented_toml_section_deserialises() {
        let file: File = toml::from_str(ISSUE_EXAMPLE).unwrap();
        let config = file.provider;
        assert_eq!(config.kind.as_deref(), Some("copilot"));
        assert_eq!(
            config.cli_path.as_deref(),
            Some(Path::new("node_modules/.bin/copilot"))
        );
        assert_eq!(config.byok_type, Some(ByokType::Openai));
        let resolved = config
            .resolve(env(&[("OPENAI_API_KEY", "sk-local")]))
            .unwrap();
        let endpoint = resolved.endpoint.unwrap();
        assert_eq!(endpoint.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(
            endpoint.api_key.as_ref().map(Secret::expose),
            Some("sk-local")
        );
        assert_eq!(resolved.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(resolved.secret_variables, ["OPENAI_API_KEY"]);
    }

    #[test]
    fn the_section_works_as_one_variant_of_a_hosts_provider_choice() {
        // A host choosing the provider by `kind` can deserialise the whole section into
        // this type: `kind` is one of its keys, whether or not the host consumed it.
        #[derive(Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        enum Provider {
            Copilot(CopilotProviderConfig),
            Scripted {},
        }
        #[derive(Deserialize)]
        struct HostFile {
            provider: Provider,
        }
        let file: HostFile = toml::from_str(ISSUE_EXAMPLE).unwrap();
        let Provider::Copilot(config) = file.provider else {
            panic!("copilot chosen")
        };
        assert_eq!(config.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(config.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        let scripted: HostFile = toml::from_str("[provider]\nkind = \"scripted\"\n").unwrap();
        assert!(matches!(scripted.provider, Provider::Scripted {}));
    }

    #[test]
    fn unknown_keys_and_types_are_refused() {
        let typo = "[provider]\nmodle = \"gpt-4.1\"\n";
        assert!(toml::from_str::<File>(typo).is_err());
        let bad_type = "[provider]\nbyok_type = \"gemini\"\n";
        assert!(toml::from_str::<File>(bad_type).is_err());
        let wire =
            "[provider]\nwire_api = \"responses\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"\n";
        let config = toml::from_str::<File>(wire).unwrap().provider;
        assert_eq!(config.wire_api, Some(WireApi::Responses));
    }

    #[test]
    fn another_kind_is_refused() {
        let config = CopilotProviderConfig {
            kind: Some("demo".into()),
            ..CopilotProviderConfig::default()
        };
        assert_eq!(
            config.resolve(env(&[])),
            Err(CopilotConfigError::WrongKind("demo".into()))
        );
    }

    #[test]
    fn byok_needs_a_valid_url_and_a_model() {
        let base = CopilotProviderConfig::openai_compatible("http://127.0.0.1:1/v1/", "llama3");
        let resolved = base.resolve(env(&[])).unwrap();
        let endpoint = resolved.endpoint.unwrap();
        assert_eq!(
            endpoint.base_url, "http://127.0.0.1:1/v1",
            "trailing slash trimmed"
        );
        assert_eq!(endpoint.api_key, None, "local endpoints need no key");

        let no_url = CopilotProviderConfig {
            byok_type: Some(ByokType::Azure),
            model: Some("m".into()),
            ..CopilotProviderConfig::default()
        };
        assert_eq!(
            no_url.resolve(env(&[])),
            Err(CopilotConfigError::MissingBaseUrl)
        );
        for url in ["ftp://x", "127.0.0.1:11434", "http://", "http://a b"] {
            let config = CopilotProviderConfig::openai_compatible(url, "m");
            assert_eq!(
                config.resolve(env(&[])),
                Err(CopilotConfigError::InvalidBaseUrl),
                "{url}"
            );
        }
        let no_model = CopilotProviderConfig {
            model: Some("  ".into()),
            ..base.clone()
        };
        assert_eq!(
            no_model.resolve(env(&[])),
            Err(CopilotConfigError::MissingModel)
        );
        let anthropic_wire = CopilotProviderConfig {
            byok_type: Some(ByokType::Anthropic),
            wire_api: Some(WireApi::Responses),
            ..base
        };
        assert_eq!(
            anthropic_wire.resolve(env(&[])),
            Err(CopilotConfigError::WireApiNotSupported)
        );
    }

    #[test]
    fn a_missing_key_names_the_variable_and_never_a_value() {
        let config = CopilotProviderConfig {
            api_key_env: Some("WEAVER_TEST_KEY".into()),
            ..CopilotProviderConfig::openai_compatible("http://127.0.0.1:1/v1", "m")
        };
        let error = config.resolve(env(&[("WEAVER_TEST_KEY", "")])).unwrap_err();
        assert!(matches!(error, CopilotConfigError::MissingSecret { .. }));
        let ai: AiError = error.into();
        assert_eq!(ai.status(), 503);
        assert_eq!(ai.code(), "provider_misconfigured");
        assert!(ai.message().contains("WEAVER_TEST_KEY"));

        let resolved = config
            .resolve(env(&[("WEAVER_TEST_KEY", "sk-very-secret")]))
            .unwrap();
        let printed = format!("{resolved:?}");
        assert!(!printed.contains("sk-very-secret"), "{printed}");
        assert!(printed.contains("<redacted>"));

        let bad_name = CopilotProviderConfig {
            api_key_env: Some(String::new()),
            ..config
        };
        assert_eq!(
            bad_name.resolve(env(&[])),
            Err(CopilotConfigError::InvalidVariableName {
                setting: "api_key_env"
            })
        );
    }

    #[test]
    fn endpoint_settings_without_an_endpoint_are_refused() {
        let config = CopilotProviderConfig {
            api_key_env: Some("OPENAI_API_KEY".into()),
            ..CopilotProviderConfig::default()
        };
        assert_eq!(
            config.resolve(env(&[])),
            Err(CopilotConfigError::NotApplicable("api_key_env"))
        );
        let hosted = CopilotProviderConfig {
            github_token_env: Some("GH_TOKEN".into()),
            ..CopilotProviderConfig::default()
        };
        let resolved = hosted.resolve(env(&[("GH_TOKEN", "ghp_x")])).unwrap();
        assert!(resolved.endpoint.is_none());
        assert_eq!(
            resolved.github_token.as_ref().map(Secret::expose),
            Some("ghp_x")
        );
    }

    #[test]
    fn the_cli_is_found_in_order_configured_env_path() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let on_path = bin.join("copilot");
        std::fs::write(&a, "").unwrap();
        std::fs::write(&on_path, "").unwrap();
        let path_var = bin.display().to_string();
        let a_var = a.display().to_string();

        let vars = env(&[(CLI_PATH_ENV, "/does/not/exist"), ("PATH", &path_var)]);
        assert_eq!(locate_cli(Some(&a), &vars).unwrap(), a, "configured wins");
        let vars = env(&[(CLI_PATH_ENV, &a_var), ("PATH", &path_var)]);
        assert_eq!(locate_cli(None, &vars).unwrap(), a, "then COPILOT_CLI_PATH");
        let vars = env(&[("PATH", &path_var)]);
        assert_eq!(locate_cli(None, &vars).unwrap(), on_path, "then PATH");

        let missing = locate_cli(None, env(&[])).unwrap_err();
        assert_eq!(
            (missing.status(), missing.code()),
            (503, "copilot_cli_not_found")
        );
        let vars = env(&[(CLI_PATH_ENV, "/does/not/exist")]);
        let missing = locate_cli(None, &vars).unwrap_err();
        assert!(missing.message().contains("/does/not/exist"));
    }

    #[test]
    fn the_npm_loader_is_replaced_by_its_native_binary() {
        let dir = tempfile::tempdir().unwrap();
        let scope = dir.path().join("node_modules/@github");
        let package = scope.join("copilot");
        std::fs::create_dir_all(&package).unwrap();
        let loader = package.join("npm-loader.js");
        std::fs::write(&loader, "").unwrap();
        assert_eq!(
            native_binary(&loader),
            None,
            "no platform package installed"
        );

        let os = match std::env::consts::OS {
            "macos" => "darwin",
            "windows" => "win32",
            other => other,
        };
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => other,
        };
        let platform = scope.join(format!("copilot-{os}-{arch}"));
        std::fs::create_dir_all(&platform).unwrap();
        let binary = platform.join(if cfg!(windows) {
            "copilot.exe"
        } else {
            "copilot"
        });
        std::fs::write(&binary, "").unwrap();
        let found = native_binary(&loader).unwrap();
        assert_eq!(
            found.canonicalize().unwrap(),
            binary.canonicalize().unwrap()
        );
        assert_eq!(native_binary(&binary), None, "a binary is used as it is");
    }
}
