//! The provider's configuration, as a host writes it (`[provider]` or a `[[providers]]`
//! entry in TOML), and what it resolves to: checked URL, key and headers.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use elsa_ai_abstractions::{AiError, is_credential_name};
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

/// The value of the `kind` key that selects this provider.
pub const PROVIDER_KIND: &str = "openai";

/// The configuration of the OpenAI-compatible provider (snake_case keys).
///
/// ```toml
/// [provider]
/// kind = "openai"
/// base_url = "http://127.0.0.1:11434/v1"   # Ollama, vLLM, LM Studio, OpenAI, Azure …
/// model = "llama3.1"
/// api_key_env = "OPENAI_API_KEY"           # optional for local servers; never logged
/// api = "chat"                             # chat (default) | responses
/// max_tool_rounds = 8
/// request_timeout_s = 60
/// # temperature = 0.0                      # sampling, sent only when set
/// # top_p = 0.9
/// # seed = 42
/// # max_output_tokens = 1024
/// # parallel_tool_calls = false            # one tool call per model request
/// # api_version = "2024-10-21"             # Azure: sent as ?api-version=, key as api-key
/// # headers = { "X-Team" = "a" }           # sent with every request
/// ```
///
/// `Debug` shows header names but never their values.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct OpenAiProviderConfig {
    /// The provider selector a host's configuration carries; accepted when it is `openai`.
    #[serde(default)]
    pub kind: Option<String>,
    /// The API's base URL, up to and including the version segment (`…/v1`).
    pub base_url: String,
    /// The model (or Azure deployment) name sent with every request.
    pub model: String,
    /// The environment variable holding the API key; without it, no key is sent.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Which API to call.
    #[serde(default)]
    pub api: OpenAiApi,
    /// How many model requests that end in tool calls one turn may make.
    #[serde(default = "default_max_tool_rounds")]
    pub max_tool_rounds: u32,
    /// How long one model request may take to answer, and to send its next chunk.
    #[serde(default = "default_request_timeout_s")]
    pub request_timeout_s: u64,
    /// Azure OpenAI's API version: sent as the `api-version` query parameter, and the key
    /// as the `api-key` header instead of a bearer token.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Extra headers sent with every request (for gateways).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Sampling temperature, 0 to 2 (the server's default when unset).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling, above 0 and at most 1.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// A fixed seed, for repeatable answers where the server supports it.
    #[serde(default)]
    pub seed: Option<i64>,
    /// The most tokens one model request may generate.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Whether the model may ask for several tool calls in one answer (`false` keeps a small
    /// model to one call per request).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
}

fn default_max_tool_rounds() -> u32 {
    8
}

fn default_request_timeout_s() -> u64 {
    60
}

impl fmt::Debug for OpenAiProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProviderConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("api", &self.api)
            .field("max_tool_rounds", &self.max_tool_rounds)
            .field("request_timeout_s", &self.request_timeout_s)
            .field("api_version", &self.api_version)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("temperature", &self.temperature)
            .field("top_p", &self.top_p)
            .field("seed", &self.seed)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .finish()
    }
}

/// The OpenAI API the provider calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OpenAiApi {
    /// `POST {base_url}/chat/completions`, streamed (the API every compatible server has).
    #[default]
    Chat,
    /// `POST {base_url}/responses`, streamed, stateless (`store: false`).
    Responses,
}

impl OpenAiApi {
    /// The path below the base URL.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Self::Chat => "chat/completions",
            Self::Responses => "responses",
        }
    }
}

/// The configuration checked, with its secrets read.
#[derive(Clone)]
pub(crate) struct Settings {
    /// The base URL, ending in `/`, so that joining a path keeps its last segment.
    pub base_url: Url,
    pub model: String,
    pub api: OpenAiApi,
    pub max_tool_rounds: u32,
    pub request_timeout: Duration,
    pub api_version: Option<String>,
    /// The credential header and configured headers, sent with every request.
    pub headers: HeaderMap,
    /// Values the host must redact: the key and the values of secret-looking headers.
    pub secrets: Vec<String>,
    /// Sampling and output limits, sent with every request.
    pub sampling: Sampling,
}

/// Sampling settings and the output limit, each sent only when configured (a server's own
/// defaults otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    pub max_output_tokens: Option<u32>,
    pub parallel_tool_calls: Option<bool>,
}

impl Sampling {
    /// Adds the settings to a request body of `api`. The output limit is `max_tokens` on
    /// Chat Completions (the name every compatible server reads) and `max_output_tokens`
    /// on Responses.
    pub(crate) fn apply(&self, body: &mut serde_json::Value, api: OpenAiApi) {
        if let Some(temperature) = self.temperature {
            body["temperature"] = serde_json::json!(temperature);
        }
        if let Some(top_p) = self.top_p {
            body["top_p"] = serde_json::json!(top_p);
        }
        if let Some(seed) = self.seed {
            body["seed"] = serde_json::json!(seed);
        }
        if let Some(limit) = self.max_output_tokens {
            let name = match api {
                OpenAiApi::Chat => "max_tokens",
                OpenAiApi::Responses => "max_output_tokens",
            };
            body[name] = serde_json::json!(limit);
        }
        // Only meaningful with tools; servers refuse it on a request without any.
        if let Some(parallel) = self.parallel_tool_calls
            && body.get("tools").is_some()
        {
            body["parallel_tool_calls"] = serde_json::json!(parallel);
        }
    }
}

fn misconfigured(message: impl Into<String>) -> AiError {
    AiError::unavailable("provider_misconfigured", message)
}

impl OpenAiProviderConfig {
    /// Checks the settings and reads the key through `env`. Every refusal names the setting.
    pub(crate) fn resolve(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, AiError> {
        if let Some(kind) = &self.kind
            && kind != PROVIDER_KIND
        {
            return Err(misconfigured(format!(
                "provider kind '{kind}' is not this provider's ('{PROVIDER_KIND}')"
            )));
        }
        let mut base_url = Url::parse(self.base_url.trim()).map_err(|_| {
            misconfigured(
                "provider.base_url must be an http(s) URL such as http://127.0.0.1:11434/v1",
            )
        })?;
        if !matches!(base_url.scheme(), "http" | "https") || base_url.host().is_none() {
            return Err(misconfigured(
                "provider.base_url must be an http(s) URL such as http://127.0.0.1:11434/v1",
            ));
        }
        if !base_url.path().ends_with('/') {
            let path = format!("{}/", base_url.path());
            base_url.set_path(&path);
        }
        if self.model.trim().is_empty() {
            return Err(misconfigured("provider.model must name a model"));
        }
        if !(1..=64).contains(&self.max_tool_rounds) {
            return Err(misconfigured(
                "provider.max_tool_rounds must be between 1 and 64",
            ));
        }
        if !(1..=3600).contains(&self.request_timeout_s) {
            return Err(misconfigured(
                "provider.request_timeout_s must be between 1 and 3600 seconds",
            ));
        }
        if self.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
            return Err(misconfigured(
                "provider.temperature must be between 0 and 2",
            ));
        }
        if self.top_p.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
            return Err(misconfigured(
                "provider.top_p must be above 0 and at most 1",
            ));
        }
        if self.max_output_tokens == Some(0) {
            return Err(misconfigured(
                "provider.max_output_tokens must be at least 1",
            ));
        }
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                misconfigured(format!("provider.headers: '{name}' is not a header name"))
            })?;
            let mut header_value = HeaderValue::from_str(value).map_err(|_| {
                misconfigured(format!(
                    "provider.headers: the value of '{name}' is not a header value"
                ))
            })?;
            if is_credential_name(name) {
                header_value.set_sensitive(true);
                secrets.push(value.clone());
            }
            headers.insert(header, header_value);
        }
        if let Some(variable) = &self.api_key_env {
            let key = env(variable)
                .filter(|key| !key.trim().is_empty())
                .ok_or_else(|| {
                    misconfigured(format!(
                        "provider.api_key_env names {variable}, which is not set"
                    ))
                })?;
            let key = key.trim().to_owned();
            let (name, value) = if self.api_version.is_some() {
                (HeaderName::from_static("api-key"), key.clone())
            } else {
                (reqwest::header::AUTHORIZATION, format!("Bearer {key}"))
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                misconfigured(format!("the key in {variable} is not a valid header value"))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
            secrets.push(key);
        }
        Ok(Settings {
            base_url,
            model: self.model.trim().to_owned(),
            api: self.api,
            max_tool_rounds: self.max_tool_rounds,
            request_timeout: Duration::from_secs(self.request_timeout_s),
            api_version: self.api_version.clone(),
            headers,
            secrets,
            sampling: Sampling {
                temperature: self.temperature,
                top_p: self.top_p,
                seed: self.seed,
                max_output_tokens: self.max_output_tokens,
                parallel_tool_calls: self.parallel_tool_calls,
            },
        })
    }
}

impl Settings {
    /// The URL of `path` below the base URL, with Azure's `api-version` when configured.
    pub(crate) fn url(&self, path: &str) -> Url {
        let mut url = self
            .base_url
            .join(path)
            .unwrap_or_else(|_| self.base_url.clone());
        if let Some(version) = &self.api_version {
            url.query_pairs_mut().append_pair("api-version", version);
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> OpenAiProviderConfig {
        toml::from_str(&format!(
            "kind = \"openai\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"llama3.1\"\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn sampling_out_of_range_is_refused_naming_the_setting() {
        for (extra, setting) in [
            ("temperature = 2.5", "temperature"),
            ("temperature = -0.1", "temperature"),
            ("top_p = 0.0", "top_p"),
            ("top_p = 1.5", "top_p"),
            ("max_output_tokens = 0", "max_output_tokens"),
        ] {
            let Err(error) = config(extra).resolve(|_| None) else {
                panic!("{extra} is accepted");
            };
            assert!(error.message().contains(setting), "{extra}: {error}");
        }
        assert!(
            config("temperature = 0.0\ntop_p = 1.0\nseed = -7\nmax_output_tokens = 1")
                .resolve(|_| None)
                .is_ok()
        );
    }

    #[test]
    fn defaults_follow_the_documented_values() {
        let config = config("");
        assert_eq!(config.api, OpenAiApi::Chat);
        assert_eq!(config.max_tool_rounds, 8);
        assert_eq!(config.request_timeout_s, 60);
        let settings = config.resolve(|_| None).unwrap();
        assert_eq!(
            settings.url("chat/completions").as_str(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert!(settings.headers.is_empty(), "no key configured, none sent");
    }

    #[test]
    fn the_key_is_a_bearer_token_or_azure_api_key_and_a_secret() {
        let openai = config("api_key_env = \"K\"")
            .resolve(|_| Some("sk-abc".into()))
            .unwrap();
        assert_eq!(openai.headers["authorization"], "Bearer sk-abc");
        assert_eq!(openai.secrets, ["sk-abc"]);
        let azure = config("api_key_env = \"K\"\napi_version = \"2024-10-21\"")
            .resolve(|_| Some("az-key".into()))
            .unwrap();
        assert_eq!(azure.headers["api-key"], "az-key");
        assert_eq!(
            azure.url("responses").as_str(),
            "http://127.0.0.1:11434/v1/responses?api-version=2024-10-21"
        );
    }

    #[test]
    fn secret_looking_headers_are_secrets_and_debug_shows_no_header_value() {
        let config =
            config("headers = { \"X-Team\" = \"blue\", \"X-Gateway-Token\" = \"gw-secret-1\" }");
        let settings = config.resolve(|_| None).unwrap();
        assert_eq!(settings.secrets, ["gw-secret-1"]);
        assert_eq!(settings.headers["x-team"], "blue");
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("gw-secret-1") && !shown.contains("blue"),
            "{shown}"
        );
        assert!(shown.contains("X-Gateway-Token"), "{shown}");
    }

    #[test]
    fn bad_settings_are_refused_with_their_name() {
        let cases = [
            ("base_url = \"ftp://x\"", "base_url"),
            ("max_tool_rounds = 0", "max_tool_rounds"),
            ("request_timeout_s = 0", "request_timeout_s"),
            ("api_key_env = \"MISSING\"", "MISSING"),
            ("headers = { \"bad header\" = \"x\" }", "bad header"),
        ];
        for (extra, named) in cases {
            let text = format!(
                "kind = \"openai\"\nmodel = \"m\"\n{}",
                if extra.starts_with("base_url") {
                    extra.to_owned()
                } else {
                    format!("base_url = \"http://127.0.0.1:1/v1\"\n{extra}")
                }
            );
            let config: OpenAiProviderConfig = toml::from_str(&text).unwrap();
            let Err(error) = config.resolve(|_| None) else {
                panic!("{extra} was accepted");
            };
            assert_eq!(error.code(), "provider_misconfigured");
            assert!(
                error.message().contains(named),
                "{extra}: {}",
                error.message()
            );
        }
        let unknown = toml::from_str::<OpenAiProviderConfig>(
            "base_url = \"http://x/v1\"\nmodel = \"m\"\nwire_api = \"chat\"",
        );
        assert!(unknown.unwrap_err().to_string().contains("wire_api"));
        let wrong_kind = toml::from_str::<OpenAiProviderConfig>(
            "kind = \"copilot\"\nbase_url = \"http://x/v1\"\nmodel = \"m\"",
        )
        .unwrap();
        assert!(wrong_kind.resolve(|_| None).is_err());
    }

    #[test]
    fn a_base_url_without_trailing_slash_keeps_its_last_segment() {
        let config = config("");
        let mut custom = config.clone();
        custom.base_url = "https://gateway.example/openai/v1".into();
        let settings = custom.resolve(|_| None).unwrap();
        assert_eq!(
            settings.url("chat/completions").as_str(),
            "https://gateway.example/openai/v1/chat/completions"
        );
    }
}
