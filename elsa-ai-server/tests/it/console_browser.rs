//! The Weaver console in a real browser: Debian's Chromium driven over WebDriver
//! (chromedriver) against a `weaver` server on a real socket. The whole review flow (sign in,
//! attach, chat, open the proposal, see its diff, approve, apply); a read-only key that is
//! offered no review buttons; tool cards with redacted arguments; a diff with removed and
//! changed activities and inputs side by side; sign-in with a bearer token kept for the tab
//! only, and a wrong key refused; sign-in through a real OpenID Provider's pages (the token
//! kept for the tab only, a chat, no review action or audit beyond the token's permissions,
//! sign-out ending the provider's session too); under `base_path`, a rejection with a reason found again in
//! the inbox, the conversation history and the filtered audit; a stream cut mid-turn that
//! resumes without duplicates; Stop on a turn whose model is still answering; the console at
//! 390 px; activities drawn at one size in a one- and a twelve-activity workflow; a status
//! filter offering every status the OpenAPI document lists, Blocked among them; a retry
//! proposed through `/mcp` reviewed as an operation (its description and target table, a
//! target changed since marked stale and dropped, approved, applied, each target's outcome);
//! a model's answer drawn as Markdown (headings, emphasis, code, nested lists, a code block, a
//! table, a link), an unfinished code block and table drawn as they stream in, and a hostile
//! answer's HTML, script links and remote image kept as text.
//! `.ci/run` installs `chromium` and `chromium-driver`; without them this test fails and says
//! so. Screenshots land in `target/tmp/console-screenshots/`, and also in
//! `$WEAVER_SCREENSHOT_DIR` when that is set.

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use elsa_ai_scripted::{Script, ScriptStep, ScriptedProvider};
use elsa_ai_server::Weaver;
use elsa_ai_server::config::{JwtAlgorithmConfig, JwtConfig, WeaverConfig};
use elsa_ai_server::testing::TestServer;
use elsa_workflows::{TenantId, WorkflowInstance, WorkflowInstanceStore};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode, get_current_timestamp};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use weaver_testkit::mcp::{call_tool, weaver_client};
use weaver_testkit::model_server::{ModelReply, ScriptedModelServer};
use weaver_testkit::oidc::{OidcProvider, OidcProviderConfig, free_port};

const ADMIN: &str = "console-admin-key-0123456789";
const READER: &str = "console-reader-key-0123456789";
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const DEFINITION: &str = "sample-order-approval";

fn config() -> WeaverConfig {
    config_with("kind = \"demo\"")
}

/// The test keys, with `provider` as the `[provider]` section's settings.
fn config_with(provider: &str) -> WeaverConfig {
    WeaverConfig::from_toml(&format!(
        "[store]\nmemory = true\n[provider]\n{provider}\n\
         [[auth.api_keys]]\nkey = \"{ADMIN}\"\nactor = \"alice\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:workflow-instances\", \"read:activities\", \
         \"propose:workflows\", \"apply:workflows\", \"admin:ai\", \"operate:workflow-instances\", \"publish:workflows\"]\n\
         [[auth.api_keys]]\nkey = \"{READER}\"\nactor = \"rita\"\ntenant = \"acme\"\n\
         permissions = [\"read:workflows\", \"read:workflow-instances\", \"propose:workflows\"]\n"
    ))
    .expect("a valid configuration")
}

/// chromedriver on a free port, killed with the test.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Self {
        for path in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                std::path::Path::new(path).exists(),
                "{path} is missing: install Debian's chromium and chromium-driver \
                 (apt-get install chromium chromium-driver), as .ci/run does"
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn browser(&self, width: u32, height: u32) -> Client {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         format!("--window-size={width},{height}"), "--no-first-run"],
            }),
        );
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // chromedriver leads its own process group: ending the group also ends the Chromium it
        // started, which a test that fails before `close` would otherwise leave running.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn testid(id: &str) -> String {
    format!("[data-testid=\"{id}\"]")
}

/// Polls `probe` (a JavaScript expression) until it is truthy, failing after 20 s.
async fn until(browser: &Client, what: &str, probe: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let value = browser
            .execute(&format!("return ({probe});"), Vec::new())
            .await
            .expect("the probe runs");
        if !(value.is_null() || value == false || value == 0 || value == "") {
            return value;
        }
        if Instant::now() > deadline {
            let page = browser.source().await.unwrap_or_default();
            panic!(
                "timed out waiting for {what}; page:\n{}",
                &page[..page.len().min(4000)]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks the element `css` finds. A list the console redraws (each reload of the
/// conversations replaces its buttons) may replace the element between finding and clicking
/// it: then it is found again, as a person would click the redrawn button.
async fn click(browser: &Client, css: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let clicked = browser
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .click()
            .await;
        match clicked {
            Ok(()) => return,
            Err(e) if e.is_stale_element_reference() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("click {css}: {e}"),
        }
    }
}

async fn type_into(browser: &Client, css: &str, text: &str) {
    let field = browser.find(Locator::Css(css)).await.expect(css);
    field.clear().await.expect("cleared");
    field.send_keys(text).await.expect("typed");
}

async fn text_of(browser: &Client, css: &str) -> String {
    let element = browser.find(Locator::Css(css)).await.expect(css);
    element.text().await.expect("its text")
}

async fn count(browser: &Client, css: &str) -> usize {
    browser
        .find_all(Locator::Css(css))
        .await
        .map_or(0, |all| all.len())
}

async fn sign_in(browser: &Client, base: &str, key: &str) {
    browser
        .goto(&format!("{base}/console/"))
        .await
        .expect("the console loads");
    type_into(browser, &testid("api-key"), key).await;
    click(browser, &testid("sign-in")).await;
    until(
        browser,
        "the agents",
        "document.querySelectorAll('[data-testid=agent] option').length",
    )
    .await;
}

/// The form controls of the page with neither a `<label>` nor an `aria-label`.
async fn unlabelled_controls(browser: &Client) -> Value {
    browser
        .execute(
            "return [...document.querySelectorAll('input, select, textarea')].filter(c => c.type !== 'hidden' && !c.labels.length && !c.getAttribute('aria-label') && !c.getAttribute('aria-labelledby')).map(c => c.id || c.outerHTML);",
            Vec::new(),
        )
        .await
        .expect("the probe runs")
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("a screenshot folder");
    dir
}

/// Saves a screenshot of the page as `{name}.png` in [`screenshots`], and in
/// `$WEAVER_SCREENSHOT_DIR` too when that is set (to keep it beside notes or a report).
async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("a screenshot");
    std::fs::write(screenshots().join(format!("{name}.png")), &png).expect("written");
    if let Some(dir) = std::env::var_os("WEAVER_SCREENSHOT_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("the screenshot folder");
        std::fs::write(dir.join(format!("{name}.png")), &png).expect("written");
    }
}

async fn attach_definition(browser: &Client) {
    click(browser, &testid("attach")).await;
    type_into(browser, &testid("attachment-search"), "order").await;
    // The list once the search for the whole word has answered, so the option clicked is
    // not replaced by the answer to an earlier keystroke.
    let option = format!(
        "#attachment-options[data-query=\"order\"]:not([aria-busy]) {}[data-reference=\"{DEFINITION}\"]",
        testid("attachment-option")
    );
    // Found and clicked in one step: the list is re-rendered while the search settles.
    until(
        browser,
        "the definition to attach",
        &format!(
            "(() => {{ const o = document.querySelector('{option}'); if (o) o.click(); return !!o; }})()"
        ),
    )
    .await;
    until(
        browser,
        "the attachment chip",
        "document.querySelectorAll('#attached li').length === 1",
    )
    .await;
}

async fn chat(browser: &Client, message: &str) {
    type_into(browser, &testid("message"), message).await;
    click(browser, &testid("send")).await;
    until(browser, "the turn to end", "!document.querySelector('[data-testid=send]').disabled && document.querySelectorAll('[data-testid=assistant-text], .msg.failed').length > 0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reviews_and_applies_a_proposal_in_the_console() {
    let server = TestServer::start(config()).await;
    server.enable_tool(ADMIN, "workflow.proposeUpdate").await;
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    sign_in(&browser, &base, ADMIN).await;
    let figures = until(&browser, "paint timings", "(() => { const paint = performance.getEntriesByType('paint'); const res = performance.getEntriesByType('resource'); const nav = performance.getEntriesByType('navigation')[0]; return paint.length && nav ? { firstPaintMs: paint[0].startTime, bytes: nav.transferSize + res.filter(r => /console\\//.test(r.name)).reduce((n, r) => n + r.transferSize, 0), external: res.filter(r => !r.name.startsWith(location.origin)).length } : null; })()").await;
    eprintln!("console figures on the loopback: {figures}");
    assert_eq!(figures["external"], 0, "no request leaves weaver's origin");
    assert!(
        figures["bytes"].as_f64().unwrap() < 300.0 * 1024.0,
        "{figures}"
    );

    // Chat: attach the definition, ask for a proposal; tool cards and a proposal card appear.
    attach_definition(&browser).await;
    chat(
        &browser,
        "Please propose a clearer description and a log line.",
    )
    .await;
    until(
        &browser,
        "the proposal card",
        &format!("document.querySelector('{}')", testid("proposal-card")),
    )
    .await;
    assert!(
        count(&browser, &testid("tool-card")).await >= 2,
        "getDefinition and proposeUpdate"
    );
    let text = text_of(&browser, &testid("assistant-text")).await;
    assert!(!text.is_empty());
    screenshot(&browser, "chat").await;

    // The proposal: its diff drawn as a graph with the added activity, then approve and apply.
    click(&browser, &format!("{} button", testid("proposal-card"))).await;
    until(
        &browser,
        "the diff graph",
        &format!(
            "document.querySelector('{} [data-status=added][data-activity=\"weaver-demo-log\"]')",
            testid("diff-graph")
        ),
    )
    .await;
    let edges = count(
        &browser,
        &format!("{} line[data-status=added]", testid("diff-graph")),
    )
    .await;
    assert_eq!(edges, 1, "the new connection is drawn as added");
    screenshot(&browser, "proposal-diff").await;
    click(&browser, &testid("approve")).await;
    until(&browser, "Approved", "document.querySelector('#proposal [data-testid=proposal-status]').textContent === 'Approved'").await;
    assert_eq!(
        count(&browser, &testid("approve")).await,
        0,
        "approve is gone once approved"
    );
    click(&browser, &testid("apply")).await;
    until(&browser, "Applied", "document.querySelector('#proposal [data-testid=proposal-status]').textContent === 'Applied'").await;
    assert_eq!(count(&browser, &testid("apply")).await, 0);

    // The inbox lists it as applied; the audit view shows what happened.
    browser.execute("document.getElementById('inbox-status').value=''; document.getElementById('inbox-status').dispatchEvent(new Event('change'));", Vec::new()).await.unwrap();
    until(
        &browser,
        "an applied row",
        &format!(
            "[...document.querySelectorAll('{}')].some(s => s.textContent === 'Applied')",
            testid("proposal-status")
        ),
    )
    .await;
    screenshot(&browser, "inbox").await;
    click(&browser, "#nav-audit").await;
    until(
        &browser,
        "audit rows",
        &format!(
            "document.querySelectorAll('{}').length",
            testid("audit-row")
        ),
    )
    .await;
    assert!(
        count(
            &browser,
            &format!("{}[data-action=\"proposal.applied\"]", testid("audit-row"))
        )
        .await
            >= 1
    );

    // A read-only key sees the inbox but is offered no review action.
    browser
        .execute("sessionStorage.clear();", Vec::new())
        .await
        .unwrap();
    sign_in(&browser, &base, READER).await;
    assert!(
        !browser
            .find(Locator::Id("nav-audit"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    );
    click(&browser, "#nav button[data-view=inbox]").await;
    browser.execute("document.getElementById('inbox-status').value=''; document.getElementById('inbox-status').dispatchEvent(new Event('change'));", Vec::new()).await.unwrap();
    until(
        &browser,
        "rows",
        &format!(
            "document.querySelectorAll('{}').length",
            testid("proposal-row")
        ),
    )
    .await;
    until(
        &browser,
        "a row to open",
        "(() => { const r = document.querySelector('[data-testid=proposal-row]'); if (r) r.click(); return !!r; })()",
    )
    .await;
    until(
        &browser,
        "the detail",
        "document.querySelector('#proposal [data-testid=diff-graph]')",
    )
    .await;
    for action in ["approve", "reject", "reject-reason", "apply"] {
        assert_eq!(
            count(&browser, &testid(action)).await,
            0,
            "{action} offered to a reader"
        );
    }

    // At 390 px the console still fits its width.
    browser.set_window_size(390, 844).await.unwrap();
    click(&browser, "#nav button[data-view=chat]").await;
    let overflow = until(&browser, "layout", "[document.documentElement.scrollWidth]").await;
    assert!(overflow[0].as_u64().unwrap() <= 400, "{overflow}");
    screenshot(&browser, "chat-390px").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_base_path_a_reviewer_rejects_with_a_reason_and_finds_it_again() {
    let mut config = config();
    config.http.base_path = Some("/elsa/api".into());
    let server = TestServer::start(config).await;
    let enabled = server
        .request(
            Method::PUT,
            "/elsa/api/ai/admin/tools/workflow.proposeUpdate/enablement",
            ADMIN,
        )
        .json(&json!({"enabled": true}))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(enabled.status(), StatusCode::OK);
    let base = server.url("/elsa/api");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    // Served under base_path, the console finds the API beside it.
    sign_in(&browser, &base, ADMIN).await;
    assert_eq!(
        browser.current_url().await.unwrap().path(),
        "/elsa/api/console/"
    );
    attach_definition(&browser).await;
    chat(&browser, "Please propose a clearer description.").await;
    until(
        &browser,
        "the proposal card",
        &format!("document.querySelector('{}')", testid("proposal-card")),
    )
    .await;
    click(&browser, &format!("{} button", testid("proposal-card"))).await;
    until(
        &browser,
        "the review controls",
        &format!("document.querySelector('{}')", testid("reject")),
    )
    .await;

    // Reject without a reason does nothing but ask for one.
    click(&browser, &testid("reject")).await;
    let focused = browser
        .execute(
            "return document.activeElement.dataset.testid || null;",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(focused, "reject-reason");
    assert_eq!(
        text_of(
            &browser,
            &format!("#proposal {}", testid("proposal-status"))
        )
        .await,
        "Validated"
    );

    // With a reason the proposal is rejected, the reason shown, and no action is left.
    type_into(
        &browser,
        &testid("reject-reason"),
        "The docs team owns descriptions.",
    )
    .await;
    click(&browser, &testid("reject")).await;
    until(&browser, "Rejected", "document.querySelector('#proposal [data-testid=proposal-status]').textContent === 'Rejected'").await;
    let review = text_of(&browser, "#proposal-review").await;
    assert!(
        review.starts_with("Reviewed by alice")
            && review.ends_with("The docs team owns descriptions."),
        "{review}"
    );
    for action in ["approve", "reject", "apply"] {
        assert_eq!(count(&browser, &testid(action)).await, 0, "{action}");
    }

    // The inbox filtered to Rejected lists exactly that proposal.
    browser.execute("document.getElementById('inbox-status').value='Rejected'; document.getElementById('inbox-status').dispatchEvent(new Event('change'));", Vec::new()).await.unwrap();
    let proposal = until(
        &browser,
        "the rejected row",
        "(() => { const rows = document.querySelectorAll('[data-testid=proposal-row]'); return rows.length === 1 && rows[0].querySelector('[data-testid=proposal-status]').textContent === 'Rejected' ? rows[0].dataset.id : null; })()",
    )
    .await;
    let proposal = proposal.as_str().expect("the proposal id").to_owned();

    // The row opens from the keyboard: focused, Enter shows its detail again.
    browser.execute("document.getElementById('proposal').replaceChildren(); document.querySelector('[data-testid=proposal-row]').focus();", Vec::new()).await.unwrap();
    browser
        .active_element()
        .await
        .unwrap()
        .send_keys(&Key::Enter.to_string())
        .await
        .unwrap();
    until(
        &browser,
        "the detail opened with Enter",
        "document.querySelector('#proposal-review')",
    )
    .await;
    assert_eq!(unlabelled_controls(&browser).await, json!([]), "inbox");

    // Conversation history: a new conversation, then the first one reopened from the list.
    click(&browser, "#nav button[data-view=chat]").await;
    click(&browser, "#new-conversation").await;
    until(
        &browser,
        "an empty transcript",
        "document.getElementById('transcript').children.length === 0",
    )
    .await;
    until(
        &browser,
        "the conversation list",
        "document.querySelectorAll('#conversations button.open').length === 1",
    )
    .await;
    click(&browser, "#conversations button.open").await;
    until(
        &browser,
        "the reopened conversation",
        "[...document.querySelectorAll('#transcript .msg.user')].some(m => m.textContent === 'Please propose a clearer description.') && document.querySelectorAll('#transcript .msg.assistant').length > 0",
    )
    .await;
    until(
        &browser,
        "the conversation's proposal, as it is now",
        &format!(
            "[...document.querySelectorAll('{}')].some(c => c.dataset.proposal === '{proposal}' && c.querySelector('.status').textContent === 'Rejected')",
            testid("proposal-card")
        ),
    )
    .await;

    assert_eq!(unlabelled_controls(&browser).await, json!([]), "chat");

    // The audit view filtered by that proposal shows its records only, the rejection among them.
    click(&browser, "#nav-audit").await;
    assert_eq!(unlabelled_controls(&browser).await, json!([]), "audit");
    let all = until(
        &browser,
        "audit rows",
        &format!(
            "document.querySelectorAll('{}').length",
            testid("audit-row")
        ),
    )
    .await;
    type_into(&browser, "#audit-proposal", &proposal).await;
    click(&browser, "#audit-form button[type=submit]").await;
    let actions = until(
        &browser,
        "the proposal's audit rows",
        &format!(
            "(() => {{ const rows = [...document.querySelectorAll('{}')]; return rows.length < {all} && rows.some(r => r.dataset.action === 'proposal.rejected') ? rows.map(r => r.dataset.action) : null; }})()",
            testid("audit-row")
        ),
    )
    .await;
    for action in actions.as_array().unwrap() {
        assert!(
            action.as_str().unwrap().starts_with("proposal."),
            "{actions}"
        );
    }

    // At 390 px the audit and the inbox fit the width too.
    browser.set_window_size(390, 844).await.unwrap();
    for view in ["audit", "inbox"] {
        click(&browser, &format!("#nav button[data-view={view}]")).await;
        let width = until(&browser, "layout", "[document.documentElement.scrollWidth]").await;
        assert!(width[0].as_u64().unwrap() <= 400, "{view}: {width}");
    }

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// A loopback proxy in front of the server that cuts the first chat response after
/// `body_bytes` bytes of its body, as a dropped connection would.
struct CuttingProxy {
    address: SocketAddr,
    cut: Arc<AtomicBool>,
    resumed: Arc<AtomicUsize>,
}

impl CuttingProxy {
    async fn start(upstream: SocketAddr, body_bytes: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let resumed = Arc::new(AtomicUsize::new(0));
        let (cut_flag, resumed_count) = (cut.clone(), resumed.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (cut, resumed) = (cut_flag.clone(), resumed_count.clone());
                tokio::spawn(async move {
                    let _ = relay(client, upstream, body_bytes, cut, resumed).await;
                });
            }
        });
        Self {
            address,
            cut,
            resumed,
        }
    }
}

/// Relays one connection; once a `POST .../ai/chat` passes and no cut was made yet, the
/// response is ended after `body_bytes` bytes past its headers.
async fn relay(
    mut client: TcpStream,
    upstream: SocketAddr,
    body_bytes: usize,
    cut: Arc<AtomicBool>,
    resumed: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let mut server = TcpStream::connect(upstream).await?;
    let (mut client_read, mut client_write) = client.split();
    let (mut server_read, mut server_write) = server.split();
    let cutting = Arc::new(AtomicBool::new(false));
    let upstream_side = async {
        let mut buffer = vec![0; 16 * 1024];
        loop {
            let n = client_read.read(&mut buffer).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            let request = String::from_utf8_lossy(&buffer[..n]);
            if request.starts_with("POST ")
                && request.contains("/ai/chat ")
                && !cut.swap(true, Ordering::SeqCst)
            {
                cutting.store(true, Ordering::SeqCst);
            }
            if request.starts_with("GET ") && request.contains("/events") {
                resumed.fetch_add(1, Ordering::SeqCst);
            }
            server_write.write_all(&buffer[..n]).await?;
        }
    };
    let downstream_side = async {
        let mut buffer = vec![0; 16 * 1024];
        let mut seen = Vec::new();
        loop {
            let n = server_read.read(&mut buffer).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            if cutting.load(Ordering::SeqCst) {
                seen.extend_from_slice(&buffer[..n]);
                if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n")
                    && seen.len() >= end + 4 + body_bytes
                {
                    let keep = end + 4 + body_bytes - (seen.len() - n);
                    client_write.write_all(&buffer[..keep.min(n)]).await?;
                    // Dropping both sides resets the connection mid-response.
                    return Ok(());
                }
            }
            client_write.write_all(&buffer[..n]).await?;
        }
    };
    tokio::select! {
        result = upstream_side => result,
        result = downstream_side => result,
    }
}

/// A model that reads the order approval and proposes removing `NotifyCustomer` (with its
/// connections) and renaming the approval task.
fn removal_script() -> Script {
    Script::new()
        .tool_call(
            "workflow.getDefinition",
            json!({"definitionId": DEFINITION}),
        )
        .computed(|turn| {
            let version = turn
                .result_of("workflow.getDefinition")
                .and_then(|r| r.content["version"].as_i64())
                .unwrap_or(1);
            ScriptStep::tool_call(
                "workflow.proposeUpdate",
                json!({
                    "definitionId": DEFINITION,
                    "baselineVersion": version,
                    "operations": [
                        {"op": "removeActivity", "activityId": "NotifyCustomer"},
                        {"op": "setInput", "activityId": "RequestApproval", "input": "taskName", "value": "Manager approval"}
                    ],
                    "rationale": "Customers are told by the shop, not by this workflow."
                }),
            )
        })
        .reply("I proposed removing the e-mail and renaming the task.")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diff_draws_removed_and_changed_activities_and_inputs_side_by_side() {
    let server = TestServer::start_with(
        Weaver::builder(config()).provider(Arc::new(ScriptedProvider::new(removal_script()))),
    )
    .await;
    server.enable_tool(ADMIN, "workflow.proposeUpdate").await;
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    sign_in(&browser, &base, ADMIN).await;
    chat(&browser, "Drop the customer e-mail.").await;
    click(&browser, &format!("{} button", testid("proposal-card"))).await;
    let graph = testid("diff-graph");
    until(
        &browser,
        "the removed activity",
        &format!("document.querySelector('{graph} [data-status=removed][data-activity=\"NotifyCustomer\"]')"),
    )
    .await;
    // Each status is marked without colour too: a sign before the name, and a title.
    let marks = browser
        .execute(
            &format!(
                "const text = id => document.querySelector(`{graph} g[data-activity=\"${{id}}\"] text`).textContent; \
                 return [text('NotifyCustomer'), text('RequestApproval'), text('ReceiveOrder'), \
                 document.querySelector('{graph}').getAttribute('aria-label')];"
            ),
            Vec::new(),
        )
        .await
        .unwrap();
    let marks = marks.as_array().unwrap();
    assert!(marks[0].as_str().unwrap().starts_with('−'), "{marks:?}");
    assert!(marks[1].as_str().unwrap().starts_with('~'), "{marks:?}");
    assert_eq!(marks[2], "ReceiveOrder", "unchanged: no mark");
    let label = marks[3].as_str().unwrap();
    assert!(
        label.contains("removed") && label.contains("changed"),
        "{label}"
    );
    let removed = browser
        .execute(
            &format!("return [...document.querySelectorAll('{graph} [data-status=removed]:is(line, path)')].map(e => e.tagName + ' ' + e.dataset.source + '>' + e.dataset.target).sort();"),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        removed,
        json!([
            "line RequestApproval>NotifyCustomer",
            "path CheckAmount>NotifyCustomer"
        ]),
        "the removed activity's connections are drawn back, as removed"
    );
    // No straight connection runs behind an activity it does not join (it would read as
    // a connection to that activity); those detour below.
    let hidden = browser
        .execute(
            &format!("const g = document.querySelector('{graph}'); \
             const rects = [...g.querySelectorAll('g[data-activity] rect')].map(r => ['x', 'y', 'width', 'height'].map(k => +r.getAttribute(k))); \
             return [...g.querySelectorAll('line')].filter(l => {{ const [x1, y1, x2, y2] = ['x1', 'y1', 'x2', 'y2'].map(k => +l.getAttribute(k)); \
               return rects.some(([x, y, w, h]) => x > Math.min(x1, x2) && x + w < Math.max(x1, x2) && Math.min(y1, y2) <= y + h && Math.max(y1, y2) >= y); }}) \
             .map(l => l.dataset.source + '>' + l.dataset.target);"),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(hidden, json!([]), "connections drawn behind activities");
    assert_eq!(
        count(&browser, &format!("{graph} [data-status=added]")).await,
        0
    );
    // The changed input, before and after, side by side.
    let row = until(
        &browser,
        "the changed input",
        "[...document.querySelectorAll('#proposal table tr')].map(r => [...r.cells].map(c => c.textContent)).find(cells => cells[0].includes('taskName'))",
    )
    .await;
    assert_eq!(row[0], "RequestApproval · taskName", "{row}");
    assert!(
        row[2].as_str().unwrap().contains("Manager approval"),
        "{row}"
    );
    assert_ne!(row[1], row[2], "{row}");
    screenshot(&browser, "proposal-diff-removal").await;

    // At 390 px the proposal, graph and inputs included, still fits the width.
    browser.set_window_size(390, 844).await.unwrap();
    let overflow = until(
        &browser,
        "layout",
        "[document.documentElement.scrollWidth, document.querySelector('#proposal').scrollWidth]",
    )
    .await;
    assert!(overflow[0].as_u64().unwrap() <= 400, "page {overflow}");
    screenshot(&browser, "proposal-390px").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// A model that proposes each of `drafts` as a new workflow (`workflow.proposeCreate`).
fn proposing(drafts: impl IntoIterator<Item = Value>) -> Script {
    drafts
        .into_iter()
        .fold(Script::new(), |script, draft| {
            script.tool_call(
                "workflow.proposeCreate",
                json!({"draft": draft, "rationale": "A workflow for the console to draw."}),
            )
        })
        .reply("I proposed them.")
}

/// The draft of a new workflow `id`: `length` activities writing a line, one after another,
/// each with a name too long for its box.
fn chain_draft(id: &str, length: usize) -> Value {
    let step = |n: usize| format!("Step{n}");
    let activities: Vec<Value> = (1..=length)
        .map(|n| {
            json!({"id": step(n), "type": "Elsa.WriteLine",
                   "name": format!("Write line {n} of {length} to the console"),
                   "inputs": {"Text": {"value": format!("Step {n} of {length}")}}})
        })
        .collect();
    let connections: Vec<Value> = (1..length)
        .map(|n| json!({"source": step(n), "target": step(n + 1)}))
        .collect();
    json!({"definitionId": id, "name": id, "activities": activities, "connections": connections})
}

/// Opens the proposal for the new workflow `definition` from its card in the transcript, and
/// waits for its graph.
async fn review_proposal_of(browser: &Client, definition: &str) {
    until(
        browser,
        "the proposal's card",
        &format!(
            "(() => {{ const card = [...document.querySelectorAll('{}')].find(c => c.querySelector('strong').textContent === 'Proposal for {definition}'); card?.querySelector('button').click(); return !!card; }})()",
            testid("proposal-card")
        ),
    )
    .await;
    until(
        browser,
        "its graph",
        &format!(
            "document.querySelector('#proposal h3 + p')?.textContent.startsWith('Create of {definition},') && document.querySelector('#proposal {}')",
            testid("diff-graph")
        ),
    )
    .await;
}

/// The width on the page, in CSS pixels, of each activity drawn in the open proposal's graph.
async fn activity_widths(browser: &Client) -> Vec<f64> {
    let widths = browser
        .execute(
            &format!(
                "return [...document.querySelectorAll('#proposal {} g[data-activity] rect')].map(r => r.getBoundingClientRect().width);",
                testid("diff-graph")
            ),
            Vec::new(),
        )
        .await
        .expect("the probe runs");
    serde_json::from_value(widths).expect("widths")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activities_are_drawn_at_one_size_whatever_the_size_of_the_workflow() {
    let script = proposing([chain_draft("one-step", 1), chain_draft("twelve-steps", 12)]);
    let server = TestServer::start_with(
        Weaver::builder(config()).provider(Arc::new(ScriptedProvider::new(script))),
    )
    .await;
    server.enable_tool(ADMIN, "workflow.proposeCreate").await;
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    sign_in(&browser, &base, ADMIN).await;
    chat(&browser, "Propose a short workflow and a long one.").await;
    review_proposal_of(&browser, "one-step").await;
    let one = activity_widths(&browser).await;
    browser
        .execute(
            "document.getElementById('proposal').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "proposal-one-activity").await;
    review_proposal_of(&browser, "twelve-steps").await;
    let twelve = activity_widths(&browser).await;
    eprintln!("activity widths in px: one activity {one:?}, twelve activities {twelve:?}");
    assert_eq!((one.len(), twelve.len()), (1, 12));
    assert!(one[0] <= 300.0, "one activity drawn {} px wide", one[0]);
    for width in &twelve {
        assert!((width - one[0]).abs() <= 3.0, "{one:?} and {twelve:?}");
    }
    // Names too long for their box are cut short with an ellipsis, within the box.
    let names = browser
        .execute(
            &format!(
                "const activities = [...document.querySelectorAll('#proposal {} g[data-activity]')]; \
                 return [activities.filter(g => {{ const box = g.querySelector('rect').getBoundingClientRect(); \
                   return [...g.querySelectorAll('text')].some(t => t.getBoundingClientRect().right > box.right); }}).map(g => g.dataset.activity), \
                 activities[0].querySelector('text').textContent];",
                testid("diff-graph")
            ),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(names[0], json!([]), "names drawn beyond their box");
    let name = names[1].as_str().unwrap();
    assert!(
        name.starts_with("+ Write line") && name.ends_with('…'),
        "{name}"
    );
    // The long workflow scrolls within its region; the page keeps its width.
    let scrolls = browser
        .execute(
            "const region = document.querySelector('#proposal .graph-scroll'); \
             return [region.scrollWidth > region.clientWidth, document.documentElement.scrollWidth <= innerWidth];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(scrolls, json!([true, true]));
    browser
        .execute(
            "document.getElementById('proposal').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "proposal-twelve-activities").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_filter_offers_every_status_of_the_api_and_blocked_lists_a_blocked_proposal() {
    // A draft with an activity type no catalog has: its proposal is stored Blocked.
    let blocked = json!({"definitionId": "mystery-workflow", "name": "Mystery",
                         "activities": [{"id": "Mystery1", "type": "Acme.NoSuchActivity"}]});
    let server = TestServer::start_with(
        Weaver::builder(config()).provider(Arc::new(ScriptedProvider::new(proposing([blocked])))),
    )
    .await;
    server.enable_tool(ADMIN, "workflow.proposeCreate").await;
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    // The statuses the API has, in its order: the values `GET /ai/proposals?status=` takes.
    let (status, document) = server.get("/ai/openapi.json", ADMIN).await;
    assert_eq!(status, StatusCode::OK);
    let statuses = document["paths"]["/ai/proposals"]["get"]["parameters"]
        .as_array()
        .expect("the parameters of GET /ai/proposals")
        .iter()
        .find(|parameter| parameter["name"] == "status")
        .and_then(|parameter| parameter["schema"]["enum"].as_array())
        .expect("the status parameter's enum")
        .clone();
    assert!(statuses.contains(&json!("Blocked")), "{statuses:?}");

    sign_in(&browser, &base, ADMIN).await;
    chat(&browser, "Propose a workflow with an activity you invent.").await;
    click(&browser, "#nav button[data-view=inbox]").await;
    let options = browser
        .execute(
            "return [...document.querySelectorAll('#inbox-status option')].map(o => [o.value, o.textContent]);",
            Vec::new(),
        )
        .await
        .unwrap();
    let expected: Vec<Value> = std::iter::once(json!(["", "Any"]))
        .chain(statuses.iter().map(|status| json!([status, status])))
        .collect();
    assert_eq!(options, Value::Array(expected), "the filter's options");
    let selected = browser
        .execute(
            "return document.getElementById('inbox-status').value;",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(selected, "Validated", "the default filter");

    // Validated lists nothing; Blocked lists the blocked proposal.
    until(
        &browser,
        "no validated proposal",
        "document.querySelector('#inbox tbody .hint')?.textContent === 'No proposals.'",
    )
    .await;
    browser.execute("document.getElementById('inbox-status').value='Blocked'; document.getElementById('inbox-status').dispatchEvent(new Event('change'));", Vec::new()).await.unwrap();
    let row = until(
        &browser,
        "the blocked row",
        &format!(
            "(() => {{ const rows = [...document.querySelectorAll('{}')]; return rows.length === 1 ? [...rows[0].cells].slice(0, 3).map(c => c.textContent) : null; }})()",
            testid("proposal-row")
        ),
    )
    .await;
    assert_eq!(row, json!(["mystery-workflow", "Create", "Blocked"]));
    screenshot(&browser, "inbox-blocked").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_cards_show_name_status_duration_and_redacted_arguments() {
    let script = Script::new()
        .tool_call(
            "workflow.getDefinition",
            json!({"definitionId": format!("Password=hunter2;{ADMIN}")}),
        )
        .tool_call(
            "workflow.getDefinition",
            json!({"definitionId": DEFINITION}),
        )
        .reply("One read failed, one worked.");
    let server = TestServer::start_with(
        Weaver::builder(config()).provider(Arc::new(ScriptedProvider::new(script))),
    )
    .await;
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    sign_in(&browser, &base, ADMIN).await;
    chat(&browser, "Read it twice.").await;
    let cards = until(
        &browser,
        "two finished tool cards",
        &format!(
            "(() => {{ const cards = [...document.querySelectorAll('{}')]; return cards.length === 2 && cards.every(c => c.querySelector('[data-status]').dataset.status !== 'running') ? cards.map(c => [c.dataset.tool, c.querySelector('[data-status]').dataset.status, c.textContent, c.querySelector('pre')?.textContent ?? null]) : null; }})()",
            testid("tool-card")
        ),
    )
    .await;
    let cards = cards.as_array().unwrap();
    let duration = |text: &str| {
        text.split(" · ")
            .nth(1)
            .and_then(|rest| rest.split(" s").next())
            .and_then(|n| n.parse::<f64>().ok())
    };
    for (card, status) in cards.iter().zip(["failed", "completed"]) {
        assert_eq!(card[0], "workflow.getDefinition", "{card}");
        assert_eq!(card[1], status, "{card}");
        let text = card[2].as_str().unwrap();
        assert!(duration(text).is_some(), "a duration in {text}");
        assert!(card[3].as_str().unwrap().contains("definitionId"), "{card}");
    }
    // The stream carries the arguments redacted (a password pattern and the configured key).
    assert_eq!(
        serde_json::from_str::<Value>(cards[0][3].as_str().unwrap()).unwrap(),
        json!({"definitionId": "Password=[REDACTED];[REDACTED]"})
    );
    let page = browser.source().await.unwrap();
    assert!(!page.contains("hunter2"), "a secret reached the page");
    assert!(!page.contains(ADMIN), "the API key reached the page");

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_signs_in_for_the_tab_and_a_wrong_key_is_refused() {
    const SECRET: &str = "a-console-hs256-secret-of-32-bytes-or-more";
    let mut config = config();
    config.auth.jwt = Some(JwtConfig {
        algorithm: JwtAlgorithmConfig::Hs256,
        secret_env: Some("CONSOLE_JWT_SECRET".into()),
        public_key_path: None,
        public_key_env: None,
        issuer: None,
        audience: None,
        actor_claim: Some("email".into()),
        tenant_claim: Some("org".into()),
        permissions_claim: Some("scope".into()),
        leeway_secs: None,
        tenant: None,
        required_claims: Default::default(),
    });
    let server = TestServer::start_with(
        Weaver::builder(config)
            .env(|name| (name == "CONSOLE_JWT_SECRET").then(|| SECRET.to_owned())),
    )
    .await;
    let token = encode(
        &Header::new(Algorithm::HS256),
        &json!({"email": "carol@acme.example", "org": "acme",
                "scope": "read:workflows propose:workflows",
                "exp": get_current_timestamp() + 300}),
        &EncodingKey::from_secret(SECRET.as_bytes()).unwrap(),
    )
    .unwrap();
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    // A wrong key: refused with a sentence, nothing kept, nothing behind the sign-in shown.
    browser.goto(&format!("{base}/console/")).await.unwrap();
    type_into(&browser, &testid("api-key"), "not-a-key-of-this-server").await;
    click(&browser, &testid("sign-in")).await;
    let refusal = until(
        &browser,
        "the refusal",
        "document.getElementById('signin-error').textContent",
    )
    .await;
    assert_eq!(refusal, "The key or token was not accepted.");
    let kept = browser
        .execute(
            "return [sessionStorage.length, localStorage.length, document.getElementById('nav').hidden];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(kept, json!([0, 0, true]));

    // The token: sent as Bearer, it names the caller; kept in this tab's sessionStorage only,
    // so a reload stays signed in and nothing reaches localStorage.
    sign_in(&browser, &base, &token).await;
    assert_eq!(text_of(&browser, "#who").await, "carol@acme.example · acme");
    assert!(
        !browser
            .find(Locator::Id("nav-audit"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap(),
        "no Audit without admin:ai"
    );
    browser.refresh().await.unwrap();
    until(
        &browser,
        "the session after a reload",
        "document.getElementById('who').textContent === 'carol@acme.example · acme'",
    )
    .await;
    let kept = browser
        .execute(
            "return [Object.values(sessionStorage), localStorage.length];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(kept, json!([[token], 0]));

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// [`until`] while the tab goes from page to page (to the OpenID Provider and back): a probe
/// that fails because its page is being replaced is tried again on the next one.
async fn until_across_pages(browser: &Client, what: &str, probe: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(value) = browser
            .execute(&format!("return ({probe});"), Vec::new())
            .await
            && !(value.is_null() || value == false || value == 0 || value == "")
        {
            return value;
        }
        if Instant::now() > deadline {
            let url = browser.current_url().await.map(String::from);
            let page = browser.source().await.unwrap_or_default();
            panic!(
                "timed out waiting for {what} at {url:?}; page:\n{}",
                &page[..page.len().min(4000)]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_through_an_openid_provider_and_is_offered_what_their_permissions_allow()
{
    const RESOURCE: &str = "urn:weaver:api";
    let started = Instant::now();
    // Weaver needs the provider's issuer and the provider weaver's console address: the
    // provider's port is chosen first, and the provider started once weaver listens (weaver
    // retries a provider that was down at its start every second here).
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let mut config = config();
    let oidc = WeaverConfig::from_toml(&format!(
        "[[auth.oidc]]\nissuer = \"{issuer}\"\naudience = \"{RESOURCE}\"\n\
         tenant_claim = \"tenant\"\nconsole_client_id = \"weaver-console\"\n\
         name = \"Test ID\"\njwks_refetch_secs = 1\n"
    ))
    .expect("the [[auth.oidc]] settings parse");
    config.auth.oidc = oidc.auth.oidc;
    let server = TestServer::start(config).await;
    server.enable_tool(ADMIN, "workflow.proposeUpdate").await;
    let base = server.url("");
    let console = format!("{base}/console/");
    let mut client = OidcProviderConfig::public_client("weaver-console", &[&console]);
    client["post_logout_redirect_uris"] = json!([console]);
    let _provider = OidcProvider::start_on(
        port,
        &OidcProviderConfig {
            resource: RESOURCE.into(),
            access_token_ttl_secs: 300,
            clients: vec![client],
            accounts: json!({"alice": {"claims": {"tenant": "acme", "permissions": "read:workflows propose:workflows"}}}),
        },
        &["k1"],
        None,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed: Value = server
            .client
            .get(server.url("/ai/auth/providers"))
            .send()
            .await
            .expect("weaver answers")
            .json()
            .await
            .expect("a JSON list");
        if listed["providers"][0]["clientId"] == "weaver-console" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the provider was never listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    // The sign-in page offers the provider; its button leads to the provider's sign-in form.
    browser.goto(&console).await.unwrap();
    let label = until(
        &browser,
        "the provider's button",
        &format!(
            "document.querySelector('{}')?.textContent",
            testid("oidc-sign-in")
        ),
    )
    .await;
    assert_eq!(label, "Sign in with Test ID");
    screenshot(&browser, "oidc-sign-in-button").await;
    let signing_in = Instant::now();
    click(&browser, &testid("oidc-sign-in")).await;
    until_across_pages(
        &browser,
        "the provider's sign-in form",
        "document.querySelector('input[name=login]')",
    )
    .await;
    assert!(
        browser
            .current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with(&format!("{issuer}/interaction/"))
    );
    type_into(&browser, "input[name=login]", "alice").await;
    type_into(&browser, "input[name=password]", "anything").await;
    screenshot(&browser, "oidc-provider-sign-in").await;
    click(&browser, "button[type=submit].login-submit").await;
    until_across_pages(
        &browser,
        "the consent form",
        "document.querySelector('input[name=prompt][value=consent]')",
    )
    .await;
    click(&browser, "button[type=submit].login-submit").await;

    // Back on the console, signed in as the provider's user; the code is gone from the
    // address, the token kept in this tab's sessionStorage only.
    until_across_pages(
        &browser,
        "the console signed in",
        "document.getElementById('who')?.textContent === 'alice · acme'",
    )
    .await;
    let signed_in_after = signing_in.elapsed();
    assert_eq!(browser.current_url().await.unwrap().as_str(), console);
    let kept = browser
        .execute(
            "const oidc = JSON.parse(sessionStorage.getItem('weaver.console.oidc')); \
             return [Object.keys(sessionStorage).sort(), localStorage.length, document.cookie, \
                     location.search, oidc.clientId, !!oidc.refreshToken, !!oidc.idToken];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        kept,
        json!([
            ["weaver.console.credential", "weaver.console.oidc"],
            0,
            "",
            "",
            "weaver-console",
            true,
            true
        ])
    );
    let token = browser
        .execute(
            "return sessionStorage.getItem('weaver.console.credential');",
            Vec::new(),
        )
        .await
        .unwrap();
    let token = token.as_str().expect("the access token");
    assert_eq!(token.split('.').count(), 3, "a JWT access token");
    let me: Value = server
        .client
        .get(server.url("/ai/me"))
        .bearer_auth(token)
        .send()
        .await
        .expect("weaver answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        (&me["actor"], &me["tenant"], &me["permissions"]),
        (
            &json!("alice"),
            &json!("acme"),
            &json!(["propose:workflows", "read:workflows"])
        ),
        "{me}"
    );

    // Chat: a whole turn, with a proposal, as this user.
    attach_definition(&browser).await;
    chat(&browser, "Please propose a clearer description.").await;
    until(
        &browser,
        "the proposal card",
        &format!("document.querySelector('{}')", testid("proposal-card")),
    )
    .await;
    assert!(
        !text_of(&browser, &testid("assistant-text"))
            .await
            .is_empty()
    );
    screenshot(&browser, "oidc-sign-in").await;

    // What the token's permissions allow: no Audit without admin:ai, and the proposal opens
    // without a review action without apply:workflows.
    assert!(
        !browser
            .find(Locator::Id("nav-audit"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap(),
        "no Audit without admin:ai"
    );
    click(&browser, &format!("{} button", testid("proposal-card"))).await;
    until(
        &browser,
        "the proposal",
        "document.querySelector('#proposal [data-testid=diff-graph]')",
    )
    .await;
    for action in ["approve", "reject", "reject-reason", "apply"] {
        assert_eq!(
            count(&browser, &testid(action)).await,
            0,
            "{action} offered without apply:workflows"
        );
    }

    // Signing out forgets the tokens and ends the provider's session: confirmed there, the
    // provider sends the tab back to the console's sign-in, and its button asks for the
    // sign-in form again.
    click(&browser, &testid("sign-out")).await;
    until_across_pages(
        &browser,
        "the provider's sign-out confirmation",
        "document.querySelector('button[name=logout][value=yes]')",
    )
    .await;
    assert!(
        browser
            .current_url()
            .await
            .unwrap()
            .as_str()
            .starts_with(&format!("{issuer}/session/end")),
        "the provider's end-session endpoint"
    );
    click(&browser, "button[name=logout][value=yes]").await;
    until_across_pages(
        &browser,
        "the console's sign-in view",
        &format!(
            "location.href === '{console}' && !document.getElementById('view-signin').hidden && document.querySelector('{}')",
            testid("oidc-sign-in")
        ),
    )
    .await;
    let kept = browser
        .execute(
            "return [sessionStorage.getItem('weaver.console.credential'), sessionStorage.length, \
                     localStorage.length, document.getElementById('who').textContent, \
                     document.getElementById('nav').hidden];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(kept, json!([null, 0, 0, "", true]));
    click(&browser, &testid("oidc-sign-in")).await;
    until_across_pages(
        &browser,
        "the provider's sign-in form again",
        "document.querySelector('input[name=login]')",
    )
    .await;
    eprintln!(
        "OIDC console flow: signed in {signed_in_after:?} after the click, {:?} in all",
        started.elapsed()
    );

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_turn_resumes_without_duplicates() {
    let server = TestServer::start(config()).await;
    let upstream: SocketAddr = server
        .url("")
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let proxy = CuttingProxy::start(upstream, 700).await;
    let base = format!("http://{}", proxy.address);
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;

    sign_in(&browser, &base, ADMIN).await;
    attach_definition(&browser).await;
    chat(&browser, "What does this workflow do?").await;
    assert!(
        proxy.cut.load(Ordering::SeqCst),
        "the chat response was cut"
    );
    assert!(
        proxy.resumed.load(Ordering::SeqCst) >= 1,
        "the console resumed with Last-Event-ID"
    );
    assert_eq!(
        count(&browser, &testid("tool-card")).await,
        1,
        "one tool call, shown once"
    );
    assert_eq!(count(&browser, &testid("assistant-text")).await, 1);
    let text = text_of(&browser, &testid("assistant-text")).await;
    let (status, conversations) = server.get("/ai/conversations", ADMIN).await;
    assert_eq!(status.as_u16(), 200);
    let id = conversations["items"][0]["id"].as_str().unwrap();
    let (_, conversation) = server.get(&format!("/ai/conversations/{id}"), ADMIN).await;
    let messages = conversation["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["User", "Tool", "Assistant"],
        "the tool call is stored too"
    );
    let reply = messages[2]["content"].as_str().unwrap();
    assert_eq!(
        text, reply,
        "the streamed answer equals the stored one: no part twice"
    );
    assert_eq!(count(&browser, ".msg.failed").await, 0);

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_a_turn_whose_model_is_still_answering() {
    let model = ScriptedModelServer::start([ModelReply::Stall("Thinking about it…".into())])
        .await
        .unwrap();
    let provider = format!(
        "kind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted\"",
        model.base_url()
    );
    let server =
        TestServer::start_with(Weaver::builder(config_with(&provider)).env(|_| None)).await;
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;
    sign_in(&browser, &server.url(""), ADMIN).await;
    type_into(&browser, &testid("message"), "Think slowly.").await;
    click(&browser, &testid("send")).await;
    until(
        &browser,
        "the first words",
        "document.querySelector('[data-testid=assistant-text]')?.textContent.includes('Thinking')",
    )
    .await;
    assert!(
        browser
            .find(Locator::Css(&testid("cancel")))
            .await
            .unwrap()
            .is_enabled()
            .await
            .unwrap()
    );
    click(&browser, &testid("cancel")).await;
    until(
        &browser,
        "the cancelled turn",
        "document.querySelector('.msg.failed[data-code=cancelled]')",
    )
    .await;
    until(
        &browser,
        "Send again",
        "!document.querySelector('[data-testid=send]').disabled",
    )
    .await;
    for _ in 0..100 {
        if model.open_streams() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(model.open_streams(), 0, "the model's stream was closed");
    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_deletes_a_conversation_from_the_history_after_confirming() {
    let script = Script::new().reply("Noted.");
    let server = TestServer::start_with(
        Weaver::builder(config()).provider(Arc::new(ScriptedProvider::new(script))),
    )
    .await;
    let base = server.url("");
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;
    sign_in(&browser, &base, ADMIN).await;
    chat(&browser, "My card number is in here by mistake.").await;
    until(
        &browser,
        "the conversation in the history",
        "document.querySelectorAll('#conversations li.conversation').length === 1",
    )
    .await;
    let id = until(
        &browser,
        "its id",
        "document.querySelector('#conversations li.conversation').dataset.conversationId",
    )
    .await;
    let id = id.as_str().unwrap().to_owned();

    // The delete control asks first; keeping it changes nothing.
    click(&browser, "#conversations button.delete").await;
    let question = until(
        &browser,
        "the confirmation",
        "document.querySelector('#conversations .confirm')?.textContent",
    )
    .await;
    assert!(
        question.as_str().unwrap().contains("for good"),
        "{question}"
    );
    screenshot(&browser, "conversation-delete-confirmation").await;
    assert_eq!(unlabelled_controls(&browser).await, json!([]));
    click(
        &browser,
        "#conversations li.conversation button:not(.danger)",
    )
    .await;
    until(
        &browser,
        "the conversation kept",
        "document.querySelectorAll('#conversations button.open').length === 1",
    )
    .await;
    let (status, _) = server.get(&format!("/ai/conversations/{id}"), ADMIN).await;
    assert_eq!(status, reqwest::StatusCode::OK);

    // Confirmed: gone from the list and from the server, the open transcript cleared.
    click(&browser, "#conversations button.delete").await;
    click(&browser, "#conversations button.danger").await;
    until(
        &browser,
        "the conversation gone from the history",
        "document.querySelectorAll('#conversations li').length === 0 && document.getElementById('transcript').children.length === 0",
    )
    .await;
    let (status, _) = server.get(&format!("/ai/conversations/{id}"), ADMIN).await;
    assert_eq!(status, reqwest::StatusCode::NOT_FOUND);
    let (_, audit) = server.get("/ai/audit?limit=100", ADMIN).await;
    assert!(
        audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["action"] == "conversation.deleted" && r["conversationId"] == id.as_str()),
        "{audit}"
    );

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// The sample faulted run (the inventory sync whose `FetchStock` failed) as instance `id`,
/// in `status`/`sub_status`.
fn inventory_sync_run(id: &str, status: &str, sub_status: &str) -> WorkflowInstance {
    let mut run: Value = serde_json::from_str(include_str!(
        "../../../elsa-workflows/samples/instances/inventory-sync.faulted.json"
    ))
    .expect("the sample instance");
    run["id"] = json!(id);
    run["status"] = json!(status);
    run["subStatus"] = json!(sub_status);
    WorkflowInstance::from_value(run).expect("an instance")
}

/// The state of instance `id` in acme's workflow data, as `status/subStatus`.
async fn instance_state(server: &TestServer, id: &str) -> String {
    let found = WorkflowInstanceStore::find(server.workflows.as_ref(), &TenantId::new("acme"), id)
        .await
        .expect("the store answers")
        .expect("the instance exists");
    format!(
        "{}/{}",
        found.status().as_str(),
        found.sub_status().as_str()
    )
}

/// The open proposal's target rows: id, workflow, state when proposed, state now (its first
/// line), whether marked stale, and the outcome (null without that column).
async fn target_rows(browser: &Client) -> Value {
    browser
        .execute(
            "return [...document.querySelectorAll('#proposal [data-testid=target-row]')].map(r => { \
               const cell = c => r.querySelector(`td[data-col=${c}] > div`); \
               return [cell('id').textContent, cell('workflow').textContent, cell('proposed').textContent, \
                       cell('current').firstChild.textContent, r.dataset.stale === 'true', \
                       cell('outcome')?.textContent ?? null]; });",
            Vec::new(),
        )
        .await
        .expect("the probe runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_drops_a_target_of_a_retry_then_approves_and_applies_it_in_the_console() {
    const FIRST: &str = "7f3a9c1e5b2d0001";
    const SECOND: &str = "7f3a9c1e5b2d0002";
    let server = TestServer::start(config()).await;
    server.enable_tool(ADMIN, "instance.proposeRetry").await;
    let acme = TenantId::new("acme");
    for id in [FIRST, SECOND] {
        server
            .workflows
            .insert_instance(&acme, inventory_sync_run(id, "Finished", "Faulted"));
    }

    // The operator agent proposes retrying both faulted runs, through weaver's own /mcp.
    let agent = weaver_client(&server.url("/mcp?agent=workflow-operator"), ADMIN).await;
    let proposed = call_tool(
        &agent,
        "instance.proposeRetry",
        json!({"instanceIds": [FIRST, SECOND],
               "rationale": "The inventory host resolves again; both syncs can run."}),
    )
    .await;
    assert_eq!(proposed.is_error, Some(false), "{proposed:?}");
    agent.cancel().await.unwrap();
    let (_, inbox) = server.get("/ai/proposals?status=Validated", ADMIN).await;
    let summary = &inbox["items"][0];
    assert_eq!(
        (&summary["kind"], &summary["targetCount"]),
        (&json!("Retry"), &json!(2)),
        "{inbox}"
    );
    let proposal = summary["id"].as_str().unwrap().to_owned();

    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;
    sign_in(&browser, &server.url(""), ADMIN).await;
    click(&browser, "#nav button[data-view=inbox]").await;
    // The inbox row names the kind and how many targets it has.
    let row = until(
        &browser,
        "the retry row",
        &format!(
            "(() => {{ const rows = [...document.querySelectorAll('{}')]; return rows.length === 1 ? [...rows[0].cells].slice(0, 3).map(c => c.textContent) : null; }})()",
            testid("proposal-row")
        ),
    )
    .await;
    assert_eq!(
        row,
        json!(["sample-inventory-sync", "Retry · 2 targets", "Validated"])
    );
    until(
        &browser,
        "the retry row opened",
        &format!(
            "(() => {{ const r = document.querySelector('{}[data-kind=Retry]'); if (r) r.click(); return !!r; }})()",
            testid("proposal-row")
        ),
    )
    .await;

    // The proposal: what applying does, in words, and its two targets as proposed; no graph.
    let description = until(
        &browser,
        "the operation",
        "document.querySelector('#proposal [data-testid=operation-description]')?.textContent",
    )
    .await;
    let description = description.as_str().unwrap();
    assert!(
        description.starts_with("Retry 2 workflow instances: each faulted instance runs again"),
        "{description}"
    );
    assert!(description.contains("skipped"), "{description}");
    assert_eq!(
        count(&browser, &format!("#proposal {}", testid("diff-graph"))).await,
        0
    );
    assert_eq!(count(&browser, "#proposal .graph-scroll").await, 0);
    let workflow = "sample-inventory-sync v1";
    assert_eq!(
        target_rows(&browser).await,
        json!([
            [
                FIRST,
                workflow,
                "Finished/Faulted",
                "Finished/Faulted",
                false,
                null
            ],
            [
                SECOND,
                workflow,
                "Finished/Faulted",
                "Finished/Faulted",
                false,
                null
            ]
        ])
    );
    assert_eq!(
        text_of(&browser, "#proposal p").await,
        "Retry of 2 workflow instances, requested by alice"
    );
    assert_eq!(unlabelled_controls(&browser).await, json!([]));

    // Someone retries the second run meanwhile: reopened, its row is marked as changed and
    // to be skipped.
    server
        .workflows
        .insert_instance(&acme, inventory_sync_run(SECOND, "Running", "Executing"));
    click(
        &browser,
        &format!("{}[data-id=\"{proposal}\"]", testid("proposal-row")),
    )
    .await;
    until(
        &browser,
        "the changed target",
        &format!("document.querySelector('#proposal [data-testid=target-row][data-target=\"{SECOND}\"][data-stale=true]')"),
    )
    .await;
    assert_eq!(
        target_rows(&browser).await,
        json!([
            [
                FIRST,
                workflow,
                "Finished/Faulted",
                "Finished/Faulted",
                false,
                null
            ],
            [
                SECOND,
                workflow,
                "Finished/Faulted",
                "Running/Executing",
                true,
                null
            ]
        ])
    );
    let note = text_of(&browser, "#proposal tr.stale .stale-note").await;
    assert_eq!(note, "Changed since proposed: will be skipped as stale");

    // Dropping it: select its row, then Drop selected. Selecting every target is refused.
    let dropping = |id: &str| format!("#proposal {}[value=\"{id}\"]", testid("drop-target"));
    let disabled = |browser: &Client| {
        let browser = browser.clone();
        async move {
            browser
                .execute(
                    "return document.querySelector('[data-testid=drop-targets]').disabled;",
                    Vec::new(),
                )
                .await
                .unwrap()
        }
    };
    assert_eq!(disabled(&browser).await, true, "nothing selected");
    click(&browser, &dropping(FIRST)).await;
    click(&browser, &dropping(SECOND)).await;
    assert_eq!(disabled(&browser).await, true, "every target selected");
    click(&browser, &dropping(FIRST)).await;
    assert_eq!(disabled(&browser).await, false);
    browser
        .execute(
            "document.getElementById('proposal').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "retry-proposal").await;
    click(&browser, &testid("drop-targets")).await;
    until(
        &browser,
        "one target left",
        &format!(
            "document.querySelectorAll('#proposal {}').length === 1",
            testid("target-row")
        ),
    )
    .await;
    let (_, stored) = server
        .get(&format!("/ai/proposals/{proposal}"), ADMIN)
        .await;
    let targets: Vec<&Value> = stored["operation"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(targets, [&json!(FIRST)], "{stored}");
    assert_eq!(
        count(&browser, &testid("drop-target")).await,
        0,
        "one target cannot be dropped"
    );

    // Approved and applied: the outcome column says Done, and the run is running again.
    click(&browser, &testid("approve")).await;
    until(&browser, "Approved", "document.querySelector('#proposal [data-testid=proposal-status]').textContent === 'Approved'").await;
    click(&browser, &testid("apply")).await;
    until(&browser, "Applied", "document.querySelector('#proposal [data-testid=proposal-status]').textContent === 'Applied'").await;
    let outcome = until(
        &browser,
        "the outcome",
        &format!(
            "document.querySelector('#proposal {}[data-result]')?.dataset.result",
            testid("target-outcome")
        ),
    )
    .await;
    assert_eq!(outcome, "Done");
    let rows = target_rows(&browser).await;
    assert_eq!(rows[0][0], FIRST, "{rows}");
    assert_eq!(rows[0][2], "Finished/Faulted", "{rows}");
    assert_eq!(
        rows[0][4], false,
        "an applied target is not marked stale: {rows}"
    );
    assert_eq!(rows[0][5], "Done", "{rows}");
    assert_eq!(
        count(&browser, &format!("#proposal {}", testid("apply"))).await,
        0
    );
    assert_eq!(instance_state(&server, FIRST).await, "Running/Executing");
    screenshot(&browser, "retry-proposal-applied").await;

    // At 390 px the operation, its targets one labelled block each, still fits the width.
    browser.set_window_size(390, 844).await.unwrap();
    let overflow = until(
        &browser,
        "layout",
        "[document.documentElement.scrollWidth, document.querySelector('#proposal').scrollWidth, getComputedStyle(document.querySelector('#proposal [data-testid=target-row]')).display]",
    )
    .await;
    assert!(overflow[0].as_u64().unwrap() <= 400, "page {overflow}");
    assert_eq!(overflow[2], "block", "{overflow}");
    browser
        .execute(
            "document.querySelector('#proposal [data-testid=targets]').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "retry-proposal-390px").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_proposal_says_prominently_what_the_deletion_loses() {
    let server = TestServer::start(config()).await;
    server.enable_tool(ADMIN, "workflow.proposeDelete").await;
    let agent = weaver_client(&server.url("/mcp?agent=workflow-operator"), ADMIN).await;
    let proposed = call_tool(
        &agent,
        "workflow.proposeDelete",
        json!({"definitionId": DEFINITION, "rationale": "The shop no longer takes orders."}),
    )
    .await;
    assert_eq!(proposed.is_error, Some(false), "{proposed:?}");
    agent.cancel().await.unwrap();
    let (_, inbox) = server.get("/ai/proposals", ADMIN).await;
    let proposal = inbox["items"][0]["id"].as_str().unwrap().to_owned();
    let (_, view) = server
        .get(&format!("/ai/proposals/{proposal}"), ADMIN)
        .await;
    let deletion = &view["operation"]["deletion"];
    let versions = deletion["versions"]
        .as_array()
        .expect("the versions")
        .clone();
    let instances = deletion["instanceCount"]
        .as_u64()
        .expect("the instance count");
    assert!(versions.len() >= 2 && instances >= 1, "{view}");
    let target = &view["operation"]["targets"][0];

    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;
    sign_in(&browser, &server.url(""), ADMIN).await;
    click(&browser, "#nav button[data-view=inbox]").await;
    let kind = until(
        &browser,
        "the delete row",
        &format!(
            "(() => {{ const r = document.querySelector('{}[data-kind=Delete]'); if (r) r.click(); return r?.cells[1].textContent; }})()",
            testid("proposal-row")
        ),
    )
    .await;
    assert_eq!(kind, "Delete · 1 target");

    // What is lost comes first, before the targets: every version, the published one, the
    // instances.
    let loss = until(
        &browser,
        "what the deletion loses",
        "(() => { const box = document.querySelector('#proposal [data-testid=deletion]'); return box && [...box.querySelectorAll('li')].map(li => li.textContent); })()",
    )
    .await;
    let listed: Vec<String> = versions.iter().map(|v| format!("v{v}")).collect();
    let published = match deletion["publishedVersion"].as_i64() {
        Some(v) => format!("The published version v{v}: its triggers stop starting it"),
        None => "No version is published".to_owned(),
    };
    assert_eq!(
        loss,
        json!([
            format!("{} versions: {}", versions.len(), listed.join(", ")),
            published,
            format!("{instances} workflow instances of it"),
        ])
    );
    let order = browser
        .execute(
            "const box = document.querySelector('#proposal [data-testid=deletion]'); \
             const table = document.querySelector('#proposal [data-testid=targets]'); \
             return [!!(box.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING), \
                     getComputedStyle(box).borderLeftWidth];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        order,
        json!([true, "6px"]),
        "the loss is shown first and framed"
    );
    let description = text_of(&browser, &testid("operation-description")).await;
    assert!(
        description.starts_with(&format!("Delete workflow '{DEFINITION}'"))
            && description.contains("cannot be undone"),
        "{description}"
    );

    // The target is the definition, its state in versions; nothing to drop, no graph.
    let published_now = target["proposed"]["publishedVersion"]
        .as_i64()
        .map_or("none".to_owned(), |v| format!("v{v}"));
    let state = format!(
        "latest v{}, published {published_now}",
        target["proposed"]["latestVersion"]
    );
    let row = target_rows(&browser).await;
    assert_eq!(
        row,
        json!([[
            DEFINITION,
            format!("{DEFINITION} v{}", target["version"]),
            state,
            state,
            false,
            null
        ]])
    );
    assert_eq!(count(&browser, &testid("drop-target")).await, 0);
    assert_eq!(count(&browser, &testid("drop-targets")).await, 0);
    assert_eq!(
        count(&browser, &format!("#proposal {}", testid("diff-graph"))).await,
        0
    );
    assert_eq!(count(&browser, &testid("approve")).await, 1);
    browser
        .execute(
            "document.getElementById('proposal').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "delete-proposal").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// A server whose model, an OpenAI-compatible one on a socket, streams `replies` word by
/// word; the model server is kept for as long as the test holds it.
async fn with_model(
    replies: impl IntoIterator<Item = ModelReply>,
) -> (ScriptedModelServer, TestServer) {
    let model = ScriptedModelServer::start(replies).await.unwrap();
    let provider = format!(
        "kind = \"openai\"\nbase_url = \"{}\"\nmodel = \"scripted\"",
        model.base_url()
    );
    let server =
        TestServer::start_with(Weaver::builder(config_with(&provider)).env(|_| None)).await;
    (model, server)
}

/// An answer as Qwen or GPT write one about a workflow.
const MARKDOWN_ANSWER: &str = r#"## What `order-approval` does

This workflow handles **incoming orders** that need a manager's sign-off. It starts at an `HttpEndpoint` and ends once the order is *approved* or *rejected*.

### Steps

- **Receive the order** over HTTP
  - the payload is checked against the `Order` schema
- **Ask for approval** with a `RunTask` activity
- **Notify the customer** by e-mail

To raise the approval threshold:

1. Open the definition in the designer.
2. Select the `Decision` activity.
3. Set its condition, for example:

```json
{
  "op": "setInput",
  "activityId": "Decision",
  "input": "condition",
  "value": "order.total > 1000"
}
```

| Activity | Type | Purpose |
|---|---|:---:|
| Start | `Elsa.HttpEndpoint` | Receives the order |
| Approve | `Elsa.RunTask` | Waits for the manager |
| Notify | `Elsa.SendEmail` | Tells the customer |

> Nothing changes until a person approves and applies the proposal.

For more, see the [Elsa documentation](https://example.com)."#;

/// What the last answer of the transcript is drawn as: its headings, emphasis, code, lists,
/// code blocks, table and links.
const MARKDOWN_PROBE: &str = "(() => { \
    const m = [...document.querySelectorAll('[data-testid=assistant-text]')].at(-1); \
    if (!m) return null; \
    const texts = (css) => [...m.querySelectorAll(css)].map(e => e.textContent); \
    const table = m.querySelector('.md-table[role=region] > table'); \
    return { \
      headings: [...m.querySelectorAll('h3, h4, h5, h6')].map(e => `${e.tagName}:${e.textContent}`), \
      strong: texts('strong'), em: texts('em'), code: texts(':not(pre) > code'), \
      nested: texts('ul > li > ul > li'), bullets: m.querySelectorAll(':scope > ul > li').length, \
      ordered: texts('ol > li'), \
      blocks: [...m.querySelectorAll('pre > code')].map(c => ({ lang: c.className, pre: c.parentElement.dataset.lang, text: c.textContent })), \
      header: table && texts('.md-table thead th'), \
      rows: table && [...table.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)), \
      quote: texts('blockquote'), \
      links: [...m.querySelectorAll('a')].map(a => ({ href: a.getAttribute('href'), rel: a.rel, target: a.target, text: a.textContent })), \
      marks: ['**', '```', '|---', '## ', '](' ].filter(s => m.textContent.includes(s)), \
    }; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_answer_is_drawn_as_markdown_with_lists_code_tables_and_links() {
    let (_model, server) = with_model([ModelReply::Text(MARKDOWN_ANSWER.into())]).await;
    let driver = Driver::start();
    let browser = driver.browser(1100, 1500).await;
    sign_in(&browser, &server.url(""), ADMIN).await;
    chat(&browser, "What does the order approval workflow do?").await;

    let drawn = until(&browser, "the answer drawn", MARKDOWN_PROBE).await;
    let json_block = "{\n  \"op\": \"setInput\",\n  \"activityId\": \"Decision\",\n  \"input\": \"condition\",\n  \"value\": \"order.total > 1000\"\n}";
    assert_eq!(
        drawn,
        json!({
            "headings": ["H4:What order-approval does", "H5:Steps"],
            "strong": ["incoming orders", "Receive the order", "Ask for approval", "Notify the customer"],
            "em": ["approved", "rejected"],
            "code": ["order-approval", "HttpEndpoint", "Order", "RunTask", "Decision",
                     "Elsa.HttpEndpoint", "Elsa.RunTask", "Elsa.SendEmail"],
            "nested": ["the payload is checked against the Order schema"],
            "bullets": 3,
            "ordered": ["Open the definition in the designer.", "Select the Decision activity.", "Set its condition, for example:"],
            "blocks": [{"lang": "language-json", "pre": "json", "text": json_block}],
            "header": ["Activity", "Type", "Purpose"],
            "rows": [
                ["Start", "Elsa.HttpEndpoint", "Receives the order"],
                ["Approve", "Elsa.RunTask", "Waits for the manager"],
                ["Notify", "Elsa.SendEmail", "Tells the customer"],
            ],
            "quote": ["Nothing changes until a person approves and applies the proposal."],
            "links": [{"href": "https://example.com/", "rel": "noopener noreferrer", "target": "_blank", "text": "Elsa documentation"}],
            "marks": [],
        }),
        "the answer's Markdown, drawn"
    );
    let aligned = browser
        .execute(
            "return [...document.querySelectorAll('.md-table tbody tr:first-child td')].map(c => getComputedStyle(c).textAlign);",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        aligned,
        json!(["left", "left", "center"]),
        "`:---:` centres its column"
    );
    browser
        .execute(
            "document.querySelector('[data-testid=assistant-text] h4').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "markdown-answer").await;

    // Opened again from the history, the stored answer is drawn the same; the question stays
    // the person's own words.
    click(&browser, "#new-conversation").await;
    until(
        &browser,
        "the conversation in the history",
        "document.querySelectorAll('#conversations button.open').length === 1 && document.getElementById('transcript').children.length === 0",
    )
    .await;
    click(&browser, "#conversations button.open").await;
    let reopened = until(&browser, "the stored answer drawn", MARKDOWN_PROBE).await;
    assert_eq!(reopened, drawn, "drawn from the stored answer alike");
    assert_eq!(
        text_of(&browser, "#transcript .msg.user").await,
        "What does the order approval workflow do?"
    );

    // At 390 px the answer fits the width: its code and table scroll within the bubble.
    browser.set_window_size(390, 844).await.unwrap();
    let layout = until(
        &browser,
        "layout",
        "(() => { const m = document.querySelector('[data-testid=assistant-text]').getBoundingClientRect(); \
         const inside = (css) => { const r = document.querySelector(`[data-testid=assistant-text] ${css}`).getBoundingClientRect(); return r.left >= m.left && r.right <= m.right; }; \
         return { page: document.documentElement.scrollWidth, table: inside('.md-table'), code: inside('pre') }; })()",
    )
    .await;
    assert!(layout["page"].as_u64().unwrap() <= 400, "{layout}");
    assert_eq!(
        layout["table"], true,
        "the table scrolls within the answer: {layout}"
    );
    assert_eq!(
        layout["code"], true,
        "the code block scrolls within the answer: {layout}"
    );
    browser
        .execute(
            "document.querySelector('[data-testid=assistant-text] ol').scrollIntoView();",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(&browser, "markdown-answer-390px").await;

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

/// An answer that tries HTML, script links, a data: URL and a remote image.
const HOSTILE_ANSWER: &str = "Here you go.\n\n\
<script>window.pwned=1</script>\n\n\
<img src=x onerror=\"window.pwned=2\">\n\n\
[click](javascript:window.pwned=3) and [x](JaVaScRiPt:alert(1)) and [y]( javascript:alert(1))\n\n\
![remote](https://example.com/tracker.png)\n\n\
[data](data:text/html,<script>alert(1)</script>) [vb](vbscript:msgbox(1)) [ent](&#106;avascript:alert(1)) [rel](/ai/me)\n\n\
<b>bold?</b> <iframe src=\"https://example.com/\"></iframe> <javascript:alert(1)>\n\n\
Safe: [docs](https://example.com/docs) and [mail](mailto:ops@example.com).";

/// What became of the hostile answer: elements, links and text.
const HOSTILE_PROBE: &str = "(() => { \
    const m = [...document.querySelectorAll('[data-testid=assistant-text]')].at(-1); \
    if (!m || !m.textContent.includes('Safe:')) return null; \
    return { \
      pwned: typeof window.pwned, \
      elements: [...m.querySelectorAll('script, img, iframe, object, embed, svg, style, link, form, b, video, audio, source')].map(e => e.tagName), \
      handlers: [...m.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on') || n === 'src'), \
      hrefs: [...m.querySelectorAll('a')].map(a => a.getAttribute('href')), \
      images: [...m.querySelectorAll('.md-image')].map(e => e.textContent), \
      scripts: document.scripts.length, \
      text: m.textContent, \
      requests: performance.getEntriesByType('resource').map(r => r.name).filter(n => n.includes('example.com')), \
      violations: window.violations || [], \
    }; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_answer_runs_no_script_loads_nothing_and_links_only_to_the_web() {
    let (_model, server) = with_model([ModelReply::Text(HOSTILE_ANSWER.into())]).await;
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;
    sign_in(&browser, &server.url(""), ADMIN).await;
    // Anything the page's policy had to block (an inline handler, a remote image) is noted.
    browser
        .execute(
            "window.violations = []; document.addEventListener('securitypolicyviolation', e => window.violations.push(`${e.violatedDirective} ${e.blockedURI}`));",
            Vec::new(),
        )
        .await
        .unwrap();
    chat(&browser, "Show me something dangerous.").await;

    for when in ["streamed", "reopened"] {
        let found = until(&browser, "the hostile answer drawn", HOSTILE_PROBE).await;
        assert_eq!(found["pwned"], "undefined", "{when}: {found}");
        assert_eq!(found["elements"], json!([]), "{when}: {found}");
        assert_eq!(found["handlers"], json!([]), "{when}: {found}");
        assert_eq!(
            found["hrefs"],
            json!(["https://example.com/docs", "mailto:ops@example.com"]),
            "{when}: only the web and mail links are links"
        );
        assert_eq!(found["images"], json!(["[image: remote]"]), "{when}");
        assert_eq!(found["scripts"], 1, "{when}: app.js alone");
        assert_eq!(
            found["requests"],
            json!([]),
            "{when}: nothing fetched from example.com"
        );
        assert_eq!(
            found["violations"],
            json!([]),
            "{when}: nothing for the policy to block"
        );
        let text = found["text"].as_str().unwrap();
        for literal in [
            "<script>window.pwned=1</script>",
            "<img src=x onerror=\"window.pwned=2\">",
            "[click](javascript:window.pwned=3)",
            "[x](JaVaScRiPt:alert(1))",
            "[y]( javascript:alert(1))",
            "[data](data:text/html,<script>alert(1)</script>)",
            "[vb](vbscript:msgbox(1))",
            "[ent](&#106;avascript:alert(1))",
            "[rel](/ai/me)",
            "<b>bold?</b>",
            "<iframe src=\"https://example.com/\"></iframe>",
            "<javascript:alert(1)>",
        ] {
            assert!(
                text.contains(literal),
                "{when}: {literal} shown as text in {text}"
            );
        }
        assert!(!text.contains("tracker.png"), "{when}: {text}");
        if when == "streamed" {
            let shown = text_of(&browser, "[data-testid=assistant-text]").await;
            assert!(shown.contains("<script>window.pwned=1</script>"), "{shown}");
            screenshot(&browser, "markdown-hostile-answer").await;
            click(&browser, "#new-conversation").await;
            until(
                &browser,
                "the conversation in the history",
                "document.querySelectorAll('#conversations button.open').length === 1 && document.getElementById('transcript').children.length === 0",
            )
            .await;
            click(&browser, "#conversations button.open").await;
        }
    }

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfinished_code_block_and_table_are_drawn_as_they_stream_in() {
    let answer = "Here is the patch:\n\n```json\n{\n  \"op\": \"setDescription\",\n  \"activityId\": \"Approve\",\n  \"value\": \"Approves orders over the limit\"\n}\n```\n\n\
        And the activities it touches:\n\n| Activity | Type |\n|---|---|\n| Start | HttpEndpoint |\n| Approve | RunTask |\n\n\
        That is all for now, nothing else in the workflow changes with this patch.";
    let (_model, server) = with_model([ModelReply::Paced {
        text: answer.into(),
        pause: Duration::from_millis(200),
    }])
    .await;
    let driver = Driver::start();
    let browser = driver.browser(1280, 900).await;
    sign_in(&browser, &server.url(""), ADMIN).await;
    type_into(&browser, &testid("message"), "Show me the patch.").await;
    click(&browser, &testid("send")).await;

    // The fence is open (its closing brace not yet written): already a code block, no marks.
    let open_block = until(
        &browser,
        "a code block still streaming in",
        "(() => { const m = document.querySelector('[data-testid=assistant-text]'); const c = m?.querySelector('pre > code.language-json'); \
         return document.querySelector('[data-testid=send]').disabled && c && c.textContent.includes('\"op\"') && !c.textContent.includes('}') \
           ? { code: c.textContent, marks: m.textContent.includes('```') } : null; })()",
    )
    .await;
    assert_eq!(open_block["marks"], false, "{open_block}");
    assert!(
        open_block["code"]
            .as_str()
            .unwrap()
            .starts_with("{\n  \"op\""),
        "{open_block}"
    );

    // The table is a table once its separator row is in, before its last row is complete.
    let open_table = until(
        &browser,
        "a table still streaming in",
        "(() => { const m = document.querySelector('[data-testid=assistant-text]'); const t = m?.querySelector('.md-table table'); \
         return document.querySelector('[data-testid=send]').disabled && t && !m.textContent.includes('nothing else') \
           ? { header: [...t.tHead.rows[0].cells].map(c => c.textContent), pipes: m.textContent.includes('|'), blocks: m.querySelectorAll('pre').length } : null; })()",
    )
    .await;
    assert_eq!(
        open_table,
        json!({"header": ["Activity", "Type"], "pipes": false, "blocks": 1}),
        "{open_table}"
    );

    until(
        &browser,
        "the turn to end",
        "!document.querySelector('[data-testid=send]').disabled",
    )
    .await;
    let done = browser
        .execute(
            "const m = document.querySelector('[data-testid=assistant-text]'); return { \
               blocks: [...m.querySelectorAll('pre > code')].map(c => c.textContent), \
               rows: [...m.querySelectorAll('.md-table tbody tr')].map(r => [...r.cells].map(c => c.textContent)), \
               last: m.lastElementChild.textContent };",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        done,
        json!({
            "blocks": ["{\n  \"op\": \"setDescription\",\n  \"activityId\": \"Approve\",\n  \"value\": \"Approves orders over the limit\"\n}"],
            "rows": [["Start", "HttpEndpoint"], ["Approve", "RunTask"]],
            "last": "That is all for now, nothing else in the workflow changes with this patch.",
        })
    );

    browser.close().await.unwrap();
    server.shutdown().await.unwrap();
}
