//! Who may call: the host's extractor, the API keys, JWTs and OpenID Providers of `[auth]`, or development
//! keys when nothing is configured (loopback only), and the secrets they bring.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use elsa_ai_abstractions::{AiCaller, Permission};
use elsa_workflows::TenantId;

use super::tenants::WorkflowSource;
use super::{StartupError, invalid};
use crate::config::{ApiKeyConfig, JwtAlgorithmConfig, JwtConfig, OidcConfig, WeaverConfig};
use crate::identity::{
    ApiKey, ApiKeyIdentity, ClaimMapping, DEFAULT_ALGORITHMS, IdentityChain, IdentityExtractor,
    JwtClaimNames, JwtIdentity, JwtKey, JwtSettings, OidcIdentity, OidcSettings, TenantSource,
};

/// A key with every permission in one tenant, created because no `[auth]` is configured.
/// `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DevelopmentKey {
    /// The tenant it works in.
    pub tenant: String,
    /// The key, sent as `Authorization: ApiKey <key>`.
    pub key: String,
    /// Whether it was generated for this run (else it came from `WEAVER_DEV_KEY`, and
    /// whoever set that variable knows it).
    pub generated: bool,
}

impl std::fmt::Debug for DevelopmentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevelopmentKey")
            .field("tenant", &self.tenant)
            .field("key", &"<redacted>")
            .field("generated", &self.generated)
            .finish()
    }
}

pub(super) type Identity = (IdentityChain, Vec<String>, Vec<DevelopmentKey>);

/// The identity chain, the secrets to redact, and the development keys (if created).
pub(super) fn identity(
    config: &WeaverConfig,
    tenants: &[(TenantId, WorkflowSource)],
    host: Option<Arc<dyn IdentityExtractor>>,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    report: &mut Vec<String>,
) -> Result<Identity, StartupError> {
    let auth = &config.auth;
    let mut chain = IdentityChain::new();
    let mut secrets = Vec::new();
    let mut development = Vec::new();
    let mut keys = Vec::new();
    let host_decides = host.is_some();
    if let Some(host) = host {
        report.push("identity: the host's extractor first".into());
        chain = chain.with(host);
    }
    if !auth.is_configured() && !host_decides {
        // A key with every permission is for the developer's own machine only.
        let address = config.listen_addr()?;
        if !address.ip().is_loopback() {
            return Err(invalid(format!(
                "listening on {address} needs [auth]: without it weaver makes a development key \
                 with every permission, which is for local use only; configure \
                 [[auth.api_keys]], [auth.jwt] or [[auth.oidc]], or listen on a loopback address such as \
                 127.0.0.1"
            )));
        }
        for (i, (tenant, _)) in tenants.iter().enumerate() {
            let (key, generated) = match env("WEAVER_DEV_KEY").filter(|_| i == 0) {
                Some(key) => (key, false),
                None => (format!("wv-dev-{}", uuid::Uuid::new_v4().simple()), true),
            };
            let caller = AiCaller::new("demo", tenant.clone(), all_permissions());
            keys.push(ApiKey::new(key.clone(), caller)?);
            report.push(format!(
                "no [auth] configured: development key for actor 'demo' in tenant '{tenant}' \
                 (all permissions, local use only), {}",
                if generated {
                    "generated for this run"
                } else {
                    "from WEAVER_DEV_KEY"
                }
            ));
            development.push(DevelopmentKey {
                tenant: tenant.to_string(),
                key,
                generated,
            });
        }
    }
    for entry in &auth.api_keys {
        keys.push(api_key(entry, tenants, env)?);
    }
    if !keys.is_empty() {
        secrets.extend(keys.iter().map(|k| k.secret().to_owned()));
        chain = chain.with(Arc::new(ApiKeyIdentity::new(keys)?));
    }
    let served: BTreeSet<String> = tenants
        .iter()
        .map(|(tenant, _)| tenant.as_str().to_owned())
        .collect();
    if !auth.oidc.is_empty() {
        let providers = auth
            .oidc
            .iter()
            .map(|entry| oidc_settings(entry, &served))
            .collect::<Result<Vec<_>, _>>()?;
        for provider in &providers {
            report.push(format!(
                "identity: OpenID provider {} (audience '{}'{})",
                provider.issuer,
                provider.audience,
                if provider.console_client_id.is_some() {
                    ", console sign-in"
                } else {
                    ""
                }
            ));
        }
        let mut oidc = OidcIdentity::new(providers)?;
        if auth.jwt.is_some() {
            oidc = oidc.deferring_unknown_issuers();
        }
        oidc.fetch_keys();
        chain = chain.with(Arc::new(oidc));
    }
    if let Some(jwt) = &auth.jwt {
        let (identity, secret) = jwt_identity(jwt, &served, env)?;
        secrets.extend(secret);
        chain = chain.with(Arc::new(identity));
    }
    Ok((chain, secrets, development))
}

fn oidc_settings(
    entry: &OidcConfig,
    served: &BTreeSet<String>,
) -> Result<OidcSettings, StartupError> {
    let issuer = &entry.issuer;
    let algorithms = match &entry.algorithms {
        None => DEFAULT_ALGORITHMS.to_vec(),
        Some(names) => names
            .iter()
            .map(|name| {
                name.parse().map_err(|_| {
                    invalid(format!(
                        "[[auth.oidc]] {issuer}: algorithm '{name}' is not one of RS256, RS384, \
                         RS512, PS256, PS384, PS512, ES256, ES384, EdDSA"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    if entry.tenant_claim.is_none() && entry.tenant.is_none() {
        return Err(invalid(format!(
            "[[auth.oidc]] {issuer}: set tenant_claim (the claim naming the tenant) or tenant \
             (one tenant for this provider)"
        )));
    }
    if let Some(tenant) = &entry.tenant
        && !served.contains(tenant)
    {
        return Err(invalid(format!(
            "[[auth.oidc]] {issuer}: tenant '{tenant}' is not under [[tenants]] nor served by \
             the host"
        )));
    }
    if !entry.roles.is_empty() && entry.roles_claim.is_none() {
        return Err(invalid(format!(
            "[[auth.oidc]] {issuer}: [auth.oidc.roles] needs roles_claim (the claim holding \
             the roles)"
        )));
    }
    let permissions = match (&entry.permissions_claim, &entry.roles_claim) {
        (Some(claim), _) => Some(claim.clone()),
        (None, Some(_)) => None,
        (None, None) => Some("permissions".to_owned()),
    };
    let roles = entry.roles_claim.clone().map(|claim| {
        let grants = entry
            .roles
            .iter()
            .map(|(role, permissions)| {
                (
                    role.clone(),
                    permissions
                        .iter()
                        .map(|p| Permission::new(p.clone()))
                        .collect(),
                )
            })
            .collect();
        (claim, grants)
    });
    let name = entry.name.clone().unwrap_or_else(|| {
        reqwest::Url::parse(issuer)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned))
            .unwrap_or_else(|| issuer.clone())
    });
    Ok(OidcSettings {
        name,
        issuer: issuer.clone(),
        jwks_uri: entry.jwks_uri.clone(),
        audience: entry.audience.clone(),
        algorithms,
        claims: ClaimMapping {
            actor: entry.actor_claim.clone().unwrap_or_else(|| "sub".into()),
            tenant: TenantSource {
                claim: entry.tenant_claim.clone(),
                default: entry.tenant.clone(),
                allowed: Some(served.clone()),
            },
            permissions,
            roles,
            required: entry.required_claims.clone(),
        },
        leeway_secs: entry.leeway_secs.unwrap_or(30),
        console_client_id: entry.console_client_id.clone(),
        console_scopes: entry
            .console_scopes
            .clone()
            .unwrap_or_else(|| "openid".into()),
        refetch_interval: Duration::from_secs(entry.jwks_refetch_secs.unwrap_or(30)),
    })
}

fn all_permissions() -> Vec<Permission> {
    Permission::ALL.to_vec()
}

fn api_key(
    entry: &ApiKeyConfig,
    tenants: &[(TenantId, WorkflowSource)],
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<ApiKey, StartupError> {
    let key = match (&entry.key, &entry.key_env) {
        (Some(key), None) => key.clone(),
        (None, Some(variable)) => env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
            invalid(format!(
                "the API key of actor '{}' is read from {variable}, which is not set",
                entry.actor
            ))
        })?,
        _ => {
            return Err(invalid(format!(
                "the API key of actor '{}' needs exactly one of key or key_env",
                entry.actor
            )));
        }
    };
    if !tenants
        .iter()
        .any(|(tenant, _)| tenant.as_str() == entry.tenant)
    {
        return Err(invalid(format!(
            "the API key of actor '{}' names tenant '{}', which is not under [[tenants]] nor \
             served by the host",
            entry.actor, entry.tenant
        )));
    }
    let caller = AiCaller::new(
        entry.actor.clone(),
        entry.tenant.clone(),
        entry.permissions.iter().map(|p| Permission::new(p.clone())),
    );
    Ok(ApiKey::new(key, caller)?)
}

fn jwt_identity(
    jwt: &JwtConfig,
    served: &BTreeSet<String>,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<(JwtIdentity, Option<String>), StartupError> {
    let read_env = |setting: &str, variable: &str| {
        env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
            invalid(format!(
                "auth.jwt.{setting} names {variable}, which is not set"
            ))
        })
    };
    let (key, secret) = match jwt.algorithm {
        JwtAlgorithmConfig::Hs256 => {
            let variable = jwt
                .secret_env
                .as_deref()
                .ok_or_else(|| invalid("auth.jwt with HS256 needs secret_env".into()))?;
            let secret = read_env("secret_env", variable)?;
            (
                JwtKey::Hs256 {
                    secret: secret.clone().into_bytes(),
                },
                Some(secret),
            )
        }
        JwtAlgorithmConfig::Rs256 => {
            let pem = match (&jwt.public_key_path, &jwt.public_key_env) {
                (Some(path), None) => std::fs::read(path).map_err(|e| {
                    invalid(format!(
                        "auth.jwt.public_key_path {} cannot be read: {e}",
                        path.display()
                    ))
                })?,
                (None, Some(variable)) => read_env("public_key_env", variable)?.into_bytes(),
                _ => {
                    return Err(invalid(
                        "auth.jwt with RS256 needs exactly one of public_key_path or public_key_env"
                            .into(),
                    ));
                }
            };
            (
                JwtKey::Rs256 {
                    public_key_pem: pem,
                },
                None,
            )
        }
    };
    let defaults = JwtClaimNames::default();
    let settings = JwtSettings {
        key,
        issuer: jwt.issuer.clone(),
        audience: jwt.audience.clone(),
        claims: ClaimMapping {
            actor: jwt.actor_claim.clone().unwrap_or(defaults.actor),
            tenant: TenantSource {
                claim: match (&jwt.tenant_claim, &jwt.tenant) {
                    (Some(claim), _) => Some(claim.clone()),
                    (None, Some(_)) => None,
                    (None, None) => Some(defaults.tenant),
                },
                default: jwt.tenant.clone(),
                allowed: Some(served.clone()),
            },
            permissions: Some(
                jwt.permissions_claim
                    .clone()
                    .unwrap_or(defaults.permissions),
            ),
            roles: None,
            required: jwt.required_claims.clone(),
        },
        leeway_secs: jwt.leeway_secs.unwrap_or(60),
    };
    Ok((JwtIdentity::new(settings)?, secret))
}
