//! Static API keys configured server-side, each mapped to an actor, a tenant and permissions.

use async_trait::async_trait;
use axum::http::request::Parts;
use elsa_ai_abstractions::{AiCaller, AiError};
use subtle::ConstantTimeEq;

use super::{IdentityConfigError, IdentityExtractor, authorization};

/// One configured key and the caller it stands for. `Debug` never shows the key.
#[derive(Clone)]
pub struct ApiKey {
    key: String,
    caller: AiCaller,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("key", &"<redacted>")
            .field("caller", &self.caller)
            .finish()
    }
}

impl ApiKey {
    /// The shortest key accepted, in bytes: shorter keys are guessable.
    pub const MIN_LEN: usize = 16;

    /// `key` standing for `caller`; refused when shorter than [`Self::MIN_LEN`] or when it
    /// contains whitespace (it could not be sent in one header).
    pub fn new(key: impl Into<String>, caller: AiCaller) -> Result<Self, IdentityConfigError> {
        let key = key.into();
        if key.len() < Self::MIN_LEN {
            return Err(IdentityConfigError::KeyTooShort {
                actor: caller.actor_id,
                len: key.len(),
                min: Self::MIN_LEN,
            });
        }
        if key.chars().any(char::is_whitespace) {
            return Err(IdentityConfigError::KeyHasWhitespace {
                actor: caller.actor_id,
            });
        }
        Ok(Self { key, caller })
    }

    /// The key itself, for registering it with the redactor.
    pub fn secret(&self) -> &str {
        &self.key
    }

    /// The caller the key stands for.
    pub fn caller(&self) -> &AiCaller {
        &self.caller
    }
}

/// Authenticates `Authorization: ApiKey <key>` against configured keys. Keys are compared
/// in constant time, all of them on every request, so timing reveals nothing about them.
#[derive(Clone, Debug, Default)]
pub struct ApiKeyIdentity {
    keys: Vec<ApiKey>,
}

impl ApiKeyIdentity {
    /// The scheme of the `Authorization` header.
    pub const SCHEME: &'static str = "ApiKey";

    /// An extractor over `keys`; two equal keys are refused.
    pub fn new(keys: Vec<ApiKey>) -> Result<Self, IdentityConfigError> {
        for (i, key) in keys.iter().enumerate() {
            if keys[..i].iter().any(|other| other.key == key.key) {
                return Err(IdentityConfigError::DuplicateKey {
                    actor: key.caller.actor_id.clone(),
                });
            }
        }
        Ok(Self { keys })
    }

    /// The configured keys.
    pub fn keys(&self) -> &[ApiKey] {
        &self.keys
    }
}

#[async_trait]
impl IdentityExtractor for ApiKeyIdentity {
    async fn identify(&self, request: &Parts) -> Result<Option<AiCaller>, AiError> {
        let Some(given) = authorization(request, Self::SCHEME)? else {
            return Ok(None);
        };
        let mut found = None;
        for key in &self.keys {
            // `subtle` keeps the comparison free of data-dependent branches (a hand-written
            // fold may be compiled into an early exit).
            if bool::from(key.key.as_bytes().ct_eq(given.as_bytes())) {
                found = Some(key.caller.clone());
            }
        }
        match found {
            Some(caller) => Ok(Some(caller)),
            None => Err(AiError::Unauthenticated {
                code: "invalid_api_key".into(),
                message: "the API key is not valid".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use elsa_ai_abstractions::Permission;

    use super::super::tests::parts;
    use super::*;

    const KEY: &str = "acme-alice-0123456789";

    fn identity() -> ApiKeyIdentity {
        let caller = AiCaller::new("alice", "acme", [Permission::READ_WORKFLOWS]);
        ApiKeyIdentity::new(vec![ApiKey::new(KEY, caller).unwrap()]).unwrap()
    }

    #[tokio::test]
    async fn a_configured_key_is_its_caller_and_any_other_is_refused() {
        let identity = identity();
        let caller = identity
            .identify(&parts(Some(&format!("ApiKey {KEY}"))))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (caller.actor_id.as_str(), caller.tenant_id.as_str()),
            ("alice", "acme")
        );
        let wrong = identity
            .identify(&parts(Some("ApiKey acme-alice-0123456780")))
            .await
            .unwrap_err();
        assert_eq!((wrong.status(), wrong.code()), (401, "invalid_api_key"));
        assert!(
            identity
                .identify(&parts(Some("Bearer x.y.z")))
                .await
                .unwrap()
                .is_none(),
            "another scheme is left to other extractors"
        );
    }

    #[test]
    fn short_duplicate_and_spaced_keys_are_refused_and_never_printed() {
        let caller = AiCaller::new("alice", "acme", []);
        assert!(ApiKey::new("short", caller.clone()).is_err());
        assert!(ApiKey::new("has a space in it!!", caller.clone()).is_err());
        let key = ApiKey::new(KEY, caller).unwrap();
        assert!(!format!("{key:?}").contains(KEY));
        assert!(ApiKeyIdentity::new(vec![key.clone(), key]).is_err());
    }
}
