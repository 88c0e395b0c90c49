//! `GET /ai/me`: who the credentials stand for, so a client can offer only what the caller
//! may do.

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ErrorBody;
use crate::extract::Caller;

/// The caller as the server sees it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct MeView {
    /// The actor the credentials stand for.
    pub actor: String,
    /// The tenant the actor works in.
    pub tenant: String,
    /// The permissions held, sorted.
    pub permissions: Vec<String>,
}

/// The caller's actor, tenant and permissions.
#[utoipa::path(
    get,
    path = "/ai/me",
    tag = "meta",
    responses(
        (status = 200, description = "The caller.", body = MeView),
        (status = 401, description = "No or invalid credentials.", body = ErrorBody),
    )
)]
pub(crate) async fn me(Caller(caller): Caller) -> Json<MeView> {
    Json(MeView {
        actor: caller.actor_id,
        tenant: caller.tenant_id.as_str().to_owned(),
        permissions: caller
            .permissions
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect(),
    })
}
