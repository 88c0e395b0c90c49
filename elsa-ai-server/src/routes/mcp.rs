//! `/mcp`: weaver's governed tools for MCP clients, behind the API's identity.

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::MethodRouter;

use crate::api::WeaverApi;
use crate::extract::Caller;

/// The MCP endpoint (streamable HTTP). Each request is authenticated like the REST API
/// (`Authorization: ApiKey …` or `Bearer …`; none is 401 with the usual error body) and the
/// caller handed to the endpoint, which lists and calls tools through the governor.
pub(crate) fn route(api: &WeaverApi) -> MethodRouter<WeaverApi> {
    api.parts()
        .mcp_endpoint
        .clone()
        .into_route()
        .layer(middleware::from_fn_with_state(api.clone(), identify))
}

async fn identify(Caller(caller): Caller, mut request: Request, next: Next) -> Response {
    request.extensions_mut().insert(caller);
    next.run(request).await
}
