//! Where an Elsa Server is and how to reach it: URL, API path, credentials, Elsa tenant,
//! timeouts and the largest answer read.

use std::time::Duration;

use reqwest::Url;

use super::DEFAULT_API_PATH;

/// How Weaver authenticates to Elsa Server. `Debug` never shows the secret.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElsaCredentials {
    /// No `Authorization` header (an Elsa Server with authentication off).
    #[default]
    None,
    /// `Authorization: ApiKey <key>`: an Elsa API key.
    ApiKey(String),
    /// `Authorization: Bearer <token>`: a token from Elsa's identity or another issuer.
    BearerToken(String),
}

impl ElsaCredentials {
    /// The secret itself, if any.
    pub fn secret(&self) -> Option<&str> {
        match self {
            Self::None => None,
            Self::ApiKey(secret) | Self::BearerToken(secret) => Some(secret),
        }
    }

    /// The scheme Elsa reads the secret with (`ApiKey` or `Bearer`).
    pub fn scheme(&self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::ApiKey(_) => Some("ApiKey"),
            Self::BearerToken(_) => Some("Bearer"),
        }
    }

    pub(super) fn header_value(&self) -> Option<String> {
        Some(format!("{} {}", self.scheme()?, self.secret()?))
    }
}

impl std::fmt::Debug for ElsaCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.scheme() {
            None => f.write_str("None"),
            Some(scheme) => write!(f, "{scheme}(<redacted>)"),
        }
    }
}

/// Why an Elsa Server configuration cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ElsaServerConfigError(String);

impl ElsaServerConfigError {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Where an Elsa Server is and how to talk to it.
#[derive(Clone, Debug)]
pub struct ElsaServerConfig {
    pub(super) url: Url,
    pub(super) api_path: String,
    pub(super) credentials: ElsaCredentials,
    pub(super) elsa_tenant_id: Option<String>,
    pub(super) timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) max_body_bytes: usize,
}

impl ElsaServerConfig {
    /// The Elsa Server at `url` (`http` or `https`), its API under [`DEFAULT_API_PATH`], with
    /// no credentials, a 30 s request timeout, a 5 s connect timeout and answers of at most
    /// 32 MiB. A URL with a user name or password is refused: credentials are configured
    /// with [`ElsaServerConfig::api_key`] or [`ElsaServerConfig::bearer_token`], where they
    /// are kept out of logs and errors.
    pub fn new(url: &str) -> Result<Self, ElsaServerConfigError> {
        let parsed = Url::parse(url.trim()).map_err(|error| {
            ElsaServerConfigError::new(format!("'{url}' is not a URL: {error}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ElsaServerConfigError::new(format!(
                "the Elsa Server URL must be http or https, not {}",
                parsed.scheme()
            )));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            // The URL is not echoed: it holds a credential.
            return Err(ElsaServerConfigError::new(
                "the Elsa Server URL must not contain a user name or password; configure an \
                 API key or a bearer token instead",
            ));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(ElsaServerConfigError::new(format!(
                "the Elsa Server URL '{url}' must not have a query or fragment"
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(ElsaServerConfigError::new(format!(
                "the Elsa Server URL '{url}' has no host"
            )));
        }
        Ok(Self {
            url: parsed,
            api_path: DEFAULT_API_PATH.to_owned(),
            credentials: ElsaCredentials::None,
            elsa_tenant_id: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_body_bytes: 32 * 1024 * 1024,
        })
    }

    /// The path of Elsa's API below the URL (Elsa's `ApiEndpointOptions.RoutePrefix`;
    /// default `elsa/api`; empty when the URL is the API base itself).
    pub fn api_path(mut self, path: &str) -> Self {
        self.api_path = path.trim_matches('/').to_owned();
        self
    }

    /// Authenticates with an Elsa API key (`Authorization: ApiKey <key>`).
    pub fn api_key(self, key: impl Into<String>) -> Self {
        self.credentials(ElsaCredentials::ApiKey(key.into()))
    }

    /// Authenticates with a bearer token (`Authorization: Bearer <token>`).
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        self.credentials(ElsaCredentials::BearerToken(token.into()))
    }

    /// Authenticates as `credentials` say.
    pub fn credentials(mut self, credentials: ElsaCredentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// Sends `X-Tenant-Id: <id>` with every request, for an Elsa Server that resolves its
    /// tenant from that header.
    pub fn elsa_tenant_id(mut self, id: impl Into<String>) -> Self {
        self.elsa_tenant_id = Some(id.into());
        self
    }

    /// How long one request may take in all.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long connecting may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest answer read, in bytes; a larger one is a
    /// [`WorkflowError::Backend`](crate::WorkflowError::Backend).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The API base every endpoint is below: the URL followed by the API path, unless the
    /// URL already ends with that path (`https://elsa.example/elsa/api` is taken as is).
    pub fn api_base(&self) -> String {
        self.api_base_url().into()
    }

    /// [`api_base`](Self::api_base) as the HTTP client's URL type.
    pub(super) fn api_base_url(&self) -> Url {
        let mut base = self.url.clone();
        let wanted: Vec<&str> = self.api_path.split('/').filter(|s| !s.is_empty()).collect();
        let present: Vec<&str> = base
            .path_segments()
            .map(|segments| segments.filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        if !present.ends_with(&wanted)
            && let Ok(mut path) = base.path_segments_mut()
        {
            path.pop_if_empty().extend(wanted);
        }
        base
    }

    /// The credentials configured.
    pub fn credentials_in_use(&self) -> &ElsaCredentials {
        &self.credentials
    }
}

#[cfg(test)]
mod tests {
    use super::super::ElsaServerBackend;
    use super::*;
    use crate::TenantId;

    #[test]
    fn the_api_base_follows_the_url() {
        let base = |url: &str, path: Option<&str>| {
            let mut config = ElsaServerConfig::new(url).expect("valid");
            if let Some(path) = path {
                config = config.api_path(path);
            }
            config.api_base()
        };
        assert_eq!(
            base("https://elsa.example/", None),
            "https://elsa.example/elsa/api"
        );
        assert_eq!(
            base("https://elsa.example", None),
            "https://elsa.example/elsa/api"
        );
        assert_eq!(
            base("https://elsa.example/tools/", None),
            "https://elsa.example/tools/elsa/api"
        );
        assert_eq!(
            base("https://elsa.example/elsa/api/", None),
            "https://elsa.example/elsa/api/"
        );
        assert_eq!(
            base("http://127.0.0.1:9000/", Some("/workflows/api/")),
            "http://127.0.0.1:9000/workflows/api"
        );
        assert_eq!(
            base("http://10.0.0.1:9000/api", Some("")),
            "http://10.0.0.1:9000/api"
        );
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_credentials() {
        for url in [
            "elsa.example",
            "ftp://elsa.example/",
            "https://elsa.example/?x=1",
        ] {
            assert!(ElsaServerConfig::new(url).is_err(), "{url}");
        }
        let error = ElsaServerConfig::new("https://admin:hunter22@elsa.example/").unwrap_err();
        assert!(!error.to_string().contains("hunter22"), "{error}");
        let config = ElsaServerConfig::new("https://elsa.example/")
            .unwrap()
            .api_key("top-secret-key");
        assert!(!format!("{config:?}").contains("top-secret-key"));
        assert_eq!(config.credentials_in_use().scheme(), Some("ApiKey"));
        let backend = ElsaServerBackend::new(TenantId::new("acme"), config).unwrap();
        assert!(!format!("{backend:?}").contains("top-secret-key"));
        let newline = ElsaServerConfig::new("https://elsa.example/")
            .unwrap()
            .bearer_token("a\nb");
        let error = ElsaServerBackend::new(TenantId::new("acme"), newline).unwrap_err();
        assert!(!error.to_string().contains("a\nb"), "{error}");
    }
}
