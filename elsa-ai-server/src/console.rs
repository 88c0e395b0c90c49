//! The Weaver console: a small web app (chat, review inbox, audit) served at `/console/`
//! from assets compiled into the binary. It calls the API of the same origin and, when it
//! signs in with an OpenID Connect provider, that provider's token endpoint: the
//! Content-Security-Policy allows `'self'` and only the origins the host names (see
//! [`router_with_connect_sources`]), so no other request leaves weaver's origin. No build
//! step: the assets in `console/` are the files served.

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

/// Only this origin, for scripts, styles and requests (plus the connect sources the host
/// names, between these two halves); no frames, no plugins, no forms posting elsewhere.
/// `form-action` stays `'self'` with OIDC sign-in: the authorization request is a
/// navigation by script (`location.assign`), which `form-action` does not govern, and the
/// sign-in form never submits (its handler prevents the default).
const POLICY_BEFORE_CONNECT: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'";
const POLICY_AFTER_CONNECT: &str =
    "; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The console's routes: `/console` (a redirect), `/console/` and its assets. Nest it under
/// the same prefix as the API: it calls the API relative to where it is served.
pub fn router() -> Router {
    router_with_connect_sources(Vec::new)
}

/// [`router`], whose pages may also send requests to the origins `sources` returns (the
/// token endpoints of the OIDC providers the console signs in with). `sources` is asked on
/// every request, as providers are discovered after the router is built; each entry must be
/// an origin, `http(s)://host[:port]`, and anything else is left out of the policy.
pub fn router_with_connect_sources(
    sources: impl Fn() -> Vec<String> + Clone + Send + Sync + 'static,
) -> Router {
    let mut router = Router::new().route(
        "/console",
        get(|| async { Redirect::permanent("console/") }),
    );
    for (path, content_type, body) in ASSETS {
        let sources = sources.clone();
        router = router.route(
            &format!("/console/{path}"),
            get(move || {
                let policy = content_security_policy(&sources());
                async move { asset(content_type, body, &policy) }
            }),
        );
    }
    router
}

/// The policy, with `extra` origins allowed for requests; entries that are not a plain
/// origin are dropped, as they would go into a header (a quote, space or semicolon could
/// add sources or directives of its own).
fn content_security_policy(extra: &[String]) -> String {
    let mut policy = String::from(POLICY_BEFORE_CONNECT);
    let mut added: Vec<&str> = Vec::new();
    for source in extra.iter().map(String::as_str).filter(|s| is_origin(s)) {
        if !added.contains(&source) {
            added.push(source);
            policy.push(' ');
            policy.push_str(source);
        }
    }
    policy.push_str(POLICY_AFTER_CONNECT);
    policy
}

/// `http://` or `https://`, a host name (letters, digits, `-`, `.`) or a bracketed IPv6
/// address, and an optional port: nothing else, no path, no wildcard.
fn is_origin(source: &str) -> bool {
    let Some(rest) = source
        .strip_prefix("https://")
        .or_else(|| source.strip_prefix("http://"))
    else {
        return false;
    };
    let (host_ok, after_host) = match rest.strip_prefix('[') {
        Some(ipv6) => match ipv6.split_once(']') {
            Some((address, after)) => (
                !address.is_empty()
                    && address
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.'),
                after,
            ),
            None => return false,
        },
        None => {
            let end = rest.find(':').unwrap_or(rest.len());
            let host = &rest[..end];
            (
                !host.is_empty()
                    && host
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'),
                &rest[end..],
            )
        }
    };
    let port_ok = match after_host.strip_prefix(':') {
        Some(port) => (1..=5).contains(&port.len()) && port.chars().all(|c| c.is_ascii_digit()),
        None => after_host.is_empty(),
    };
    host_ok && port_ok
}

/// The total size of the console's assets, in bytes (all of them are loaded on first view).
pub fn asset_bytes() -> usize {
    ASSETS.iter().map(|(_, _, body)| body.len()).sum()
}

fn asset(content_type: &'static str, body: &'static str, policy: &str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // The policy is built from checked origins only, so it is always a valid header value;
    // were it not, no policy would be far worse than the same-origin one.
    let policy = HeaderValue::from_str(policy).unwrap_or_else(|_| {
        HeaderValue::from_str(&content_security_policy(&[])).expect("a static policy")
    });
    headers.insert(header::CONTENT_SECURITY_POLICY, policy);
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

    /// The policy a page of `router` answers with.
    async fn policy_of(router: Router, path: &str) -> String {
        let response = router
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        response.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[tokio::test]
    async fn without_connect_sources_the_policy_is_same_origin_only() {
        let today = "default-src 'none'; script-src 'self'; style-src 'self'; \
             connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; \
             frame-ancestors 'none'";
        for path in ["/console/", "/console/app.js", "/console/app.css"] {
            assert_eq!(policy_of(router(), path).await, today, "{path}");
            assert_eq!(
                policy_of(router_with_connect_sources(Vec::new), path).await,
                today
            );
        }
    }

    #[tokio::test]
    async fn provider_origins_are_allowed_for_requests_and_asked_for_on_each_request() {
        let sources = std::sync::Arc::new(std::sync::Mutex::new(vec![
            "https://id.example.com".to_owned(),
        ]));
        let router = {
            let sources = sources.clone();
            router_with_connect_sources(move || sources.lock().unwrap().clone())
        };
        let policy = policy_of(router.clone(), "/console/").await;
        assert!(
            policy.contains("; connect-src 'self' https://id.example.com; img-src"),
            "{policy}"
        );
        // Discovered later: the next page load allows it.
        sources.lock().unwrap().extend([
            "http://127.0.0.1:8443".to_owned(),
            "https://[::1]:9000".to_owned(),
            "https://id.example.com".to_owned(),
        ]);
        let policy = policy_of(router, "/console/").await;
        assert!(
            policy.contains(
                "; connect-src 'self' https://id.example.com http://127.0.0.1:8443 \
                 https://[::1]:9000; img-src"
            ),
            "{policy}"
        );
    }

    #[tokio::test]
    async fn anything_but_a_plain_origin_is_left_out_of_the_policy() {
        let unsafe_sources = [
            "https://id.example.com evil.example",
            "https://id.example.com'",
            "https://id.example.com; script-src *",
            "https://id.example.com/token",
            "https://id.example.com:",
            "https://id.example.com:123456",
            "https://*.example.com",
            "https://",
            "'unsafe-inline'",
            "*",
            "data:",
            "javascript://id.example.com",
            "ftp://id.example.com",
            "https://id.example.com\r\nSet-Cookie: a=b",
            "https://[::1",
        ];
        let router = router_with_connect_sources(move || {
            unsafe_sources
                .iter()
                .map(|s| s.to_string())
                .chain(["https://ok.example.com:8443".to_owned()])
                .collect()
        });
        let policy = policy_of(router, "/console/").await;
        assert!(
            policy.contains("; connect-src 'self' https://ok.example.com:8443; img-src"),
            "{policy}"
        );
        for source in unsafe_sources {
            assert!(!is_origin(source), "{source}");
        }
    }
}
