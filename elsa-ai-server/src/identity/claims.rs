//! What every bearer-token extractor shares: reading the token from the request within a size
//! bound, naming the rule a refused token broke, and turning verified claims into a caller.

use std::collections::{BTreeMap, BTreeSet};

use axum::http::request::Parts;
use elsa_ai_abstractions::{AiCaller, AiError, Permission};
use jsonwebtoken::errors::ErrorKind;
use serde_json::{Map, Value};

use super::authorization;

/// The longest bearer token read, in bytes. Real access tokens are a few kilobytes; anything
/// far larger is refused before it is parsed.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The token of `Authorization: Bearer <token>`, or `None` for another scheme.
pub(crate) fn bearer_token(request: &Parts) -> Result<Option<&str>, AiError> {
    let Some(token) = authorization(request, "Bearer")? else {
        return Ok(None);
    };
    if token.len() > MAX_TOKEN_BYTES {
        return Err(refused(
            "token_too_large",
            format!(
                "the bearer token has {} bytes; at most {MAX_TOKEN_BYTES} are read",
                token.len()
            ),
        ));
    }
    Ok(Some(token))
}

/// A 401 naming the rule the token broke. The token itself is never part of it.
pub(crate) fn refused(code: &str, message: impl Into<String>) -> AiError {
    AiError::Unauthenticated {
        code: code.into(),
        message: message.into(),
    }
}

/// The refusal for a verification failure reported by `jsonwebtoken`.
pub(crate) fn verification_refusal(error: &jsonwebtoken::errors::Error) -> AiError {
    match error.kind() {
        ErrorKind::ExpiredSignature => refused("token_expired", "the bearer token has expired"),
        ErrorKind::ImmatureSignature => refused(
            "token_not_yet_valid",
            "the bearer token is not valid yet (nbf is in the future)",
        ),
        ErrorKind::InvalidSignature => refused(
            "token_signature_invalid",
            "the bearer token's signature does not verify",
        ),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => refused(
            "token_algorithm_not_accepted",
            "the bearer token is signed with an algorithm this server does not accept",
        ),
        ErrorKind::InvalidIssuer => refused(
            "token_issuer_not_accepted",
            "the bearer token's issuer is not accepted",
        ),
        ErrorKind::InvalidAudience => refused(
            "token_audience_not_accepted",
            "the bearer token is not meant for this audience",
        ),
        ErrorKind::MissingRequiredClaim(claim) => {
            invalid_token(format!("the bearer token has no '{claim}' claim"))
        }
        _ => invalid_token("the bearer token is not a valid JWT"),
    }
}

/// A 401 `invalid_token`: the token is malformed or lacks what a caller needs.
pub(crate) fn invalid_token(message: impl Into<String>) -> AiError {
    refused("invalid_token", message)
}

/// Where a token's tenant comes from: a claim, a default for tokens without it, or both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantSource {
    /// The claim naming the tenant.
    pub claim: Option<String>,
    /// The tenant of a token without the claim (or of every token, without a claim).
    pub default: Option<String>,
    /// The tenants a claim may name (the ones the server serves); `None` accepts any.
    pub allowed: Option<BTreeSet<String>>,
}

impl TenantSource {
    /// The tenant named by `claim`, any tenant accepted.
    pub fn claim(name: impl Into<String>) -> Self {
        Self {
            claim: Some(name.into()),
            ..Self::default()
        }
    }
}

/// How a token's claims become a caller: the actor's claim, the tenant, and the permissions
/// (from a permissions claim, from roles mapped to permissions, or both).
///
/// A claim name is looked up as a top-level claim first; if there is none, a dotted name is
/// followed into nested objects (`realm_access.roles`). Permission names may be Weaver's or
/// Elsa's ([`elsa_permission`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimMapping {
    /// The claim holding the actor id.
    pub actor: String,
    /// Where the tenant comes from.
    pub tenant: TenantSource,
    /// A claim holding permission names: an array of strings or one space-separated string
    /// like an OAuth `scope`.
    pub permissions: Option<String>,
    /// A claim holding role names, and what each role grants; roles not listed grant nothing.
    pub roles: Option<(String, BTreeMap<String, Vec<Permission>>)>,
    /// Claims that must hold exactly these strings (Elsa's `token_use = "access"` keeps its
    /// refresh tokens out).
    pub required: BTreeMap<String, String>,
}

impl ClaimMapping {
    /// The caller `claims` establish.
    pub(crate) fn caller(&self, claims: &Map<String, Value>) -> Result<AiCaller, AiError> {
        let actor = text_claim(claims, &self.actor)?
            .ok_or_else(|| invalid_token(format!("the token has no '{}' claim", self.actor)))?;
        let named = match &self.tenant.claim {
            Some(name) => text_claim(claims, name)?.map(|tenant| (name, tenant)),
            None => None,
        };
        let tenant = match (named, &self.tenant.default) {
            (Some((name, tenant)), _) => {
                if self
                    .tenant
                    .allowed
                    .as_ref()
                    .is_some_and(|set| !set.contains(tenant))
                {
                    return Err(refused(
                        "token_tenant_not_allowed",
                        format!(
                            "the token's '{name}' claim names a tenant this identity provider \
                             may not act for"
                        ),
                    ));
                }
                tenant
            }
            (None, Some(default)) => default.as_str(),
            (None, None) => {
                return Err(invalid_token(format!(
                    "the token has no '{}' claim",
                    self.tenant.claim.as_deref().unwrap_or("tenant")
                )));
            }
        };
        for (name, expected) in &self.required {
            if text_claim(claims, name)? != Some(expected.as_str()) {
                return Err(refused(
                    "token_claim_mismatch",
                    format!("the token's '{name}' claim must be '{expected}'"),
                ));
            }
        }
        let mut permissions = Vec::new();
        if let Some(name) = &self.permissions {
            for item in names(claims, name)? {
                permissions.extend(permissions_of(item));
            }
        }
        if let Some((name, grants)) = &self.roles {
            for role in names(claims, name)? {
                permissions.extend(grants.get(role).into_iter().flatten().cloned());
            }
        }
        Ok(AiCaller::new(actor, tenant, permissions))
    }
}

fn text_claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, AiError> {
    match claim(claims, name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(invalid_token(format!(
            "the token's '{name}' claim must be a string"
        ))),
    }
}

/// The names in a claim holding an array of strings or one space-separated string.
fn names<'a>(claims: &'a Map<String, Value>, name: &str) -> Result<Vec<&'a str>, AiError> {
    match claim(claims, name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(list)) => Ok(list.split_whitespace().collect()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .ok_or_else(|| invalid_token(format!("the '{name}' claim must hold strings")))
            })
            .collect(),
        Some(_) => Err(invalid_token(format!(
            "the '{name}' claim must be an array of strings or a space-separated string"
        ))),
    }
}

fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    claims.get(name).or_else(|| {
        let mut parts = name.split('.');
        let first = claims.get(parts.next()?)?;
        parts.try_fold(first, |value, part| value.get(part))
    })
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    fn mapping(tenant: TenantSource) -> ClaimMapping {
        ClaimMapping {
            required: BTreeMap::from([("token_use".to_owned(), "access".to_owned())]),
            actor: "sub".into(),
            tenant,
            permissions: Some("permissions".into()),
            roles: Some((
                "realm_access.roles".into(),
                BTreeMap::from([(
                    "reviewer".to_owned(),
                    vec![Permission::APPLY_WORKFLOWS, Permission::PROPOSE_WORKFLOWS],
                )]),
            )),
        }
    }

    #[test]
    fn roles_map_to_permissions_beside_the_permissions_claim() {
        let caller = mapping(TenantSource::claim("tenant"))
            .caller(&claims(json!({
                "sub": "alice",
                "token_use": "access",
                "tenant": "acme",
                "permissions": "read:workflows",
                "realm_access": {"roles": ["reviewer", "unmapped"]},
            })))
            .unwrap();
        assert_eq!(caller.actor_id, "alice");
        assert!(caller.has(&Permission::READ_WORKFLOWS));
        assert!(caller.has(&Permission::APPLY_WORKFLOWS));
        assert!(!caller.has(&Permission::new("unmapped")));
        assert!(!caller.has(&Permission::ADMIN_AI));
    }

    #[test]
    fn a_tenant_outside_the_allowed_set_is_refused_and_the_default_fills_in() {
        let served = mapping(TenantSource {
            allowed: Some(BTreeSet::from(["acme".to_owned()])),
            ..TenantSource::claim("tenant")
        });
        let error = served
            .caller(&claims(
                json!({"sub": "a", "tenant": "globex", "token_use": "access"}),
            ))
            .unwrap_err();
        assert_eq!(error.code(), "token_tenant_not_allowed");
        assert!(
            served
                .caller(&claims(
                    json!({"sub": "a", "tenant": "acme", "token_use": "access"})
                ))
                .is_ok()
        );

        let defaulted = mapping(TenantSource {
            default: Some("acme".into()),
            ..TenantSource::claim("https://schemas.example/tenantid")
        });
        let caller = defaulted
            .caller(&claims(json!({"sub": "a", "token_use": "access"})))
            .unwrap();
        assert_eq!(caller.tenant_id.as_str(), "acme");
        let caller = defaulted
            .caller(&claims(json!({
                "sub": "a",
                "token_use": "access",
                "https://schemas.example/tenantid": "globex",
            })))
            .unwrap();
        assert_eq!(
            caller.tenant_id.as_str(),
            "globex",
            "a dotted name is a claim first"
        );
    }

    #[test]
    fn a_required_claim_must_hold_its_value() {
        let mapping = mapping(TenantSource::claim("tenant"));
        for token_use in [json!("refresh"), json!(null)] {
            let error = mapping
                .caller(&claims(
                    json!({"sub": "a", "tenant": "acme", "token_use": token_use}),
                ))
                .unwrap_err();
            assert_eq!(error.code(), "token_claim_mismatch");
        }
    }

    #[test]
    fn malformed_claims_are_invalid_tokens() {
        let mapping = mapping(TenantSource::claim("tenant"));
        for bad in [
            json!({"tenant": "acme", "token_use": "access"}),
            json!({"sub": 7, "tenant": "acme", "token_use": "access"}),
            json!({"sub": "a", "token_use": "access"}),
            json!({"sub": "a", "tenant": "acme", "token_use": "access", "permissions": {"x": 1}}),
            json!({"sub": "a", "tenant": "acme", "token_use": "access", "permissions": [1]}),
        ] {
            let error = mapping.caller(&claims(bad.clone())).unwrap_err();
            assert_eq!(error.code(), "invalid_token", "{bad}");
        }
    }
}
