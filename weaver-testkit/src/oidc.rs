//! A real OpenID Provider for tests: panva's `oidc-provider` (pinned in `tools/oidc`,
//! installed by `npm ci --prefix tools/oidc`), run by `tools/oidc/provider.mjs` as a child
//! process on a loopback port.
//!
//! The provider issues RS256-signed JWT access tokens (header `typ` `at+jwt`) whose `aud` is
//! the configured resource indicator. A client-credentials token carries `sub` and
//! `client_id` = the client's id plus the client's `claims`; a token issued through the
//! authorization-code flow carries `sub` = the login name typed on the sign-in page,
//! `client_id`, `scope` (`"api"` when the request asked for the `api` scope, else absent) plus
//! that account's `claims` from [`OidcProviderConfig::accounts`]. Every token also has `iss`
//! (the [issuer](OidcProvider::issuer)), `iat`, `exp` and `jti`. Refresh tokens are issued to
//! every client allowed the `refresh_token` grant (no `offline_access` needed); a public
//! client's refresh tokens rotate on use.
//!
//! Signing keys are RSA 2048 keys named by kid, kept in a key directory as `<kid>.jwk.json`,
//! `<kid>.pem` (PKCS#8) and `<kid>.pub.pem` (SPKI), and reused when the provider restarts.
//! The JWKS publishes the kids in the order given, and the first one signs: restart with
//! `["B", "A"]` to rotate B in while A still verifies, then with `["B"]` to retire A.
//! Sessions, grants and issued tokens live in the provider's memory and are lost on restart.
//!
//! # Driving the sign-in pages from a browser
//!
//! The provider's development interactions are plain HTML forms (each page also shows a
//! `[ Cancel ]` link, ending the flow with `error=access_denied`):
//!
//! - **Sign-in** (`<h1>Sign-in</h1>`, served at `/interaction/<uid>`): a text input
//!   `input[name="login"]` (any name: it becomes the account id and the token's `sub`), a
//!   password input `input[name="password"]` (required by the form, never checked), a hidden
//!   `input[name="prompt"][value="login"]`, and the submit button
//!   `button[type="submit"].login-submit` labelled `Sign-in`.
//! - **Consent** (`<h1>Authorize</h1>`, at another `/interaction/<uid>`): a hidden
//!   `input[name="prompt"][value="consent"]` and the submit button
//!   `button[type="submit"].login-submit` labelled `Continue`. It follows a client's first
//!   sign-in, and later ones only when they ask for scopes not yet granted in that session.
//! - **Sign-out** (the discovery document's `end_session_endpoint`, `/session/end`): a form
//!   `form[id="op.logoutForm"]` with the buttons `button[name="logout"][value="yes"]` (`Yes, sign
//!   me out`) and `No, stay signed in`. Redirecting back afterwards needs the client's
//!   `post_logout_redirect_uris` to list the target.
//!
//! The pages link a stylesheet from the public internet; a browser without network access
//! renders them unstyled, which does not affect the forms.
//!
//! A public client (`token_endpoint_auth_method` `none`) must use PKCE (S256), and its
//! token-endpoint calls get CORS headers for the origins of its `redirect_uris` (any other
//! origin is refused with `invalid_request`); a confidential client's token requests from a
//! browser origin are refused. The discovery document and the JWKS allow any origin.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sha2::Digest;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the provider may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// What the provider serves: the API it issues access tokens for and its clients and
/// accounts.
#[derive(Clone, Debug)]
pub struct OidcProviderConfig {
    /// The resource indicator of the API (for example `urn:weaver:api`): every access token's
    /// `aud`, whether or not a request names it.
    pub resource: String,
    /// The lifetime of access tokens, in seconds.
    pub access_token_ttl_secs: u64,
    /// Client metadata as oidc-provider takes it (`client_id`, `client_secret`,
    /// `grant_types`, `redirect_uris`, `response_types`, `token_endpoint_auth_method`, …),
    /// plus an optional `claims` object added to that client's client-credentials tokens.
    pub clients: Vec<Value>,
    /// `{"<login name>": {"claims": {…}}}`: claims added to the access tokens of a user who
    /// signs in with that name; a name not listed signs in with no extra claims.
    pub accounts: Value,
}

impl OidcProviderConfig {
    /// A confidential client allowed only the `client_credentials` grant, authenticating with
    /// HTTP Basic, whose tokens carry `claims` (a JSON object).
    pub fn service_client(client_id: &str, client_secret: &str, claims: Value) -> Value {
        json!({
            "client_id": client_id,
            "client_secret": client_secret,
            "grant_types": ["client_credentials"],
            "redirect_uris": [],
            "response_types": [],
            "token_endpoint_auth_method": "client_secret_basic",
            "claims": claims,
        })
    }

    /// A public client (no secret, PKCE) allowed the `authorization_code` and
    /// `refresh_token` grants, redirecting to `redirect_uris`, as a single-page app is.
    pub fn public_client(client_id: &str, redirect_uris: &[&str]) -> Value {
        json!({
            "client_id": client_id,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "redirect_uris": redirect_uris,
        })
    }

    /// The configuration file `provider.mjs` reads.
    fn to_json(&self) -> Value {
        json!({
            "resource": self.resource,
            "accessTokenTtl": self.access_token_ttl_secs,
            "clients": self.clients,
            "accounts": self.accounts,
        })
    }
}

/// A running `oidc-provider` process on `http://127.0.0.1:<port>`, killed when stopped or
/// dropped.
pub struct OidcProvider {
    // Declared first so that it is dropped (and the process killed) before the directories
    // it uses are removed.
    child: Option<Child>,
    port: u16,
    key_dir: PathBuf,
    config_file: PathBuf,
    kids: Vec<String>,
    resource: String,
    http: reqwest::Client,
    _work_dir: tempfile::TempDir,
}

/// A loopback port that was free when asked, for [`OidcProvider::start_on`] when the
/// issuer URL must be known (say, written into a weaver configuration) before the provider
/// starts.
///
/// # Panics
///
/// When no port can be bound.
pub fn free_port() -> u16 {
    crate::process::free_loopback_address().port()
}

impl OidcProvider {
    /// Starts `node tools/oidc/provider.mjs` on a free loopback port with a fresh temporary
    /// key directory, publishing `kids` (generated now) with the first one signing.
    ///
    /// # Panics
    ///
    /// As [`start_on`](Self::start_on).
    pub async fn start(config: &OidcProviderConfig, kids: &[&str]) -> Self {
        Self::start_on(free_port(), config, kids, None).await
    }

    /// Starts the provider on `port` of 127.0.0.1, with its keys in `key_dir` (kids found
    /// there are reused, missing ones generated and written there) or, when `None`, in a
    /// fresh temporary directory removed on drop.
    ///
    /// # Panics
    ///
    /// When `kids` is empty, the npm packages are not installed (`npm ci --prefix
    /// tools/oidc`), `node` cannot start, or the provider exits or is not ready within 30 s.
    pub async fn start_on(
        port: u16,
        config: &OidcProviderConfig,
        kids: &[&str],
        key_dir: Option<PathBuf>,
    ) -> Self {
        let work_dir = tempfile::tempdir().expect("a temporary directory");
        let key_dir = key_dir.unwrap_or_else(|| work_dir.path().join("keys"));
        std::fs::create_dir_all(&key_dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", key_dir.display()));
        let config_file = work_dir.path().join("config.json");
        std::fs::write(&config_file, config.to_json().to_string())
            .expect("the provider configuration is written");
        let mut provider = Self {
            child: None,
            port,
            key_dir,
            config_file,
            kids: Vec::new(),
            resource: config.resource.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("an HTTP client"),
            _work_dir: work_dir,
        };
        provider.launch(kids).await;
        provider
    }

    async fn launch(&mut self, kids: &[&str]) {
        assert!(!kids.is_empty(), "the provider needs at least one key");
        let tools = crate::workspace_root().join("tools/oidc");
        assert!(
            tools.join("node_modules/oidc-provider").is_dir(),
            "oidc-provider is missing from {}: run `npm ci --prefix tools/oidc` (the README's \
             test command does)",
            tools.display()
        );
        self.kids = kids.iter().map(|kid| (*kid).to_owned()).collect();
        let mut child = Command::new("node")
            .arg(tools.join("provider.mjs"))
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--key-dir")
            .arg(&self.key_dir)
            .arg("--keys")
            .arg(kids.join(","))
            .arg("--config")
            .arg(&self.config_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node (is Node.js installed?): {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(READY_TIMEOUT, lines.next_line()).await;
        match ready {
            Ok(Ok(Some(line))) => {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the provider printed {line:?}: {e}"));
                assert_eq!(value["ready"], true, "the provider printed {line}");
                assert_eq!(value["issuer"], self.issuer().as_str());
            }
            Ok(Ok(None)) | Ok(Err(_)) => {
                let status = child.wait().await;
                panic!(
                    "the OpenID Provider on port {} exited before it was ready ({status:?}); \
                     its stderr says why",
                    self.port
                );
            }
            Err(_) => panic!(
                "the OpenID Provider on port {} was not ready within {READY_TIMEOUT:?}",
                self.port
            ),
        }
        // The provider prints nothing more, but a full pipe would block it if it did.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child = Some(child);
    }

    /// The issuer URL, `http://127.0.0.1:<port>` (no trailing slash).
    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the keys (`<kid>.jwk.json`, `<kid>.pem`, `<kid>.pub.pem`).
    pub fn key_dir(&self) -> &Path {
        &self.key_dir
    }

    /// The kids the JWKS publishes, the signing one first.
    pub fn kids(&self) -> &[String] {
        &self.kids
    }

    /// The resource indicator: the `aud` of every access token.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Stops the provider (SIGKILL) if it runs and starts it again on the same port with the
    /// same configuration and key directory, publishing `kids` in that order (kids on disk
    /// reused, new ones generated). Sessions, grants and the JWKS request count start anew.
    ///
    /// # Panics
    ///
    /// As [`start_on`](Self::start_on).
    pub async fn restart(&mut self, kids: &[&str]) {
        self.stop().await;
        self.launch(kids).await;
    }

    /// Kills the provider and waits for it to exit: its port refuses connections until
    /// [`restart`](Self::restart).
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// The PKCS#8 PEM private key of `kid`, to sign tokens of a test's own with it.
    ///
    /// # Panics
    ///
    /// When the key was never generated in this key directory.
    pub fn private_key_pem(&self, kid: &str) -> Vec<u8> {
        self.key_file(&format!("{kid}.pem"))
    }

    /// The SPKI PEM public key of `kid`.
    ///
    /// # Panics
    ///
    /// When the key was never generated in this key directory.
    pub fn public_key_pem(&self, kid: &str) -> Vec<u8> {
        self.key_file(&format!("{kid}.pub.pem"))
    }

    fn key_file(&self, name: &str) -> Vec<u8> {
        let path = self.key_dir.join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    /// A client-credentials access token (the compact JWT) for the configured resource,
    /// authenticating as `client_id` with `client_secret` over HTTP Basic.
    ///
    /// # Panics
    ///
    /// When the provider does not issue one, with its answer.
    pub async fn client_credentials_token(&self, client_id: &str, client_secret: &str) -> String {
        let body = form(&[
            ("grant_type", "client_credentials"),
            ("resource", &self.resource),
        ]);
        let response = self
            .http
            .post(format!("{}/token", self.issuer()))
            // RFC 6749 §2.3.1: the Basic credentials are form-encoded first.
            .basic_auth(encode(client_id), Some(encode(client_secret)))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("the token endpoint answers");
        let answer = token_answer(response).await;
        answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access_token in {answer}"))
            .to_owned()
    }

    /// Signs in as `login` through the provider's own sign-in and consent pages over HTTP
    /// (no browser) and redeems the code as the public client `client_id` (PKCE S256),
    /// asking for `scope` (for example `"openid"` or `"openid api"`): the token endpoint's
    /// JSON answer (`access_token`, `id_token`, `refresh_token`, `expires_in`, …).
    ///
    /// # Panics
    ///
    /// When a step of the flow fails, with what the provider answered.
    pub async fn authorization_code_tokens(
        &self,
        client_id: &str,
        redirect_uri: &str,
        login: &str,
        scope: &str,
    ) -> Value {
        let verifier = pkce_verifier();
        let challenge = base64url(&sha2::Sha256::digest(verifier.as_bytes()));
        let query = form(&[
            ("client_id", client_id),
            ("response_type", "code"),
            ("redirect_uri", redirect_uri),
            ("scope", scope),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "weaver-testkit"),
        ]);
        let mut cookies = CookieJar::default();
        let mut location = self
            .follow(
                &mut cookies,
                self.http.get(format!("{}/auth?{query}", self.issuer())),
            )
            .await;
        let interaction = format!("{}/interaction/", self.issuer());
        while location.starts_with(&interaction) {
            let page = cookies
                .apply(self.http.get(&location))
                .send()
                .await
                .expect("the interaction page answers")
                .text()
                .await
                .expect("the interaction page is text");
            let submit = if page.contains(r#"name="prompt" value="login""#) {
                form(&[("prompt", "login"), ("login", login), ("password", "any")])
            } else if page.contains(r#"name="prompt" value="consent""#) {
                form(&[("prompt", "consent")])
            } else {
                panic!("an interaction page that is neither sign-in nor consent: {page}");
            };
            let resume = self
                .follow(
                    &mut cookies,
                    self.http
                        .post(&location)
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(submit),
                )
                .await;
            location = self.follow(&mut cookies, self.http.get(resume)).await;
        }
        let code = location
            .strip_prefix(redirect_uri)
            .and_then(|rest| rest.strip_prefix('?'))
            .and_then(|query| query.split('&').find_map(|pair| pair.strip_prefix("code=")))
            .unwrap_or_else(|| panic!("the flow ended at {location}, not with a code"));
        let body = form(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", &decode(code)),
            ("code_verifier", &verifier),
            ("redirect_uri", redirect_uri),
        ]);
        let response = self
            .http
            .post(format!("{}/token", self.issuer()))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("the token endpoint answers");
        token_answer(response).await
    }

    /// Sends `request` with the jar's cookies, keeps the cookies it sets and returns the
    /// absolute URL it redirects to.
    async fn follow(&self, cookies: &mut CookieJar, request: reqwest::RequestBuilder) -> String {
        let response = cookies
            .apply(request)
            .send()
            .await
            .expect("the provider answers");
        cookies.keep(&response);
        let status = response.status();
        let Some(location) = response.headers().get("location").cloned() else {
            let body = response.text().await.unwrap_or_default();
            panic!("expected a redirect, got {status}: {body}");
        };
        let location = location.to_str().expect("a textual location");
        if location.starts_with('/') {
            format!("{}{location}", self.issuer())
        } else {
            location.to_owned()
        }
    }

    /// How many requests the JWKS endpoint (`/jwks`) has served since the provider (re)started.
    ///
    /// # Panics
    ///
    /// When the provider is stopped or does not answer.
    pub async fn jwks_requests(&self) -> u64 {
        let stats: Value = self
            .http
            .get(format!("{}/__stats", self.issuer()))
            .send()
            .await
            .expect("the provider answers /__stats")
            .json()
            .await
            .expect("/__stats is JSON");
        stats["jwks"]
            .as_u64()
            .unwrap_or_else(|| panic!("no JWKS count in {stats}"))
    }
}

/// The token endpoint's JSON answer, or a panic with the provider's body.
async fn token_answer(response: reqwest::Response) -> Value {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    assert!(
        status.is_success(),
        "the token endpoint refused ({status}): {body}"
    );
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("the token answer {body:?}: {e}"))
}

/// Cookies by name, as the sign-in flow needs them: every cookie is sent on every request
/// (oidc-provider scopes some by path, which does no harm here).
#[derive(Default)]
struct CookieJar(Vec<(String, String)>);

impl CookieJar {
    fn keep(&mut self, response: &reqwest::Response) {
        for header in response.headers().get_all("set-cookie") {
            let Some((name, value)) = header
                .to_str()
                .ok()
                .and_then(|text| text.split(';').next())
                .and_then(|pair| pair.split_once('='))
            else {
                continue;
            };
            self.0.retain(|(kept, _)| kept != name);
            // An empty value is how the provider deletes a cookie.
            if !value.is_empty() {
                self.0.push((name.to_owned(), value.to_owned()));
            }
        }
    }

    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.0.is_empty() {
            return request;
        }
        let header = self
            .0
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join("; ");
        request.header("cookie", header)
    }
}

/// A PKCE code verifier: unguessability does not matter in a test, uniqueness does.
fn pkce_verifier() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    format!(
        "weaver-testkit-pkce-verifier-{nanos:032}-{}",
        std::process::id()
    )
}

/// `application/x-www-form-urlencoded` pairs.
fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Decodes `%XX` escapes and `+` (a code is URL-safe, but a redirect may still escape it).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                i += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                i += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// Unpadded base64url (RFC 4648 §5), for the PKCE challenge.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut encoded = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk.iter().enumerate().fold(0u32, |acc, (i, byte)| {
            acc | (u32::from(*byte) << (16 - 8 * i))
        });
        for i in 0..=chunk.len() {
            let index = (group >> (18 - 6 * i)) & 0x3f;
            encoded.push(char::from(ALPHABET[index as usize]));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_rfc_4648_vectors_unpadded() {
        let cases = [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in cases {
            assert_eq!(base64url(input.as_bytes()), expected, "{input:?}");
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn the_pkce_challenge_of_rfc_7636s_example() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            base64url(&sha2::Sha256::digest(verifier.as_bytes())),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn form_encoding_round_trips() {
        let text = "urn:weaver:api a+b/c?d=e&f~g";
        assert_eq!(encode(text), "urn%3Aweaver%3Aapi%20a%2Bb%2Fc%3Fd%3De%26f~g");
        assert_eq!(decode(&encode(text)), text);
        assert_eq!(decode("a+b%2"), "a b%2");
    }
}
