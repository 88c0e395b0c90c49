//! An OpenID Provider's signing keys as weaver holds them: found through discovery (or an
//! explicit JWKS address), kept for as long as the response's caching headers say within
//! bounds, and fetched again when a token names a key id the set does not have, at most once
//! per interval, so a flood of unknown key ids makes no flood of requests.
//!
//! A provider that cannot be reached does not stop anything: lookups say it is unavailable
//! until a fetch succeeds. Once a set is held it stays in use while refreshes fail (the
//! provider being down must not sign everyone out); a refresh that succeeds replaces it
//! whole, so a key the provider removed stops verifying then.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use reqwest::Url;
use reqwest::header::{ACCEPT, CACHE_CONTROL, HeaderMap};
use serde::Deserialize;
use serde_json::Value;

/// The largest discovery document or key set read, in bytes.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The shortest and longest a key set is kept before it is fetched again, whatever the
/// provider's caching headers say, and how long without any.
const MIN_CACHE: Duration = Duration::from_secs(60);
const MAX_CACHE: Duration = Duration::from_secs(24 * 60 * 60);
const DEFAULT_CACHE: Duration = Duration::from_secs(15 * 60);
/// The longest wait between two start-up attempts at a provider that cannot be reached.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5 * 60);

/// Where a provider's keys are found.
#[derive(Clone, Debug)]
pub(crate) struct KeySource {
    /// The issuer; discovery is at `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// The JWKS address, instead of discovery.
    pub jwks_uri: Option<Url>,
    /// Whether the discovery document is wanted even with an explicit JWKS address (for
    /// the console's sign-in endpoints).
    pub wants_metadata: bool,
    /// The least time between two fetches.
    pub refetch_interval: Duration,
}

/// The endpoints of a provider's discovery document that weaver uses.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub(crate) struct ProviderMetadata {
    /// The issuer the document states (equal to the configured one, or it is refused).
    pub issuer: String,
    /// Where the keys are.
    pub jwks_uri: String,
    /// Where a browser is sent to sign in.
    pub authorization_endpoint: Option<String>,
    /// Where codes are exchanged for tokens.
    pub token_endpoint: Option<String>,
    /// Where a browser is sent to sign out.
    pub end_session_endpoint: Option<String>,
}

/// One verification key of the set.
pub(crate) struct VerificationKey {
    /// Its `kid`.
    pub kid: Option<String>,
    /// The algorithm the set pins it to (`alg`), if any.
    pub algorithm: Option<Algorithm>,
    /// The key's family (RSA, EC, …).
    pub family: AlgorithmFamily,
    /// The key.
    pub key: DecodingKey,
}

/// The answer to "which key verifies this token".
pub(crate) enum KeyLookup {
    /// This one.
    Found(Arc<VerificationKey>),
    /// The set, as fetched, has no such key.
    Unknown,
    /// No set has been fetched yet; why the last attempt failed.
    Unavailable(String),
}

#[derive(Default)]
struct KeyState {
    keys: Vec<Arc<VerificationKey>>,
    fetched: bool,
    expires_at: Option<Instant>,
    last_attempt: Option<Instant>,
    last_error: Option<String>,
    metadata: Option<ProviderMetadata>,
}

/// One provider's keys, shared by every request verifying its tokens.
pub(crate) struct ProviderKeys {
    source: KeySource,
    client: reqwest::Client,
    state: Mutex<KeyState>,
    /// Held while fetching: one fetch at a time, and those waiting see its result.
    fetching: tokio::sync::Mutex<()>,
}

impl ProviderKeys {
    /// Keys from `source`, fetched with `client`; nothing is fetched until [`Self::refresh`]
    /// or a lookup.
    pub fn new(source: KeySource, client: reqwest::Client) -> Arc<Self> {
        Arc::new(Self {
            source,
            client,
            state: Mutex::new(KeyState::default()),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// The discovery document's endpoints, once fetched.
    pub fn metadata(&self) -> Option<ProviderMetadata> {
        self.lock().metadata.clone()
    }

    /// The key for a token with key id `kid` signed with `algorithm`. An unknown id (or an
    /// expired set, or none yet) fetches the set again when the interval allows; an expired
    /// set still answers while a fresh one is fetched in the background.
    pub async fn lookup(self: &Arc<Self>, kid: Option<&str>, algorithm: Algorithm) -> KeyLookup {
        let now = Instant::now();
        let (found, expired, may_fetch) = {
            let state = self.lock();
            (
                state
                    .fetched
                    .then(|| find(&state.keys, kid, algorithm))
                    .flatten(),
                state.expires_at.is_none_or(|at| now >= at),
                self.may_fetch(&state, now),
            )
        };
        match found {
            Some(key) => {
                if expired && may_fetch {
                    let keys = self.clone();
                    tokio::spawn(async move { keys.refresh().await });
                }
                KeyLookup::Found(key)
            }
            None => {
                if may_fetch {
                    self.refresh().await;
                }
                let state = self.lock();
                if !state.fetched {
                    return KeyLookup::Unavailable(
                        state
                            .last_error
                            .clone()
                            .unwrap_or_else(|| "its keys have not been fetched yet".into()),
                    );
                }
                find(&state.keys, kid, algorithm).map_or(KeyLookup::Unknown, KeyLookup::Found)
            }
        }
    }

    /// Fetches the set (and the discovery document) unless a fetch happened within the
    /// interval. Failures are kept for lookups to report and logged without any token.
    pub async fn refresh(&self) {
        let _one_at_a_time = self.fetching.lock().await;
        let now = Instant::now();
        if !self.may_fetch(&self.lock(), now) {
            return;
        }
        self.lock().last_attempt = Some(now);
        let result = self.fetch().await;
        let mut state = self.lock();
        match result {
            Ok(fetched) => {
                tracing::info!(
                    issuer = %self.source.issuer,
                    keys = fetched.keys.len(),
                    cache_secs = fetched.lifetime.as_secs(),
                    "fetched the identity provider's keys"
                );
                state.keys = fetched.keys;
                state.fetched = true;
                state.expires_at = Some(now + fetched.lifetime);
                state.last_error = None;
                if fetched.metadata.is_some() {
                    state.metadata = fetched.metadata;
                }
            }
            Err(error) => {
                tracing::warn!(
                    issuer = %self.source.issuer,
                    error = %error,
                    "the identity provider's keys could not be fetched"
                );
                state.last_error = Some(error);
            }
        }
    }

    /// Fetches until a key set is held: at once, then again after the refetch interval,
    /// doubling up to five minutes. A provider that was down at start-up is picked up when it
    /// comes back, before any token names it (the console's sign-in needs its endpoints).
    pub async fn fetch_until_held(self: Arc<Self>) {
        let mut delay = self.source.refetch_interval;
        loop {
            self.refresh().await;
            if self.lock().fetched {
                return;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(MAX_RETRY_DELAY);
        }
    }

    fn may_fetch(&self, state: &KeyState, now: Instant) -> bool {
        state
            .last_attempt
            .is_none_or(|at| now.duration_since(at) >= self.source.refetch_interval)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeyState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn fetch(&self) -> Result<Fetched, String> {
        let known = self.lock().metadata.clone();
        let discover =
            self.source.jwks_uri.is_none() || (self.source.wants_metadata && known.is_none());
        let metadata = if discover {
            match self.discover().await {
                Ok(metadata) => Some(metadata),
                // With an explicit JWKS address the keys do not depend on discovery.
                Err(error) if self.source.jwks_uri.is_some() => {
                    tracing::warn!(issuer = %self.source.issuer, %error, "discovery failed");
                    None
                }
                Err(error) => return Err(error),
            }
        } else {
            None
        };
        let jwks_uri = match (&self.source.jwks_uri, &metadata) {
            (Some(uri), _) => uri.clone(),
            (None, Some(metadata)) => Url::parse(&metadata.jwks_uri)
                .map_err(|e| format!("its discovery document's jwks_uri is not a URL: {e}"))?,
            // Without an explicit address discovery ran, and its failure returned above.
            (None, None) => unreachable!("a key source has a JWKS address or discovers one"),
        };
        let (body, headers) = self.get(&jwks_uri).await?;
        let keys = parse_key_set(&body)?;
        Ok(Fetched {
            keys,
            lifetime: cache_lifetime(&headers),
            metadata,
        })
    }

    async fn discover(&self) -> Result<ProviderMetadata, String> {
        let address = discovery_address(&self.source.issuer)?;
        let (body, _) = self.get(&address).await?;
        let metadata: ProviderMetadata = serde_json::from_slice(&body)
            .map_err(|e| format!("its discovery document at {address} is not usable: {e}"))?;
        // OpenID Connect Discovery 1.0, section 4.3: the document must name the issuer it
        // was fetched for, or another party could stand in for it.
        if metadata.issuer != self.source.issuer {
            return Err(format!(
                "its discovery document names issuer '{}', not '{}'",
                metadata.issuer, self.source.issuer
            ));
        }
        let jwks_uri = Url::parse(&metadata.jwks_uri)
            .map_err(|e| format!("its discovery document's jwks_uri is not a URL: {e}"))?;
        require_secure(&jwks_uri, "jwks_uri")?;
        Ok(metadata)
    }

    async fn get(&self, address: &Url) -> Result<(Vec<u8>, HeaderMap), String> {
        let response = self
            .client
            .get(address.clone())
            .header(ACCEPT, "application/json")
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("{address} cannot be reached: {}", without_url(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{address} answered {status}"));
        }
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("{address} broke off: {}", without_url(&e)))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!(
                    "{address} answered more than {MAX_DOCUMENT_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, headers))
    }
}

struct Fetched {
    keys: Vec<Arc<VerificationKey>>,
    lifetime: Duration,
    metadata: Option<ProviderMetadata>,
}

/// The key a token names: by `kid`, or, for a token without one, the only key of the
/// algorithm's family.
fn find(
    keys: &[Arc<VerificationKey>],
    kid: Option<&str>,
    algorithm: Algorithm,
) -> Option<Arc<VerificationKey>> {
    match kid {
        Some(kid) => keys.iter().find(|k| k.kid.as_deref() == Some(kid)).cloned(),
        None => {
            let mut family = keys.iter().filter(|k| k.family == algorithm.family());
            match (family.next(), family.next()) {
                (Some(only), None) => Some(only.clone()),
                _ => None,
            }
        }
    }
}

/// The verification keys of a JWKS document. Keys weaver cannot use (encryption keys,
/// symmetric keys, unknown types) are left out rather than failing the whole set.
pub(crate) fn parse_key_set(body: &[u8]) -> Result<Vec<Arc<VerificationKey>>, String> {
    #[derive(Deserialize)]
    struct Document {
        keys: Vec<Value>,
    }
    let document: Document = serde_json::from_slice(body)
        .map_err(|e| format!("its key set is not a JWKS document: {e}"))?;
    let keys: Vec<_> = document
        .keys
        .into_iter()
        .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
        .filter(|jwk| {
            jwk.common
                .public_key_use
                .as_ref()
                .is_none_or(|usage| *usage == PublicKeyUse::Signature)
        })
        .filter_map(|jwk| {
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            // A public key set has no business holding a shared secret; never verify with one.
            (key.family() != AlgorithmFamily::Hmac).then(|| {
                Arc::new(VerificationKey {
                    kid: jwk.common.key_id.clone(),
                    algorithm: jwk
                        .common
                        .key_algorithm
                        .and_then(|a| a.to_string().parse().ok()),
                    family: key.family(),
                    key,
                })
            })
        })
        .collect();
    if keys.is_empty() {
        return Err("its key set has no usable signing key".into());
    }
    Ok(keys)
}

/// How long a key set may be kept: `Cache-Control: max-age`, within bounds; `no-store` and
/// `no-cache` mean the least.
fn cache_lifetime(headers: &HeaderMap) -> Duration {
    let Some(control) = headers.get(CACHE_CONTROL).and_then(|v| v.to_str().ok()) else {
        return DEFAULT_CACHE;
    };
    let mut lifetime = None;
    for directive in control.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return MIN_CACHE;
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            lifetime = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    lifetime.map_or(DEFAULT_CACHE, |l| l.clamp(MIN_CACHE, MAX_CACHE))
}

/// `{issuer}/.well-known/openid-configuration`.
pub(crate) fn discovery_address(issuer: &str) -> Result<Url, String> {
    let address = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    Url::parse(&address).map_err(|e| format!("'{address}' is not a URL: {e}"))
}

/// Keys and discovery travel over HTTPS; plain HTTP only to the machine itself.
pub(crate) fn require_secure(address: &Url, what: &str) -> Result<(), String> {
    let loopback = address.host_str().is_some_and(|host| {
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    match address.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "{what} '{address}' must use https (http only on a loopback address)"
        )),
    }
}

/// A request error's text without the URL (the caller names it once).
fn without_url(error: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(error);
    let mut text = if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_connect() {
        "connection failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(cache_control: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CACHE_CONTROL, HeaderValue::from_str(cache_control).unwrap());
        headers
    }

    #[test]
    fn caching_headers_are_followed_within_bounds() {
        assert_eq!(cache_lifetime(&HeaderMap::new()), DEFAULT_CACHE);
        assert_eq!(
            cache_lifetime(&headers("public, max-age=3600")),
            Duration::from_secs(3600)
        );
        assert_eq!(cache_lifetime(&headers("max-age=5")), MIN_CACHE);
        assert_eq!(cache_lifetime(&headers("max-age=99999999")), MAX_CACHE);
        assert_eq!(cache_lifetime(&headers("no-store")), MIN_CACHE);
        assert_eq!(cache_lifetime(&headers("max-age=x")), DEFAULT_CACHE);
    }

    #[test]
    fn symmetric_encryption_and_unknown_keys_are_left_out() {
        let set = serde_json::json!({"keys": [
            {"kty": "oct", "kid": "shared", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"},
            {"kty": "XYZ", "kid": "unknown"},
            {"kty": "RSA", "kid": "sig", "alg": "RS256", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"}
        ]});
        let keys = parse_key_set(set.to_string().as_bytes()).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("sig"));
        assert_eq!(keys[0].algorithm, Some(Algorithm::RS256));
        assert!(parse_key_set(br#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).is_err());
        assert!(parse_key_set(b"[]").is_err());
    }

    #[test]
    fn a_token_without_a_key_id_takes_the_only_key_of_its_family() {
        let set = serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "a", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"}
        ]});
        let keys = parse_key_set(set.to_string().as_bytes()).unwrap();
        assert!(find(&keys, None, Algorithm::RS256).is_some());
        assert!(find(&keys, None, Algorithm::ES256).is_none());
        assert!(find(&keys, Some("b"), Algorithm::RS256).is_none());
    }

    #[test]
    fn only_loopback_addresses_may_use_plain_http() {
        let ok = |address: &str| require_secure(&Url::parse(address).unwrap(), "issuer");
        assert!(ok("https://id.example.com/realms/acme").is_ok());
        assert!(ok("http://127.0.0.1:8080").is_ok());
        assert!(ok("http://localhost:8080").is_ok());
        assert!(ok("http://id.example.com").is_err());
        assert!(ok("ftp://id.example.com").is_err());
    }
}
