//! `GET /ai/auth/providers`: the interactive sign-in the server offers (OpenID Providers with
//! a console client), so that the console can show "Sign in with …" before anyone is signed
//! in. It names only public facts: issuers, public client ids and the providers' endpoints.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::WeaverApi;
use crate::identity::SignInOption;

/// The sign-in options.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SignInOptionsView {
    /// One per OpenID Provider with a console client whose discovery document has been
    /// read; empty when there is none.
    pub providers: Vec<SignInOption>,
}

/// The OpenID Providers a person can sign in with.
#[utoipa::path(
    get,
    path = "/ai/auth/providers",
    tag = "meta",
    security(()),
    responses((status = 200, description = "The sign-in options.", body = SignInOptionsView))
)]
pub(crate) async fn sign_in_providers(State(api): State<WeaverApi>) -> Json<SignInOptionsView> {
    Json(SignInOptionsView {
        providers: api.parts().identity.sign_in_options(),
    })
}
