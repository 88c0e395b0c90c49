//! Identity: turning a request into an [`AiCaller`] (actor, tenant, permissions).
//!
//! An [`IdentityExtractor`] looks at a request's head. Three are built in: [`ApiKeyIdentity`]
//! for static keys configured server-side (`Authorization: ApiKey <key>`), [`JwtIdentity`]
//! for HS256/RS256 bearer tokens verified with one configured key, and [`OidcIdentity`] for
//! bearer tokens of OpenID Providers verified with the keys they publish (discovered,
//! cached, refetched on rotation). All bearer tokens become a caller through a
//! [`ClaimMapping`]. [`IdentityChain`] tries several in order. A request nobody recognises
//! is 401; credentials that are recognised but wrong are 401 too, with a code naming the
//! rule they broke (never echoing them); a provider whose keys cannot be fetched makes its
//! tokens 503.

mod api_key;
mod claims;
mod jwks;
mod jwt;
mod oidc;

use std::sync::Arc;

use async_trait::async_trait;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use elsa_ai_abstractions::{AiCaller, AiError};

pub use api_key::{ApiKey, ApiKeyIdentity};
pub use claims::{ClaimMapping, MAX_TOKEN_BYTES, TenantSource, elsa_permission};
pub use jwt::{JwtClaimNames, JwtIdentity, JwtKey, JwtSettings};
pub use oidc::{DEFAULT_ALGORITHMS, OidcIdentity, OidcSettings};

/// Why an identity extractor cannot be built from its configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityConfigError {
    /// An API key is too short to be safe.
    #[error("the API key of actor '{actor}' has {len} characters; at least {min} are required")]
    KeyTooShort {
        /// The actor the key is for.
        actor: String,
        /// Its length.
        len: usize,
        /// The minimum.
        min: usize,
    },
    /// An API key contains whitespace and could not be sent in a header.
    #[error("the API key of actor '{actor}' contains whitespace")]
    KeyHasWhitespace {
        /// The actor the key is for.
        actor: String,
    },
    /// The same key is configured for two callers.
    #[error("the API key of actor '{actor}' is configured twice")]
    DuplicateKey {
        /// The actor of the second occurrence.
        actor: String,
    },
    /// The JWT verification key cannot be used.
    #[error("the JWT {algorithm} key is not usable: {reason}")]
    JwtKey {
        /// The algorithm it is for.
        algorithm: &'static str,
        /// Why (never the key itself).
        reason: String,
    },
    /// An OpenID Provider's settings cannot be used.
    #[error("the OpenID provider '{issuer}' {reason}")]
    Oidc {
        /// The provider's issuer.
        issuer: String,
        /// What is wrong.
        reason: String,
    },
}

/// A way for the console to sign a person in: an OpenID Provider's authorization-code flow
/// with PKCE for the console's public client.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInOption {
    /// Stable id of the option (the provider's issuer).
    pub id: String,
    /// What the sign-in button calls the provider.
    pub name: String,
    /// The provider's issuer.
    pub issuer: String,
    /// The console's public client id at the provider.
    pub client_id: String,
    /// The scopes to ask for, space-separated.
    pub scopes: String,
    /// Where the browser is sent to sign in.
    pub authorization_endpoint: String,
    /// Where the code is exchanged for tokens.
    pub token_endpoint: String,
    /// Where the browser is sent to sign out, if the provider has such an endpoint.
    pub end_session_endpoint: Option<String>,
}

/// Turns a request into a caller.
#[async_trait]
pub trait IdentityExtractor: Send + Sync {
    /// The caller the request's credentials establish. `Ok(None)` when the request carries
    /// no credentials of this extractor's kind; an [`AiError::Unauthenticated`] when it
    /// carries such credentials and they are not valid.
    async fn identify(&self, request: &Parts) -> Result<Option<AiCaller>, AiError>;

    /// The interactive sign-in this extractor offers the console (none by default).
    fn sign_in_options(&self) -> Vec<SignInOption> {
        Vec::new()
    }
}

/// Several extractors, asked in order; the first that recognises the credentials decides.
#[derive(Clone, Default)]
pub struct IdentityChain {
    extractors: Vec<Arc<dyn IdentityExtractor>>,
}

impl std::fmt::Debug for IdentityChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityChain")
            .field("extractors", &self.extractors.len())
            .finish()
    }
}

impl IdentityChain {
    /// An empty chain: every request is unauthenticated.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an extractor.
    pub fn with(mut self, extractor: Arc<dyn IdentityExtractor>) -> Self {
        self.extractors.push(extractor);
        self
    }

    /// Whether the chain has no extractor.
    pub fn is_empty(&self) -> bool {
        self.extractors.is_empty()
    }
}

#[async_trait]
impl IdentityExtractor for IdentityChain {
    async fn identify(&self, request: &Parts) -> Result<Option<AiCaller>, AiError> {
        for extractor in &self.extractors {
            if let Some(caller) = extractor.identify(request).await? {
                return Ok(Some(caller));
            }
        }
        Ok(None)
    }

    fn sign_in_options(&self) -> Vec<SignInOption> {
        self.extractors
            .iter()
            .flat_map(|extractor| extractor.sign_in_options())
            .collect()
    }
}

/// The credentials of an `Authorization: <scheme> <credentials>` header when its scheme is
/// `scheme` (compared case-insensitively); `None` for another scheme or no header.
pub(crate) fn authorization<'a>(
    request: &'a Parts,
    scheme: &str,
) -> Result<Option<&'a str>, AiError> {
    let Some(value) = request.headers.get(AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| AiError::Unauthenticated {
        code: "invalid_authorization_header".into(),
        message: "the Authorization header is not valid ASCII".into(),
    })?;
    let (given, credentials) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !given.eq_ignore_ascii_case(scheme) {
        return Ok(None);
    }
    let credentials = credentials.trim();
    if credentials.is_empty() {
        return Err(AiError::Unauthenticated {
            code: "invalid_authorization_header".into(),
            message: format!(
                "the Authorization header names the {scheme} scheme but no credentials"
            ),
        });
    }
    Ok(Some(credentials))
}

#[cfg(test)]
mod tests {
    use axum::http::Request;

    use super::*;

    pub(crate) fn parts(authorization: Option<&str>) -> Parts {
        let mut request = Request::builder().uri("/ai/tools");
        if let Some(value) = authorization {
            request = request.header(AUTHORIZATION, value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn the_scheme_is_matched_case_insensitively() {
        let request = parts(Some("apikey  abc"));
        assert_eq!(authorization(&request, "ApiKey").unwrap(), Some("abc"));
        assert_eq!(authorization(&request, "Bearer").unwrap(), None);
        assert_eq!(authorization(&parts(None), "ApiKey").unwrap(), None);
        let empty = authorization(&parts(Some("ApiKey")), "ApiKey").unwrap_err();
        assert_eq!(empty.status(), 401);
    }
}
