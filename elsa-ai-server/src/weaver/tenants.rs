//! The tenants served and where each one's workflow data comes from: the host's backends, a
//! folder or the samples in memory, or an Elsa Server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use elsa_workflows::{
    ActivityDescriptor, ElsaServerBackend, ElsaServerConfig, TenantId, TenantRouter,
};

use super::{StartupError, invalid};
use crate::config::{DEFAULT_TENANT, TenantConfig, WeaverConfig};

/// Where one tenant's workflow data comes from.
pub(super) enum WorkflowSource {
    /// The host's own backend ([`WeaverBuilder::workflows`]).
    Host,
    /// The built-in sample workflows, in memory.
    Samples,
    /// A folder of Elsa JSON files, read into memory.
    Folder(PathBuf),
    /// An Elsa Server, over its REST API (the tenant's `elsa_*` settings).
    ElsaServer(TenantConfig),
}

/// The tenants served and where their workflow data comes from: the host's router's
/// tenants from the host, the others as `[[tenants]]` says (or, without `[[tenants]]`, the
/// samples for the tenants the API keys name, or for `default` when nothing else is served).
pub(super) fn served_tenants(
    config: &WeaverConfig,
    host: Option<&TenantRouter>,
) -> Result<Vec<(TenantId, WorkflowSource)>, StartupError> {
    let hosted = |tenant: &TenantId| host.is_some_and(|host| host.services(tenant).is_some());
    let mut served: Vec<(TenantId, WorkflowSource)> = host
        .map(|host| {
            host.tenants()
                .map(|tenant| (tenant.clone(), WorkflowSource::Host))
                .collect()
        })
        .unwrap_or_default();
    if !config.tenants.is_empty() {
        for entry in &config.tenants {
            let tenant = TenantId::new(entry.id.clone());
            if hosted(&tenant) {
                if entry.workflows.is_some()
                    || entry.uses_elsa_server()
                    || entry.activities.is_some()
                {
                    return Err(invalid(format!(
                        "tenant '{tenant}': its workflow data comes from the host, so \
                         [[tenants]] cannot give it workflows, elsa_url or activities too"
                    )));
                }
                continue;
            }
            if entry.uses_elsa_server() && entry.activities.is_some() {
                return Err(invalid(format!(
                    "tenant '{tenant}': activities is for a folder or samples tenant; an Elsa \
                     Server tenant's catalog is its server's"
                )));
            }
            let source = match &entry.workflows {
                _ if entry.uses_elsa_server() => WorkflowSource::ElsaServer(entry.clone()),
                Some(folder) => WorkflowSource::Folder(folder.clone()),
                None => WorkflowSource::Samples,
            };
            served.push((tenant, source));
        }
        return Ok(served);
    }
    let named: BTreeSet<&str> = config
        .auth
        .api_keys
        .iter()
        .map(|k| k.tenant.as_str())
        .collect();
    for tenant in named.into_iter().map(TenantId::new) {
        if !hosted(&tenant) {
            served.push((tenant, WorkflowSource::Samples));
        }
    }
    if served.is_empty() {
        served.push((TenantId::new(DEFAULT_TENANT), WorkflowSource::Samples));
    }
    Ok(served)
}

/// The Elsa Server backend a `[[tenants]]` entry names, and its API key (a secret for the
/// redactor), checked before anything is sent.
pub(super) fn elsa_server(
    tenant: &TenantId,
    entry: &TenantConfig,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<(ElsaServerBackend, Option<String>), StartupError> {
    let problem = |message: String| invalid(format!("tenant '{tenant}': {message}"));
    if entry.workflows.is_some() {
        return Err(problem(
            "workflows and elsa_url are mutually exclusive: the workflow data comes from a \
             folder or from an Elsa Server, not both"
                .into(),
        ));
    }
    let url = entry.elsa_url.as_deref().ok_or_else(|| {
        problem("elsa_api_path, elsa_api_key_env and elsa_tenant need elsa_url".into())
    })?;
    let mut config = ElsaServerConfig::new(url).map_err(|e| problem(format!("elsa_url: {e}")))?;
    if let Some(path) = &entry.elsa_api_path {
        config = config.api_path(path);
    }
    let mut secret = None;
    if let Some(variable) = &entry.elsa_api_key_env {
        let key = env(variable).filter(|v| !v.is_empty()).ok_or_else(|| {
            problem(format!(
                "elsa_api_key_env names {variable}, which is not set"
            ))
        })?;
        config = config.api_key(key.clone());
        secret = Some(key);
    }
    if let Some(elsa_tenant) = &entry.elsa_tenant {
        config = config.elsa_tenant_id(elsa_tenant.clone());
    }
    let backend = ElsaServerBackend::new(tenant.clone(), config)
        .map_err(|e| problem(format!("the Elsa Server cannot be used: {e}")))?;
    Ok((backend, secret))
}

/// The activity catalog a `[[tenants]]` entry's `activities` names: the descriptors Elsa
/// Server's `GET /elsa/api/descriptors/activities` answers (`{"items": […]}`, or a bare
/// array). A file that cannot be read or does not parse stops start-up, naming the file and
/// the position (line and column of bad JSON, the JSON path of a bad descriptor).
pub(super) fn activity_catalog(
    tenant: &TenantId,
    path: &Path,
) -> Result<Vec<ActivityDescriptor>, StartupError> {
    let failed = |message: String| StartupError::Activities {
        tenant: tenant.to_string(),
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|error| failed(error.to_string()))?;
    let catalog =
        ActivityDescriptor::catalog_from_json_str(&text).map_err(|e| failed(e.to_string()))?;
    if catalog.is_empty() {
        return Err(failed(
            "the catalog holds no activity descriptors".to_owned(),
        ));
    }
    Ok(catalog)
}
