//! Where the API is served and who may call it from a browser: `[http] base_path` (every
//! route under it, and the chat route also where Elsa Studio posts it) and `[http]
//! cors_origins`.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::api::WeaverApi;
use crate::config::{ConfigError, HttpConfig};
use crate::routes::CONVERSATION_ID_HEADER;

/// The checked `[http]` settings.
#[derive(Clone, Debug, Default)]
pub(crate) struct HttpSurface {
    base_path: Option<String>,
    cors: Option<CorsLayer>,
}

impl HttpSurface {
    /// Checks `config`: a base path of plain segments, origins that are header values.
    pub(crate) fn new(config: &HttpConfig) -> Result<Self, ConfigError> {
        let base_path = config.base_path()?;
        let cors = if config.cors_origins.is_empty() {
            None
        } else {
            let origins = config
                .cors_origins
                .iter()
                .map(|origin| {
                    HeaderValue::from_str(origin.trim_end_matches('/')).map_err(|_| {
                        ConfigError::Invalid(
                            "[http] cors_origins must hold origins such as \
                             \"https://studio.example.com\""
                                .to_owned(),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Some(
                CorsLayer::new()
                    .allow_origin(AllowOrigin::list(origins))
                    .allow_methods([Method::GET, Method::POST, Method::PUT])
                    .allow_headers([
                        header::AUTHORIZATION,
                        header::CONTENT_TYPE,
                        header::ACCEPT,
                        HeaderName::from_static("last-event-id"),
                    ])
                    .expose_headers([HeaderName::from_static(CONVERSATION_ID_HEADER)]),
            )
        };
        Ok(Self { base_path, cors })
    }

    /// The API's routes over `api` and the console, under the base path, with CORS when
    /// origins are set.
    pub(crate) fn router(&self, api: WeaverApi) -> Router {
        // The console sits beside the API, under the same prefix, and calls it from there.
        // The console exchanges sign-in codes at the providers' token endpoints itself.
        let identity = api.parts().identity.clone();
        let token_origins = move || {
            identity
                .sign_in_options()
                .iter()
                .filter_map(|option| reqwest::Url::parse(&option.token_endpoint).ok())
                .map(|url| url.origin().ascii_serialization())
                .collect()
        };
        let served = crate::router(api.clone())
            .merge(crate::console::router_with_connect_sources(token_origins));
        let router = match &self.base_path {
            None => served,
            Some(base) => {
                // Studio posts its chat to `new Uri(Backend:Url, "ai/chat")`: one level up.
                let parent = base.rsplit_once('/').map_or("", |(parent, _)| parent);
                let chat = crate::routes::chat_router(api.clone());
                let chat = if parent.is_empty() {
                    chat
                } else {
                    Router::new().nest(parent, chat)
                };
                Router::new().nest(base, served).merge(chat)
            }
        };
        match &self.cors {
            Some(cors) => router.layer(cors.clone()),
            None => router,
        }
    }
}
