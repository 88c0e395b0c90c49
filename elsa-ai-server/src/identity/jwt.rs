//! Bearer JSON Web Tokens signed with HS256 (shared secret) or RS256 (RSA public key), with
//! configurable claim names for the actor, the tenant and the permissions.
//!
//! The permissions claim may hold Weaver's names or Elsa's, which Elsa Studio's identity
//! provider issues; Elsa's are read as Weaver's (see [`elsa_permission`](super::elsa_permission)).

use async_trait::async_trait;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use elsa_ai_abstractions::{AiCaller, AiError};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Validation};
use serde_json::{Map, Value};

use super::claims::{
    ClaimMapping, TenantSource, bearer_token, invalid_token, verification_refusal,
};
use super::oidc::JoseHeader;
use super::{IdentityConfigError, IdentityExtractor};

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

impl From<JwtClaimNames> for ClaimMapping {
    fn from(names: JwtClaimNames) -> Self {
        Self {
            actor: names.actor,
            tenant: TenantSource::claim(names.tenant),
            permissions: Some(names.permissions),
            roles: None,
            required: Default::default(),
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
    /// How the claims become a caller (see [`JwtClaimNames`] for the common case).
    pub claims: ClaimMapping,
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
            claims: JwtClaimNames::default().into(),
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
    claims: ClaimMapping,
    hs256_resigner: Option<Hs256Resigner>,
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
        let hs256_resigner = match &settings.key {
            JwtKey::Hs256 { secret } => Some(Hs256Resigner {
                key: EncodingKey::from_secret(secret).map_err(|e| IdentityConfigError::JwtKey {
                    algorithm: "HS256",
                    reason: e.to_string(),
                })?,
            }),
            JwtKey::Rs256 { .. } => None,
        };
        Ok(Self {
            key,
            validation,
            claims: settings.claims,
            hs256_resigner,
        })
    }
}

#[async_trait]
impl IdentityExtractor for JwtIdentity {
    async fn identify(&self, request: &Parts) -> Result<Option<AiCaller>, AiError> {
        let Some(token) = bearer_token(request)? else {
            return Ok(None);
        };
        let data =
            match jsonwebtoken::decode::<Map<String, Value>>(token, &self.key, &self.validation) {
                Ok(data) => data,
                // Only a header jsonwebtoken cannot read is looked at again: Elsa's spelling.
                Err(error) => match &self.hs256_resigner {
                    Some(resigner)
                        if JoseHeader::of(token).is_ok_and(|h| h.alg == XMLDSIG_HMAC_SHA256) =>
                    {
                        let standard = resigner.standard_spelling(token, &self.key)?;
                        jsonwebtoken::decode(&standard, &self.key, &self.validation)
                            .map_err(|error| verification_refusal(&error))?
                    }
                    _ => return Err(verification_refusal(&error)),
                },
            };
        self.claims.caller(&data.claims).map(Some)
    }
}

/// How Elsa 3.8's identity module names HS256 in the header: .NET's `JsonWebTokenHandler`
/// writes the signing credentials' algorithm as given, and Elsa gives the XML-DSig URI.
pub(crate) const XMLDSIG_HMAC_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#hmac-sha256";

/// Accepts HS256 tokens whose header spells the algorithm as Elsa does. The signature is
/// checked over the token as sent; the token is then signed again, with the same secret,
/// under the standard header, so that `jsonwebtoken` validates its claims as it does every
/// other token's.
struct Hs256Resigner {
    key: EncodingKey,
}

impl Hs256Resigner {
    fn standard_spelling(&self, token: &str, key: &DecodingKey) -> Result<String, AiError> {
        let malformed =
            || invalid_token("the bearer token is not a JWT (header.payload.signature)");
        let (message, signature) = token.rsplit_once('.').ok_or_else(malformed)?;
        let (_, payload) = message.split_once('.').ok_or_else(malformed)?;
        let verified =
            jsonwebtoken::crypto::verify(signature, message.as_bytes(), key, Algorithm::HS256)
                .map_err(|_| malformed())?;
        if !verified {
            return Err(verification_refusal(&ErrorKind::InvalidSignature.into()));
        }
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let message = format!("{header}.{payload}");
        let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &self.key, Algorithm::HS256)
            .map_err(|_| malformed())?;
        Ok(format!("{message}.{signature}"))
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::Permission;
    use jsonwebtoken::{Header, encode, get_current_timestamp};
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
            claims: claims.into(),
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
                "token_issuer_not_accepted",
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

    /// A token built the way Elsa 3.8's identity module builds one (`DefaultElsaTokenService`
    /// with .NET's `JsonWebTokenHandler`): HMAC-SHA256 over the ASCII bytes of
    /// `Identity:Tokens:SigningKey`, the algorithm spelled as the XML-DSig URI, issuer and
    /// audience `http://elsa.api`, the tenant under Microsoft's claim type, `permissions` a
    /// string for one value and an array for several, and `token_use`.
    fn elsa_token(signing_key: &str, claims: Value) -> String {
        let header =
            URL_SAFE_NO_PAD.encode(json!({"alg": XMLDSIG_HMAC_SHA256, "typ": "JWT"}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let message = format!("{header}.{payload}");
        let key = EncodingKey::from_secret(signing_key.as_bytes()).unwrap();
        let signature =
            jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::HS256).unwrap();
        format!("{message}.{signature}")
    }

    #[tokio::test]
    async fn tokens_issued_by_elsas_identity_module_are_accepted_as_elsa_sends_them() {
        const TENANT_CLAIM: &str = "http://schemas.microsoft.com/identity/claims/tenantid";
        let signing_key = "an-elsa-signing-key-of-32-characters-or-more";
        let identity = JwtIdentity::new(JwtSettings {
            key: JwtKey::Hs256 {
                secret: signing_key.as_bytes().to_vec(),
            },
            issuer: Some("http://elsa.api".into()),
            audience: Some("http://elsa.api".into()),
            claims: ClaimMapping {
                actor: "sub".into(),
                tenant: TenantSource {
                    claim: Some(TENANT_CLAIM.into()),
                    default: Some("default".into()),
                    allowed: None,
                },
                permissions: Some("permissions".into()),
                roles: None,
                required: [("token_use".to_owned(), "access".to_owned())].into(),
            },
            leeway_secs: 0,
        })
        .unwrap();
        let now = get_current_timestamp();
        let claims = |token_use: &str, permissions: Value| {
            json!({
                "aud": "http://elsa.api", "iss": "http://elsa.api",
                "exp": now + 3600, "iat": now, "nbf": now,
                "sub": "789d5056cb3bb8e9", "name": "bob",
                TENANT_CLAIM: "tenant-1",
                "http://schemas.microsoft.com/ws/2008/06/identity/claims/role": "Administrator",
                "permissions": permissions, "token_use": token_use,
            })
        };

        let admin = elsa_token(signing_key, claims("access", json!("*")));
        let caller = identity.identify(&bearer(&admin)).await.unwrap().unwrap();
        assert_eq!(caller.actor_id, "789d5056cb3bb8e9");
        assert_eq!(caller.tenant_id.as_str(), "tenant-1");
        assert!(caller.has(&Permission::ADMIN_AI));

        let chat = elsa_token(
            signing_key,
            claims("access", json!(["ai:chat", "ai:tools:view"])),
        );
        let caller = identity.identify(&bearer(&chat)).await.unwrap().unwrap();
        assert!(caller.has(&Permission::PROPOSE_WORKFLOWS));
        assert!(!caller.has(&Permission::APPLY_WORKFLOWS));

        let mut default_tenant = claims("access", json!("*"));
        default_tenant.as_object_mut().unwrap().remove(TENANT_CLAIM);
        let token = elsa_token(signing_key, default_tenant);
        let caller = identity.identify(&bearer(&token)).await.unwrap().unwrap();
        assert_eq!(
            caller.tenant_id.as_str(),
            "default",
            "Elsa's default tenant has no claim"
        );

        let refresh = elsa_token(signing_key, claims("refresh", json!("*")));
        let error = identity.identify(&bearer(&refresh)).await.unwrap_err();
        assert_eq!(
            error.code(),
            "token_claim_mismatch",
            "a refresh token is no access token"
        );

        let forged = elsa_token(
            "another-signing-key-of-32-characters-or-more",
            claims("access", json!("*")),
        );
        let error = identity.identify(&bearer(&forged)).await.unwrap_err();
        assert_eq!(error.code(), "token_signature_invalid");

        let mut expired = claims("access", json!("*"));
        expired["exp"] = json!(now - 1);
        let error = identity
            .identify(&bearer(&elsa_token(signing_key, expired)))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "token_expired");
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
