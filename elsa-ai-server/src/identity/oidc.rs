//! OpenID Connect: bearer access tokens from one or more OpenID Providers (Entra ID,
//! Keycloak, Auth0, Okta, …), verified with the keys each provider publishes.
//!
//! A token is routed to the provider whose issuer it names; that provider's keys (see
//! [`jwks`](super::jwks)) verify it with one of the asymmetric algorithms the provider
//! accepts (never `none`, never an HMAC algorithm, whose "secret" would be the public key).
//! Then the issuer, the audience, `exp` and `nbf` (with leeway) are checked and the claims
//! become a caller through the provider's [`ClaimMapping`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elsa_ai_abstractions::{AiCaller, AiError};
use jsonwebtoken::{Algorithm, AlgorithmFamily, Validation};
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::claims::{ClaimMapping, bearer_token, invalid_token, refused, verification_refusal};
use super::jwks::{KeyLookup, KeySource, ProviderKeys, require_secure};
use super::{IdentityConfigError, IdentityExtractor, SignInOption};

/// The algorithms accepted when a provider names none.
pub const DEFAULT_ALGORITHMS: [Algorithm; 3] =
    [Algorithm::RS256, Algorithm::PS256, Algorithm::ES256];

/// One OpenID Provider, as `[[auth.oidc]]` describes it.
#[derive(Clone, Debug)]
pub struct OidcSettings {
    /// What the console's sign-in button calls it.
    pub name: String,
    /// The issuer (`iss`) its tokens carry; discovery is at
    /// `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// The JWKS address, instead of discovery.
    pub jwks_uri: Option<String>,
    /// The audience (`aud`) a token must include.
    pub audience: String,
    /// The signature algorithms accepted (asymmetric ones only).
    pub algorithms: Vec<Algorithm>,
    /// How claims become a caller.
    pub claims: ClaimMapping,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// The console's public client id at this provider; set, the console offers sign-in.
    pub console_client_id: Option<String>,
    /// The scopes the console asks for.
    pub console_scopes: String,
    /// The least time between two fetches of the keys (an unknown `kid` fetches them again
    /// no sooner than this after the last fetch).
    pub refetch_interval: Duration,
}

impl OidcSettings {
    /// The shortest refetch interval accepted.
    pub const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(1);
}

struct Provider {
    settings: OidcSettings,
    keys: Arc<ProviderKeys>,
}

/// Authenticates `Authorization: Bearer <jwt>` issued by the configured OpenID Providers.
pub struct OidcIdentity {
    providers: Vec<Provider>,
    defer_unknown_issuers: bool,
}

impl std::fmt::Debug for OidcIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcIdentity")
            .field(
                "issuers",
                &self
                    .providers
                    .iter()
                    .map(|p| p.settings.issuer.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("defer_unknown_issuers", &self.defer_unknown_issuers)
            .finish()
    }
}

impl OidcIdentity {
    /// An extractor for `providers`. Nothing is fetched until [`Self::fetch_keys`] or the
    /// first token.
    pub fn new(providers: Vec<OidcSettings>) -> Result<Self, IdentityConfigError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(concat!("weaver/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| oidc_error("the HTTP client", e.to_string()))?;
        let mut built = Vec::new();
        for settings in providers {
            validate(&settings)?;
            if built
                .iter()
                .any(|p: &Provider| p.settings.issuer == settings.issuer)
            {
                return Err(oidc_error(&settings.issuer, "is configured twice".into()));
            }
            let jwks_uri = settings
                .jwks_uri
                .as_deref()
                .map(|uri| {
                    let url = Url::parse(uri)
                        .map_err(|e| oidc_error(&settings.issuer, format!("jwks_uri: {e}")))?;
                    require_secure(&url, "jwks_uri")
                        .map_err(|e| oidc_error(&settings.issuer, e))?;
                    Ok(url)
                })
                .transpose()?;
            let keys = ProviderKeys::new(
                KeySource {
                    issuer: settings.issuer.clone(),
                    jwks_uri,
                    wants_metadata: settings.console_client_id.is_some(),
                    refetch_interval: settings.refetch_interval,
                },
                client.clone(),
            );
            built.push(Provider { settings, keys });
        }
        Ok(Self {
            providers: built,
            defer_unknown_issuers: false,
        })
    }

    /// Leaves tokens of issuers no provider has to the extractors after this one (an
    /// `[auth.jwt]` key), instead of refusing them.
    pub fn deferring_unknown_issuers(mut self) -> Self {
        self.defer_unknown_issuers = true;
        self
    }

    /// Fetches every provider's keys in the background, retrying a provider that cannot be
    /// reached until it answers (the server does not wait: such a provider only makes its
    /// own tokens wait).
    pub fn fetch_keys(&self) {
        for provider in &self.providers {
            tokio::spawn(provider.keys.clone().fetch_until_held());
        }
    }

    async fn verify(&self, provider: &Provider, token: &str) -> Result<AiCaller, AiError> {
        let header = JoseHeader::of(token)?;
        let settings = &provider.settings;
        let Some(algorithm) = header
            .alg
            .parse::<Algorithm>()
            .ok()
            .filter(|a| settings.algorithms.contains(a))
        else {
            return Err(refused(
                "token_algorithm_not_accepted",
                format!(
                    "the bearer token is signed with {}; this provider's tokens must use one of {}",
                    printable(&header.alg),
                    names(&settings.algorithms)
                ),
            ));
        };
        let key = match provider.keys.lookup(header.kid.as_deref(), algorithm).await {
            KeyLookup::Found(key) => key,
            KeyLookup::Unknown => {
                return Err(refused(
                    "token_key_unknown",
                    "the bearer token names a signing key its issuer does not publish",
                ));
            }
            KeyLookup::Unavailable(reason) => {
                return Err(AiError::unavailable(
                    "identity_provider_unavailable",
                    format!(
                        "the identity provider '{}' cannot be reached to verify the token ({reason}); \
                         try again shortly",
                        settings.issuer
                    ),
                ));
            }
        };
        if key.family != algorithm.family() || key.algorithm.is_some_and(|a| a != algorithm) {
            return Err(refused(
                "token_algorithm_not_accepted",
                "the bearer token's algorithm does not match the key it names",
            ));
        }
        let mut validation = Validation::new(algorithm);
        validation.leeway = settings.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[&settings.audience]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|error| verification_refusal(&error))?;
        settings.claims.caller(&data.claims)
    }
}

#[async_trait]
impl IdentityExtractor for OidcIdentity {
    async fn identify(&self, request: &Parts) -> Result<Option<AiCaller>, AiError> {
        let Some(token) = bearer_token(request)? else {
            return Ok(None);
        };
        // Unverified, only to choose the provider whose keys then verify everything.
        let issuer = jsonwebtoken::dangerous::insecure_decode_claims::<IssuerOnly>(token)
            .ok()
            .and_then(|claims| claims.iss);
        let provider = issuer
            .as_deref()
            .and_then(|iss| self.providers.iter().find(|p| p.settings.issuer == iss));
        match provider {
            Some(provider) => self.verify(provider, token).await.map(Some),
            None if self.defer_unknown_issuers => Ok(None),
            None if issuer.is_none() => Err(invalid_token(
                "the bearer token is not a JWT with an 'iss' claim",
            )),
            None => Err(refused(
                "token_issuer_not_accepted",
                "the bearer token's issuer is not one of this server's identity providers",
            )),
        }
    }

    fn sign_in_options(&self) -> Vec<SignInOption> {
        self.providers
            .iter()
            .filter_map(|provider| {
                let settings = &provider.settings;
                let client_id = settings.console_client_id.clone()?;
                let metadata = provider.keys.metadata()?;
                Some(SignInOption {
                    id: settings.issuer.clone(),
                    name: settings.name.clone(),
                    issuer: settings.issuer.clone(),
                    client_id,
                    scopes: settings.console_scopes.clone(),
                    authorization_endpoint: metadata.authorization_endpoint?,
                    token_endpoint: metadata.token_endpoint?,
                    end_session_endpoint: metadata.end_session_endpoint,
                })
            })
            .collect()
    }
}

#[derive(Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

/// The JOSE header's fields weaver reads, parsed without judging the algorithm (so that
/// `none` and names `jsonwebtoken` does not know are refused with a reason).
#[derive(Deserialize)]
pub(crate) struct JoseHeader {
    pub alg: String,
    pub kid: Option<String>,
}

impl JoseHeader {
    pub(crate) fn of(token: &str) -> Result<Self, AiError> {
        let malformed =
            || invalid_token("the bearer token is not a JWT (header.payload.signature)");
        let (header, rest) = token.split_once('.').ok_or_else(malformed)?;
        if rest.split('.').count() != 2 {
            return Err(malformed());
        }
        let bytes = URL_SAFE_NO_PAD.decode(header).map_err(|_| malformed())?;
        serde_json::from_slice(&bytes).map_err(|_| malformed())
    }
}

/// A value from a token, for a message: short printable names only.
fn printable(value: &str) -> String {
    if value.len() <= 64 && value.chars().all(|c| c.is_ascii_graphic()) {
        format!("'{value}'")
    } else {
        "an algorithm it does not name".into()
    }
}

fn names(algorithms: &[Algorithm]) -> String {
    algorithms
        .iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn validate(settings: &OidcSettings) -> Result<(), IdentityConfigError> {
    let issuer = &settings.issuer;
    let url = Url::parse(issuer).map_err(|e| oidc_error(issuer, format!("not a URL: {e}")))?;
    require_secure(&url, "issuer").map_err(|e| oidc_error(issuer, e))?;
    if settings.audience.trim().is_empty() {
        return Err(oidc_error(issuer, "audience must not be empty".into()));
    }
    if settings.algorithms.is_empty() {
        return Err(oidc_error(issuer, "algorithms must not be empty".into()));
    }
    if let Some(symmetric) = settings
        .algorithms
        .iter()
        .find(|a| a.family() == AlgorithmFamily::Hmac)
    {
        return Err(oidc_error(
            issuer,
            format!(
                "{symmetric:?} is not accepted: a provider's keys are public, and an HMAC \
                 algorithm would let anyone holding them sign tokens"
            ),
        ));
    }
    if settings.refetch_interval < OidcSettings::MIN_REFETCH_INTERVAL {
        return Err(oidc_error(
            issuer,
            "the key refetch interval must be at least 1 second".into(),
        ));
    }
    Ok(())
}

fn oidc_error(issuer: &str, reason: String) -> IdentityConfigError {
    IdentityConfigError::Oidc {
        issuer: issuer.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::TenantSource;

    fn settings(issuer: &str) -> OidcSettings {
        OidcSettings {
            name: "Acme ID".into(),
            issuer: issuer.into(),
            jwks_uri: None,
            audience: "weaver".into(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            claims: ClaimMapping {
                actor: "sub".into(),
                tenant: TenantSource::claim("tenant"),
                permissions: Some("permissions".into()),
                roles: None,
                required: Default::default(),
            },
            leeway_secs: 30,
            console_client_id: None,
            console_scopes: "openid".into(),
            refetch_interval: Duration::from_secs(30),
        }
    }

    #[test]
    fn unsafe_configurations_are_refused() {
        let refused = |settings: OidcSettings| OidcIdentity::new(vec![settings]).unwrap_err();
        assert!(
            refused(settings("http://id.example.com"))
                .to_string()
                .contains("https")
        );
        let hmac = OidcSettings {
            algorithms: vec![Algorithm::RS256, Algorithm::HS256],
            ..settings("https://id.example.com")
        };
        assert!(refused(hmac).to_string().contains("HS256"));
        let fast = OidcSettings {
            refetch_interval: Duration::from_millis(10),
            ..settings("https://id.example.com")
        };
        assert!(refused(fast).to_string().contains("interval"));
        let twice = OidcIdentity::new(vec![
            settings("https://id.example.com"),
            settings("https://id.example.com"),
        ]);
        assert!(twice.unwrap_err().to_string().contains("twice"));
        assert!(OidcIdentity::new(vec![settings("http://127.0.0.1:9")]).is_ok());
    }

    #[test]
    fn the_header_is_read_without_judging_its_algorithm() {
        let header = |json: &str| URL_SAFE_NO_PAD.encode(json);
        let token = format!("{}.e30.", header(r#"{"alg":"none"}"#));
        let parsed = JoseHeader::of(&token).unwrap();
        assert_eq!((parsed.alg.as_str(), parsed.kid), ("none", None));
        for malformed in ["abc", "a.b", "a.b.c.d", "!!.e30.x"] {
            assert_eq!(
                JoseHeader::of(malformed).err().map(|e| e.code().to_owned()),
                Some("invalid_token".to_owned()),
                "{malformed}"
            );
        }
        assert_eq!(printable("RS256"), "'RS256'");
        assert!(!printable(&"x".repeat(100)).contains('x'));
    }
}
