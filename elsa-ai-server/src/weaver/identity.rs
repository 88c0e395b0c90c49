//! Who may call: the host's extractor, the API keys and JWTs of `[auth]`, or development
//! keys when nothing is configured (loopback only), and the secrets they bring.

use std::sync::Arc;

use elsa_ai_abstractions::{AiCaller, Permission};
use elsa_workflows::TenantId;

use super::tenants::WorkflowSource;
use super::{StartupError, invalid};
use crate::config::{ApiKeyConfig, JwtAlgorithmConfig, JwtConfig, WeaverConfig};
use crate::identity::{
    ApiKey, ApiKeyIdentity, IdentityChain, IdentityExtractor, JwtClaimNames, JwtIdentity, JwtKey,
    JwtSettings,
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
                 [[auth.api_keys]] or [auth.jwt], or listen on a loopback address such as \
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
    if let Some(jwt) = &auth.jwt {
        let (identity, secret) = jwt_identity(jwt, env)?;
        secrets.extend(secret);
        chain = chain.with(Arc::new(identity));
    }
    Ok((chain, secrets, development))
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
        claims: JwtClaimNames {
            actor: jwt.actor_claim.clone().unwrap_or(defaults.actor),
            tenant: jwt.tenant_claim.clone().unwrap_or(defaults.tenant),
            permissions: jwt
                .permissions_claim
                .clone()
                .unwrap_or(defaults.permissions),
        },
        leeway_secs: jwt.leeway_secs.unwrap_or(60),
    };
    Ok((JwtIdentity::new(settings)?, secret))
}
