//! `[telemetry]`: where spans and metrics leave the process (OTLP), and an optional listener
//! serving `/metrics` without credentials. Everything is off unless configured.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Uri};
use elsa_ai_abstractions::{SecretValue, is_credential_name};
use serde::Deserialize;

use super::ConfigError;

/// The service name spans and metrics carry unless `service_name` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "weaver";

/// How often metrics are exported over OTLP unless `metrics_interval_secs` says otherwise.
pub const DEFAULT_METRICS_INTERVAL: Duration = Duration::from_secs(60);

/// `[telemetry]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector's base URL (`http://collector:4318`); spans go to
    /// `<base>/v1/traces`, metrics to `<base>/v1/metrics`. `None`: nothing is exported.
    pub otlp_endpoint: Option<String>,
    /// An address serving `GET /metrics` without credentials (for a scraper); the main
    /// listener's `/metrics` keeps requiring `admin:ai`. `None`: no such listener.
    pub metrics_listen: Option<String>,
    /// The `service.name` of exported spans and metrics (default `weaver`).
    pub service_name: Option<String>,
    /// Seconds between metric exports over OTLP (default 60; the last export is at stop).
    pub metrics_interval_secs: Option<u64>,
    /// Headers sent with every export (a tenant or scope header a collector routes on). A
    /// header whose name looks like a credential is treated as a secret.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Headers whose values are secrets, each naming the environment variable that holds
    /// it (`{ Authorization = "OTLP_TOKEN" }`): the collector's credentials.
    #[serde(default)]
    pub secret_headers: BTreeMap<String, String>,
}

/// Where OTLP data goes: the signal endpoints derived from `otlp_endpoint`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpTarget {
    /// `<base>/v1/traces`.
    pub traces: String,
    /// `<base>/v1/metrics`.
    pub metrics: String,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Seconds between metric exports.
    pub metrics_interval: Duration,
    /// Headers sent with every export, plain ones with their values.
    pub headers: Vec<(String, String)>,
    /// Headers whose values are secrets (registered with the redactor).
    pub secret_headers: Vec<(String, SecretValue)>,
}

impl OtlpTarget {
    /// Every header an export carries, by name.
    pub fn all_headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let plain = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let secret = self
            .secret_headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.expose()));
        plain.chain(secret)
    }
}

impl TelemetryConfig {
    fn invalid(message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid(format!("[telemetry] {}", message.into()))
    }

    /// The OTLP endpoints, `None` when `otlp_endpoint` is not set; an error naming what to
    /// fix for a URL that is not `http(s)://host[:port][/path]` (credentials in it are
    /// refused: they would be logged with the URL), an empty service name, a zero interval,
    /// a header that HTTP cannot carry or a secret header whose variable `env` lacks.
    pub fn otlp(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpTarget>, ConfigError> {
        let Some(endpoint) = &self.otlp_endpoint else {
            if self.service_name.is_some()
                || self.metrics_interval_secs.is_some()
                || !self.headers.is_empty()
                || !self.secret_headers.is_empty()
            {
                return Err(Self::invalid(
                    "service_name, metrics_interval_secs, headers and secret_headers apply \
                     to OTLP export: set otlp_endpoint too",
                ));
            }
            return Ok(None);
        };
        let shape = "otlp_endpoint must be the collector's OTLP/HTTP base URL, such as \
                     \"http://127.0.0.1:4318\" (http or https, a host, no query)";
        let uri: Uri = endpoint.trim().parse().map_err(|_| Self::invalid(shape))?;
        let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
        let Some(authority) = uri.authority().filter(|a| !a.host().is_empty()) else {
            return Err(Self::invalid(shape));
        };
        if !scheme_ok || uri.query().is_some() {
            return Err(Self::invalid(shape));
        }
        if authority.as_str().contains('@') {
            return Err(Self::invalid(
                "otlp_endpoint must not hold credentials (user:password@): the URL is shown \
                 in logs and start-up lines",
            ));
        }
        let base = format!(
            "{}://{}{}",
            uri.scheme_str().unwrap_or("http"),
            authority,
            uri.path().trim_end_matches('/')
        );
        let service_name = match &self.service_name {
            Some(name) if name.trim().is_empty() => {
                return Err(Self::invalid("service_name must not be empty"));
            }
            Some(name) => name.trim().to_owned(),
            None => DEFAULT_SERVICE_NAME.to_owned(),
        };
        let metrics_interval = match self.metrics_interval_secs {
            Some(0) => {
                return Err(Self::invalid(
                    "metrics_interval_secs must be at least 1 second",
                ));
            }
            Some(secs) => Duration::from_secs(secs),
            None => DEFAULT_METRICS_INTERVAL,
        };
        // A credential written as a plain header is still a secret.
        let (secret, headers): (Vec<_>, Vec<_>) = self
            .headers
            .clone()
            .into_iter()
            .partition(|(name, _)| is_credential_name(name));
        let mut secret_headers = secret
            .into_iter()
            .map(|(name, value)| (name, SecretValue::new(value)))
            .collect::<Vec<_>>();
        for (name, variable) in &self.secret_headers {
            match env(variable) {
                Some(value) if !value.is_empty() => {
                    secret_headers.push((name.clone(), SecretValue::new(value)));
                }
                _ => {
                    return Err(Self::invalid(format!(
                        "secret_headers {name} reads the environment variable {variable}, \
                         which is not set"
                    )));
                }
            }
        }
        let target = OtlpTarget {
            traces: format!("{base}/v1/traces"),
            metrics: format!("{base}/v1/metrics"),
            service_name,
            metrics_interval,
            headers,
            secret_headers,
        };
        // The exporter drops a header it cannot send without a word: refuse it here instead.
        for (name, value) in target.all_headers() {
            if HeaderName::try_from(name).is_err() {
                return Err(Self::invalid(format!(
                    "header name '{name}' is not a valid HTTP header name"
                )));
            }
            if HeaderValue::try_from(value).is_err() {
                return Err(Self::invalid(format!(
                    "the value of header {name} is not a valid HTTP header value (no line \
                     breaks or control characters)"
                )));
            }
        }
        Ok(Some(target))
    }

    /// The address of the unauthenticated `/metrics` listener, `None` when not set; an error
    /// for something that is not an address, or the main listener's own address.
    pub fn metrics_listen(&self, listen: SocketAddr) -> Result<Option<SocketAddr>, ConfigError> {
        let Some(text) = &self.metrics_listen else {
            return Ok(None);
        };
        let address: SocketAddr = text.trim().parse().map_err(|_| {
            Self::invalid(format!(
                "metrics_listen = \"{text}\" is not an address such as 127.0.0.1:9464"
            ))
        })?;
        if address == listen && address.port() != 0 {
            return Err(Self::invalid(format!(
                "metrics_listen must differ from listen ({listen}): the main listener's \
                 /metrics requires admin:ai"
            )));
        }
        Ok(Some(address))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn endpoint(url: &str) -> TelemetryConfig {
        TelemetryConfig {
            otlp_endpoint: Some(url.to_owned()),
            ..TelemetryConfig::default()
        }
    }

    #[test]
    fn nothing_is_exported_or_listened_on_unless_configured() {
        let off = TelemetryConfig::default();
        assert_eq!(off.otlp(&no_env).unwrap(), None);
        let listen = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(off.metrics_listen(listen).unwrap(), None);
    }

    #[test]
    fn the_endpoint_is_a_base_url_the_signal_paths_go_below() {
        let target = endpoint("http://127.0.0.1:4318/")
            .otlp(&no_env)
            .unwrap()
            .unwrap();
        assert_eq!(target.traces, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(target.metrics, "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(target.service_name, DEFAULT_SERVICE_NAME);
        assert_eq!(target.metrics_interval, DEFAULT_METRICS_INTERVAL);
        let prefixed = TelemetryConfig {
            service_name: Some("weaver-eu".into()),
            metrics_interval_secs: Some(5),
            ..endpoint("https://otel.example.com/otlp")
        };
        let target = prefixed.otlp(&no_env).unwrap().unwrap();
        assert_eq!(target.traces, "https://otel.example.com/otlp/v1/traces");
        assert_eq!(target.service_name, "weaver-eu");
        assert_eq!(target.metrics_interval, Duration::from_secs(5));
    }

    #[test]
    fn unusable_settings_are_refused_naming_the_key() {
        for (config, named) in [
            (endpoint("collector:4318"), "otlp_endpoint"),
            (endpoint("ftp://collector:4318"), "otlp_endpoint"),
            (endpoint("http://collector:4318/?x=1"), "otlp_endpoint"),
            (endpoint("not a url"), "otlp_endpoint"),
            (
                TelemetryConfig {
                    metrics_interval_secs: Some(0),
                    ..endpoint("http://c:4318")
                },
                "metrics_interval_secs",
            ),
            (
                TelemetryConfig {
                    service_name: Some(" ".into()),
                    ..endpoint("http://c:4318")
                },
                "service_name",
            ),
            (
                TelemetryConfig {
                    service_name: Some("w".into()),
                    ..TelemetryConfig::default()
                },
                "otlp_endpoint",
            ),
        ] {
            let error = config.otlp(&no_env).unwrap_err().to_string();
            assert!(
                error.starts_with("[telemetry]") && error.contains(named),
                "{config:?} => {error}"
            );
        }
    }

    #[test]
    fn credentials_in_the_endpoint_are_refused_without_being_repeated() {
        let error = endpoint("https://user:hunter2-otlp@otel.example.com")
            .otlp(&no_env)
            .unwrap_err()
            .to_string();
        assert!(error.contains("credentials"), "{error}");
        assert!(!error.contains("hunter2-otlp"), "{error}");
    }

    #[test]
    fn export_headers_are_sent_and_credentials_among_them_are_secrets() {
        let config = TelemetryConfig {
            headers: BTreeMap::from([
                ("X-Scope-OrgID".to_owned(), "weaver-eu".to_owned()),
                ("X-Api-Key".to_owned(), "plain-but-secret-1234".to_owned()),
            ]),
            secret_headers: BTreeMap::from([("Authorization".to_owned(), "OTLP_TOKEN".to_owned())]),
            ..endpoint("http://c:4318")
        };
        let env = |name: &str| (name == "OTLP_TOKEN").then(|| "Bearer otlp-token-5678".to_owned());
        let target = config.otlp(&env).unwrap().unwrap();
        assert_eq!(
            target.headers,
            vec![("X-Scope-OrgID".to_owned(), "weaver-eu".to_owned())]
        );
        let secret: Vec<(&str, &str)> = target
            .secret_headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.expose()))
            .collect();
        assert_eq!(
            secret,
            [
                ("X-Api-Key", "plain-but-secret-1234"),
                ("Authorization", "Bearer otlp-token-5678")
            ]
        );
        assert_eq!(target.all_headers().count(), 3);
        let shown = format!("{target:?}");
        assert!(
            !shown.contains("otlp-token-5678") && !shown.contains("plain-but-secret"),
            "{shown}"
        );
    }

    #[test]
    fn export_headers_that_cannot_be_sent_are_refused_without_their_values() {
        let unset = TelemetryConfig {
            secret_headers: BTreeMap::from([("Authorization".to_owned(), "UNSET".to_owned())]),
            ..endpoint("http://c:4318")
        };
        let error = unset.otlp(&no_env).unwrap_err().to_string();
        assert!(
            error.contains("UNSET") && error.contains("not set"),
            "{error}"
        );
        for (name, value, named) in [
            ("Bad Name", "v", "header name 'Bad Name'"),
            ("X-Team", "line\nbreak-secret", "value of header X-Team"),
            (
                "Authorization",
                "Bearer a\r\nX-Evil: 1",
                "value of header Authorization",
            ),
        ] {
            let config = TelemetryConfig {
                headers: BTreeMap::from([(name.to_owned(), value.to_owned())]),
                ..endpoint("http://c:4318")
            };
            let error = config.otlp(&no_env).unwrap_err().to_string();
            assert!(error.contains(named), "{error}");
            assert!(
                !error.contains("break-secret") && !error.contains("Evil"),
                "{error}"
            );
        }
        let without_endpoint = TelemetryConfig {
            headers: BTreeMap::from([("X-Team".to_owned(), "a".to_owned())]),
            ..TelemetryConfig::default()
        };
        let error = without_endpoint.otlp(&no_env).unwrap_err().to_string();
        assert!(error.contains("otlp_endpoint"), "{error}");
    }

    #[test]
    fn the_metrics_listener_needs_an_address_of_its_own() {
        let listen: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let config = |text: &str| TelemetryConfig {
            metrics_listen: Some(text.to_owned()),
            ..TelemetryConfig::default()
        };
        assert_eq!(
            config("127.0.0.1:9464").metrics_listen(listen).unwrap(),
            Some("127.0.0.1:9464".parse().unwrap())
        );
        let error = config("localhost").metrics_listen(listen).unwrap_err();
        assert!(error.to_string().contains("metrics_listen"), "{error}");
        let error = config("127.0.0.1:8080").metrics_listen(listen).unwrap_err();
        assert!(error.to_string().contains("differ"), "{error}");
    }
}
