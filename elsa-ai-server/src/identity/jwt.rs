//! Bearer JSON Web Tokens signed with HS256 (shared secret) or RS256 (RSA public key), with
//! configurable claim names for the actor, the tenant and the permissions.
//!
//! The permissions claim may hold Weaver's names or Elsa's, which Elsa Studio's identity
//! provider issues; Elsa's are read as Weaver's (see [`elsa_permission`]).

use async_trait::async_trait;
use axum::http::request::Parts;
use elsa_ai_abstractions::{AiCaller, AiError, Permission};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{IdentityConfigError, IdentityExtractor, authorization};

/// The key tokens are verified with; it also fixes the one algorithm accepted.
#[derive(Clone)]
#[non_exhaustive]
pub enum JwtKey {
    /// HS256 with a shared secret of at least 32 bytes.
    Hs256 {
        /// The secret.
        secret: Vec<u8>,
    },
    /// RS256 with the issuer's RSA public key.
    Rs256 {
        /// The key as PEM (`-----BEGIN PUBLIC KEY-----` or `RSA PUBLIC KEY`).
        public_key_pem: Vec<u8>,
    },
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Hs256 { .. } => "JwtKey::Hs256(<redacted>)",
            Self::Rs256 { .. } => "JwtKey::Rs256(..)",
        })
    }
}

impl JwtKey {
    /// The shortest HS256 secret accepted, in bytes (the hash size, RFC 7518 §3.2).
    pub const MIN_SECRET_LEN: usize = 32;

    fn algorithm(&self) -> Algorithm {
        match self {
            Self::Hs256 { .. } => Algorithm::HS256,
            Self::Rs256 { .. } => Algorithm::RS256,
        }
    }

    fn decoding_key(&self) -> Result<DecodingKey, IdentityConfigError> {
        match self {
            Self::Hs256 { secret } if secret.len() < Self::MIN_SECRET_LEN => {
                Err(IdentityConfigError::JwtKey {
                    algorithm: "HS256",
                    reason: format!(
                        "the secret has {} bytes; at least {} are required",
                        secret.len(),
                        Self::MIN_SECRET_LEN
                    ),
                })
            }
            Self::Hs256 { secret } => {
                DecodingKey::from_secret(secret).map_err(|e| IdentityConfigError::JwtKey {
                    algorithm: "HS256",
                    reason: e.to_string(),
                })
            }
            Self::Rs256 { public_key_pem } => {
                DecodingKey::from_rsa_pem(public_key_pem).map_err(|e| IdentityConfigError::JwtKey {
                    algorithm: "RS256",
                    reason: format!("not an RSA public key in PEM form ({e})"),
                })
            }
        }
    }
}

/// Which claims carry the caller. A name is looked up as a top-level claim first; if there
/// is none, a dotted name is followed into nested objects (`realm_access.roles`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtClaimNames {
    /// The actor id (default `sub`).
    pub actor: String,
    /// The tenant id (default `tenant`).
    pub tenant: String,
    /// The permissions: an array of strings or one space-separated string like an OAuth
    /// `scope` (default `permissions`). A token without it has no permissions.
    pub permissions: String,
}

impl Default for JwtClaimNames {
    fn default() -> Self {
        Self {
            actor: "sub".into(),
            tenant: "tenant".into(),
            permissions: "permissions".into(),
        }
    }
}

/// How bearer tokens are verified and read.
#[derive(Clone, Debug)]
pub struct JwtSettings {
    /// The verification key (and with it the only algorithm accepted).
    pub key: JwtKey,
    /// When set, the `iss` claim must equal it.
    pub issuer: Option<String>,
    /// When set, the `aud` claim must contain it.
    pub audience: Option<String>,
    /// Where actor, tenant and permissions are read from.
    pub claims: JwtClaimNames,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
}

impl JwtSettings {
    /// Settings for `key` with the default claim names, no issuer or audience check and
    /// 60 s of leeway.
    pub fn new(key: JwtKey) -> Self {
        Self {
            key,
            issuer: None,
            audience: None,
            claims: JwtClaimNames::default(),
            leeway_secs: 60,
        }
    }
}

/// Authenticates `Authorization: Bearer <jwt>`. Tokens must be signed with the configured
/// algorithm (no other is accepted), unexpired (`exp` is required), and name an actor and a
/// tenant.
pub struct JwtIdentity {
    key: DecodingKey,
    validation: Validation,
    claims: JwtClaimNames,
}

impl std::fmt::Debug for JwtIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtIdentity")
            .field("algorithms", &self.validation.algorithms)
            .field("claims", &self.claims)
            .finish_non_exhaustive()
    }
}

impl JwtIdentity {
    /// The scheme of the `Authorization` header.
    pub const SCHEME: &'static str = "Bearer";

    /// An extractor verifying tokens as `settings` say.
    pub fn new(settings: JwtSettings) -> Result<Self, IdentityConfigError> {
        let key = settings.key.decoding_key()?;
        let mut validation = Validation::new(settings.key.algorithm());
        validation.leeway = settings.leeway_secs;
        validation.validate_nbf = true;
        match &settings.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &settings.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        Ok(Self {
            key,
            validation,
            claims: settings.claims,
        })
    }

    fn caller(&self, claims: &Map<String, Value>) -> Result<AiCaller, AiError> {
        let text = |name: &str| {
            claim(claims, name)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .ok_or_else(|| invalid_token(format!("the token has no '{name}' claim")))
        };
        let actor = text(&self.claims.actor)?;
        let tenant = text(&self.claims.tenant)?;
        let permissions: Vec<Permission> = match claim(claims, &self.claims.permissions) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(scope)) => {
                scope.split_whitespace().flat_map(permissions_of).collect()
            }
            Some(Value::Array(items)) => {
                let names = items
                    .iter()
                    .map(|item| {
                        item.as_str().ok_or_else(|| {
                            invalid_token(format!(
                                "the '{}' claim must hold strings",
                                self.claims.permissions
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                names.into_iter().flat_map(permissions_of).collect()
            }
            Some(_) => {
                return Err(invalid_token(format!(
                    "the '{}' claim must be an array of strings or a space-separated string",
                    self.claims.permissions
                )));
            }
        };
        Ok(AiCaller::new(actor, tenant, permissions))
    }
}

/// Weaver's permissions for one name of a token: Elsa's names mapped, any other name as it
/// is.
fn permissions_of(name: &str) -> Vec<Permission> {
    elsa_permission(name).map_or_else(|| vec![Permission::new(name)], <[Permission]>::to_vec)
}

/// What one of Elsa's AI permission names grants in Weaver, or `None` for a name that is not
/// Elsa's. Weaver's permissions are coarser than Elsa's, so two names widen: viewing
/// proposals needs one of the proposal permissions (`propose:workflows` is the narrower),
/// and Weaver has one review permission (`apply:workflows`) for approving, rejecting and
/// applying. Viewing tools and capabilities needs only a valid token.
pub fn elsa_permission(name: &str) -> Option<&'static [Permission]> {
    const ALL: &[Permission] = &Permission::ALL;
    const CHAT: &[Permission] = &[
        Permission::READ_WORKFLOWS,
        Permission::READ_WORKFLOW_INSTANCES,
        Permission::READ_ACTIVITIES,
        Permission::PROPOSE_WORKFLOWS,
    ];
    const NONE: &[Permission] = &[];
    const VIEW_PROPOSALS: &[Permission] = &[Permission::PROPOSE_WORKFLOWS];
    const REVIEW: &[Permission] = &[Permission::APPLY_WORKFLOWS];
    Some(match name {
        "*" => ALL,
        "ai:chat" => CHAT,
        "ai:tools:view" | "ai:capabilities:view" => NONE,
        "ai:proposals:view" => VIEW_PROPOSALS,
        "ai:proposals:approve" | "ai:proposals:apply" => REVIEW,
        _ => return None,
    })
}

fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    claims.get(name).or_else(|| {
        let mut parts = name.split('.');
        let first = claims.get(parts.next()?)?;
        parts.try_fold(first, |value, part| value.get(part))
    })
}

fn invalid_token(message: impl Into<String>) -> AiError {
    AiError::Unauthenticated {
        code: "invalid_token".into(),
        message: message.into(),
    }
}

#[async_trait]
impl IdentityExtractor for JwtIdentity {
    async fn identify(&self, request: &Parts) -> Result<Option<AiCaller>, AiError> {
        let Some(token) = authorization(request, Self::SCHEME)? else {
            return Ok(None);
        };
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &self.key, &self.validation)
            .map_err(|error| match error.kind() {
            ErrorKind::ExpiredSignature => AiError::Unauthenticated {
                code: "token_expired".into(),
                message: "the bearer token has expired".into(),
            },
            ErrorKind::ImmatureSignature => invalid_token("the bearer token is not valid yet"),
            ErrorKind::InvalidSignature => {
                invalid_token("the bearer token's signature is not valid")
            }
            ErrorKind::InvalidAlgorithm => invalid_token(format!(
                "the bearer token must be signed with {:?}",
                self.validation.algorithms[0]
            )),
            ErrorKind::InvalidIssuer => invalid_token("the bearer token's issuer is not accepted"),
            ErrorKind::InvalidAudience => {
                invalid_token("the bearer token is not meant for this audience")
            }
            ErrorKind::MissingRequiredClaim(claim) => {
                invalid_token(format!("the bearer token has no '{claim}' claim"))
            }
            _ => invalid_token("the bearer token is not a valid JWT"),
        })?;
        self.caller(&data.claims).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{EncodingKey, Header, encode, get_current_timestamp};
    use serde_json::json;

    use super::super::tests::parts;
    use super::*;

    const SECRET: &[u8] = b"an-hs256-secret-of-at-least-32-bytes!";

    fn token(claims: Value) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET).unwrap(),
        )
        .unwrap()
    }

    fn bearer(token: &str) -> Parts {
        parts(Some(&format!("Bearer {token}")))
    }

    fn identity(claims: JwtClaimNames) -> JwtIdentity {
        JwtIdentity::new(JwtSettings {
            claims,
            issuer: Some("https://id.example".into()),
            ..JwtSettings::new(JwtKey::Hs256 {
                secret: SECRET.to_vec(),
            })
        })
        .unwrap()
    }

    fn exp() -> u64 {
        get_current_timestamp() + 600
    }

    #[tokio::test]
    async fn claims_become_the_caller_with_configurable_names() {
        let identity = identity(JwtClaimNames {
            actor: "email".into(),
            tenant: "https://weaver.example/tenant".into(),
            permissions: "realm_access.roles".into(),
        });
        let caller = identity
            .identify(&bearer(&token(json!({
                "email": "alice@acme.example",
                "https://weaver.example/tenant": "acme",
                "realm_access": {"roles": ["read:workflows", "admin:ai"]},
                "iss": "https://id.example",
                "exp": exp(),
            }))))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(caller.actor_id, "alice@acme.example");
        assert_eq!(caller.tenant_id.as_str(), "acme");
        assert!(caller.has(&Permission::ADMIN_AI));

        let scoped = super::super::tests::parts(Some(&format!(
            "bearer {}",
            token(
                json!({"sub": "bob", "tenant": "acme", "permissions": "read:workflows propose:workflows", "iss": "https://id.example", "exp": exp()})
            )
        )));
        let caller = self::identity(JwtClaimNames::default())
            .identify(&scoped)
            .await
            .unwrap()
            .unwrap();
        assert!(caller.has(&Permission::PROPOSE_WORKFLOWS));
    }

    #[tokio::test]
    async fn elsas_permission_names_are_read_as_weavers() {
        let caller = |permissions: Value| {
            let parts = super::super::tests::parts(Some(&format!(
                "Bearer {}",
                token(
                    json!({"sub": "a", "tenant": "acme", "permissions": permissions, "iss": "https://id.example", "exp": exp()})
                )
            )));
            async move {
                self::identity(JwtClaimNames::default())
                    .identify(&parts)
                    .await
                    .unwrap()
                    .unwrap()
            }
        };
        let everything = caller(json!(["*"])).await;
        for permission in [
            Permission::READ_WORKFLOWS,
            Permission::APPLY_WORKFLOWS,
            Permission::ADMIN_AI,
        ] {
            assert!(everything.has(&permission), "{permission}");
        }
        let chat = caller(json!("ai:chat ai:tools:view ai:capabilities:view")).await;
        assert!(chat.has(&Permission::READ_WORKFLOW_INSTANCES));
        assert!(chat.has(&Permission::PROPOSE_WORKFLOWS));
        assert!(
            !chat.has(&Permission::APPLY_WORKFLOWS),
            "chatting reviews nothing"
        );
        assert!(!chat.has(&Permission::ADMIN_AI));
        let reviewer = caller(json!(["ai:proposals:view", "ai:proposals:approve"])).await;
        assert!(reviewer.has(&Permission::APPLY_WORKFLOWS));
        assert!(!reviewer.has(&Permission::READ_WORKFLOWS));
        let ours = caller(json!(["read:workflows", "custom:thing"])).await;
        assert!(ours.has(&Permission::READ_WORKFLOWS));
        assert!(
            ours.has(&Permission::new("custom:thing")),
            "other names pass as they are"
        );
    }

    #[tokio::test]
    async fn bad_tokens_are_401_with_a_reason() {
        let identity = identity(JwtClaimNames::default());
        let cases = [
            (
                token(
                    json!({"sub": "a", "tenant": "t", "iss": "https://id.example", "exp": get_current_timestamp() - 3600}),
                ),
                "token_expired",
            ),
            (
                token(json!({"sub": "a", "iss": "https://id.example", "exp": exp()})),
                "invalid_token",
            ),
            (
                token(
                    json!({"sub": "a", "tenant": "t", "iss": "https://evil.example", "exp": exp()}),
                ),
                "invalid_token",
            ),
            (
                token(json!({"sub": "a", "tenant": "t", "iss": "https://id.example"})),
                "invalid_token",
            ),
            ("not-a-jwt".to_owned(), "invalid_token"),
        ];
        for (token, code) in cases {
            let error = identity.identify(&bearer(&token)).await.unwrap_err();
            assert_eq!((error.status(), error.code()), (401, code), "{token}");
        }
        let forged = encode(
            &Header::new(Algorithm::HS256),
            &json!({"sub": "a", "tenant": "t", "iss": "https://id.example", "exp": exp()}),
            &EncodingKey::from_secret(b"another-secret-that-is-long-enough!!").unwrap(),
        )
        .unwrap();
        let error = identity.identify(&bearer(&forged)).await.unwrap_err();
        assert!(error.message().contains("signature"));
    }

    #[test]
    fn weak_or_malformed_keys_are_refused() {
        let short = JwtIdentity::new(JwtSettings::new(JwtKey::Hs256 {
            secret: b"short".to_vec(),
        }));
        assert!(matches!(short, Err(IdentityConfigError::JwtKey { .. })));
        let not_pem = JwtIdentity::new(JwtSettings::new(JwtKey::Rs256 {
            public_key_pem: b"hello".to_vec(),
        }));
        assert!(matches!(not_pem, Err(IdentityConfigError::JwtKey { .. })));
    }
}
