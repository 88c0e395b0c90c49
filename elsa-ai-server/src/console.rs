//! The Weaver console: a small web app (chat, review inbox, audit) served at `/console/`
//! from assets compiled into the binary. It calls the API of the same origin and nothing
//! else: the Content-Security-Policy allows only `'self'`, so no request leaves weaver's
//! origin. No build step: the assets in `console/` are the files served.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The files, as served.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "",
        "text/html; charset=utf-8",
        include_str!("../console/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/app.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../console/app.css"),
    ),
];

/// Only this origin, for scripts, styles and requests; no frames, no plugins, no forms
/// posting elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The console's routes: `/console` (a redirect), `/console/` and its assets. Nest it under
/// the same prefix as the API: it calls the API relative to where it is served.
pub fn router() -> Router {
    let mut router = Router::new().route(
        "/console",
        get(|| async { Redirect::permanent("console/") }),
    );
    for (path, content_type, body) in ASSETS {
        router = router.route(
            &format!("/console/{path}"),
            get(move || async move { asset(content_type, body) }),
        );
    }
    router
}

/// The total size of the console's assets, in bytes (all of them are loaded on first view).
pub fn asset_bytes() -> usize {
    ASSETS.iter().map(|(_, _, body)| body.len()).sum()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    #[test]
    fn the_console_stays_small_and_names_no_other_origin() {
        assert!(asset_bytes() < 300 * 1024, "{} bytes", asset_bytes());
        for (path, _, body) in ASSETS {
            for external in ["http://", "https://", "//fonts.", "@import"] {
                let found = body
                    .match_indices(external)
                    .any(|(at, _)| !body[at..].starts_with("http://www.w3.org/2000/svg"));
                assert!(!found, "{path} names {external}");
            }
        }
    }

    #[tokio::test]
    async fn assets_are_served_with_their_type_and_a_same_origin_policy() {
        for (path, content_type) in [
            ("/console/", "text/html"),
            ("/console/app.js", "text/javascript"),
            ("/console/app.css", "text/css"),
        ] {
            let response = router()
                .oneshot(Request::get(path).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let headers = response.headers();
            assert!(
                headers[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with(content_type)
            );
            assert!(
                headers[header::CONTENT_SECURITY_POLICY]
                    .to_str()
                    .unwrap()
                    .contains("default-src 'none'")
            );
        }
        let redirect = router()
            .oneshot(Request::get("/console").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(redirect.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(redirect.headers()[header::LOCATION], "console/");
    }
}
