// The Weaver console: chat, review inbox and audit over Weaver's own API, from the same
// origin. Every value from the server is put into the page as text, never as markup.

const root = location.pathname.replace(/console\/.*$/, "");
/** The console's own address: the redirect URI its OIDC clients register, matched exactly. */
const consoleUrl = `${location.origin}${root}console/`;
/** The credential the API calls carry: an API key, a pasted token or an OIDC access token. */
const KEY = "weaver.console.credential";
/** With an OIDC sign-in: the provider, the refresh and ID tokens and when the access token expires. */
const OIDC = "weaver.console.oidc";
/** While an authorization request is out at the provider: its PKCE verifier, state and nonce. */
const REQUEST = "weaver.console.oidc.request";
const TERMINAL = new Set(["conversation.completed", "conversation.failed"]);

const state = {
  credential: sessionStorage.getItem(KEY),
  me: null,
  capabilities: null,
  conversationId: null,
  lastSequence: 0,
  attachments: [],
  cards: new Map(),
  texts: new Map(),
  turnOpen: false,
};

const $ = (id) => document.getElementById(id);

/** An element with attributes (`on*` are listeners, `dataset` a map) and children. */
function h(tag, attrs = {}, ...children) {
  const node = tag === "svg" || attrs.svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "svg" || value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  return fill(node, children, false);
}

/** Puts `children` (nested lists, text, nodes; nothing for null, undefined, false or "")
 * into `node`, replacing what it held when `replace`. */
function fill(node, children, replace = true) {
  const flat = [children].flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false && c !== "");
  const nodes = flat.map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
  if (replace) node.replaceChildren(...nodes);
  else node.append(...nodes);
  return node;
}

const svg = (tag, attrs = {}, ...children) => h(tag, { ...attrs, svg: true }, ...children);

function authorization() {
  const credential = state.credential || "";
  // JWTs are three dot-separated parts; anything else is an API key.
  return credential.split(".").length === 3 ? `Bearer ${credential}` : `ApiKey ${credential}`;
}

/** A request to the API; JSON in and out, errors thrown with the server's message. An
 * OIDC token refused as expired is renewed and the request sent once more. */
async function call(method, path, body, extra = {}, renewed = false) {
  const headers = { Authorization: authorization(), ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(root + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (extra.Accept === "text/event-stream" && response.ok) return response;
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!response.ok) {
    if (response.status === 401 && json?.code === "token_expired" && !renewed && oidcSession() && await renew()) {
      return call(method, path, body, extra, true);
    }
    const error = new Error(json?.message || `${response.status} ${response.statusText}`);
    error.status = response.status;
    error.code = json?.code;
    throw error;
  }
  return json;
}

const can = (permission) => !!state.me?.permissions?.includes(permission);

// ---------------------------------------------------------------- sign-in and navigation

async function signIn(credential) {
  state.credential = credential;
  try {
    state.me = await call("GET", "ai/me");
  } catch (error) {
    forget();
    throw error;
  }
  // Not `credential`: an expired OIDC token may have been renewed on the way.
  sessionStorage.setItem(KEY, state.credential);
  state.capabilities = await call("GET", "ai/capabilities");
  $("who").textContent = `${state.me.actor} · ${state.me.tenant}`;
  $("nav").hidden = false;
  $("sign-out").hidden = false;
  scheduleRenewal();
  $("nav-audit").hidden = !can("admin:ai");
  fillAgents();
  show("chat");
  loadConversations();
}

/** Forgets every credential and token of this tab and shows the sign-in view. */
function forget() {
  for (const key of [KEY, OIDC, REQUEST]) sessionStorage.removeItem(key);
  clearTimeout(renewTimer);
  Object.assign(state, { credential: null, me: null, capabilities: null });
  $("who").textContent = "";
  $("nav").hidden = true;
  $("sign-out").hidden = true;
  show("signin");
}

async function signOut() {
  const session = oidcSession();
  forget();
  const provider = session && (await providers).find((p) => p.id === session.providerId);
  // An OIDC sign-out also ends the provider's session where it offers an end-session
  // endpoint: otherwise "Sign in with …" would sign the same person straight back in without
  // a form, so on a shared machine signing out would not sign out and no other account could
  // be chosen. The provider sends the browser back to the console, signed out.
  if (provider?.endSessionEndpoint) {
    try {
      const url = providerUrl(provider.endSessionEndpoint, {
        client_id: provider.clientId,
        post_logout_redirect_uri: consoleUrl,
        id_token_hint: session.idToken,
      });
      location.assign(url);
      return;
    } catch {
      // An unusable endpoint: signed out of this tab only.
    }
  }
  // A fresh page, so nothing of the session (a transcript, an open proposal, a stream still
  // being read) outlives it in memory or in the page.
  location.replace(consoleUrl);
}

// ---------------------------------------------------------------- OpenID Connect sign-in

/** The providers offering the console a sign-in (none when the server lists none or the
 * list cannot be had: then the page signs in with a key or token only). */
const providers = fetch(`${root}ai/auth/providers`)
  .then((response) => (response.ok ? response.json() : null))
  .then((body) => (Array.isArray(body?.providers) ? body.providers : []))
  .catch(() => []);

let renewTimer = null;
let renewing = null;

const oidcSession = () => readJson(OIDC);

function readJson(key) {
  try {
    return JSON.parse(sessionStorage.getItem(key) || "null");
  } catch {
    return null;
  }
}

/** `endpoint` with `params` (those with a value) added; only http(s) addresses, so a
 * provider's metadata can never make the console navigate to a script URL. */
function providerUrl(endpoint, params) {
  const url = new URL(endpoint);
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error(`Not a web address: ${endpoint}`);
  for (const [name, value] of Object.entries(params)) if (value) url.searchParams.set(name, value);
  return url.href;
}

const base64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const random = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** The claims of a JWT, unverified (for the nonce of an ID token this tab just received
 * over TLS from the token endpoint, and the expiry of an access token); null if unreadable. */
function claims(jwt) {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}

function renderProviders(list) {
  if (!list.length) return;
  $("oidc-sign-in").replaceChildren(
    ...list.map((provider) => h("button", {
      type: "button",
      "data-testid": "oidc-sign-in",
      dataset: { provider: provider.id },
      onclick: () => {
        $("signin-error").textContent = "";
        authorize(provider).catch((error) => { $("signin-error").textContent = error.message; });
      },
    }, `Sign in with ${provider.name}`)),
    h("p", { class: "hint", text: "Or with an API key or bearer token:" }));
  $("oidc-sign-in").hidden = false;
}

/** Sends the browser to the provider for an authorization code (with PKCE, S256); it comes
 * back to the console with `?code=…&state=…` (or `?error=…`). */
async function authorize(provider) {
  // crypto.subtle exists in secure contexts only: HTTPS, or localhost.
  if (!crypto.subtle) throw new Error("Signing in with a provider needs the console on HTTPS (or on localhost).");
  const verifier = random();
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const request = {
    verifier, state: random(), nonce: random(), providerId: provider.id, tokenEndpoint: provider.tokenEndpoint,
    clientId: provider.clientId, redirectUri: consoleUrl,
  };
  const url = providerUrl(provider.authorizationEndpoint, {
    response_type: "code", client_id: request.clientId, redirect_uri: request.redirectUri, scope: provider.scopes,
    state: request.state, nonce: request.nonce, code_challenge: base64url(new Uint8Array(digest)), code_challenge_method: "S256",
  });
  sessionStorage.setItem(REQUEST, JSON.stringify(request));
  location.assign(url);
}

/** A POST to a provider's token endpoint; its JSON answer, or its error as an Error. */
async function tokenRequest(endpoint, params) {
  const response = await fetch(providerUrl(endpoint, {}), {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: new URLSearchParams(params),
  });
  let json = null;
  try { json = await response.json(); } catch { json = null; }
  if (!response.ok || !json?.access_token) {
    throw new Error(providerError(json?.error, json?.error_description) || `The provider answered ${response.status} ${response.statusText}`);
  }
  return json;
}

const providerError = (error, description) => (error ? `The provider refused the sign-in: ${description || error}` : "");

/** The provider's answer to an authorization request (`?code=…` or `?error=…`): the code
 * exchanged for tokens and the console signed in with them, or the reason shown. */
async function completeAuthorization(params) {
  const request = readJson(REQUEST);
  // The code is single-use and the request's secrets are spent either way: neither survives
  // a reload of the page.
  sessionStorage.removeItem(REQUEST);
  history.replaceState(null, "", consoleUrl);
  try {
    // An answer to no request of this tab (a forged or replayed link) is never used.
    if (!request || !params.get("state") || params.get("state") !== request.state) {
      throw new Error("The sign-in answer does not belong to a sign-in started in this tab; please sign in again.");
    }
    if (params.has("error")) throw new Error(providerError(params.get("error"), params.get("error_description")));
    const tokens = await tokenRequest(request.tokenEndpoint, {
      grant_type: "authorization_code", code: params.get("code") || "", redirect_uri: request.redirectUri,
      client_id: request.clientId, code_verifier: request.verifier,
    });
    if (tokens.id_token && claims(tokens.id_token)?.nonce !== request.nonce) {
      throw new Error("The provider's ID token does not belong to this sign-in; please sign in again.");
    }
    keepTokens(request, tokens, {});
    await signIn(tokens.access_token);
  } catch (error) {
    forget();
    $("signin-error").textContent = error.status === 401 ? `Weaver did not accept the provider's token: ${error.message}` : error.message;
  }
}

/** Stores the tokens of `tokens` (a token endpoint's answer) for `provider`'s client, keeping
 * the refresh and ID tokens of `previous` where the answer brings no new ones. */
function keepTokens({ providerId, tokenEndpoint, clientId }, tokens, previous) {
  const now = Date.now();
  const expiresIn = Number(tokens.expires_in);
  const exp = claims(tokens.access_token)?.exp;
  sessionStorage.setItem(OIDC, JSON.stringify({
    providerId, tokenEndpoint, clientId,
    refreshToken: tokens.refresh_token || previous.refreshToken || null,
    idToken: tokens.id_token || previous.idToken || null,
    expiresAt: expiresIn > 0 ? now + expiresIn * 1000 : typeof exp === "number" ? exp * 1000 : null,
    obtainedAt: now,
  }));
  sessionStorage.setItem(KEY, tokens.access_token);
  state.credential = tokens.access_token;
}

/** Renews the token of the OIDC session, one renewal at a time (several calls may find the
 * token expired at once, and a rotated refresh token works only once). True when a fresh
 * token is in place; a new authorization request leaves the page instead. */
function renew() {
  renewing ??= renewNow().finally(() => { renewing = null; });
  return renewing;
}

async function renewNow() {
  const session = oidcSession();
  if (!session) return false;
  if (session.refreshToken) {
    try {
      keepTokens(session, await tokenRequest(session.tokenEndpoint, {
        grant_type: "refresh_token", client_id: session.clientId, refresh_token: session.refreshToken,
      }), session);
      scheduleRenewal();
      return true;
    } catch {
      // Refused or unreachable: the provider is asked for a new code below.
    }
  }
  const provider = (await providers).find((p) => p.id === session.providerId);
  // A token that expires (or is refused as expired) moments after it was issued would send
  // the tab round the provider for ever: then the person signs in again, with the reason.
  if (!provider || Date.now() - session.obtainedAt < 10_000) {
    forget();
    $("signin-error").textContent = `The sign-in with ${provider?.name || session.providerId} expired; please sign in again.`;
    return false;
  }
  try {
    await authorize(provider);
  } catch (error) {
    forget();
    $("signin-error").textContent = error.message;
    return false;
  }
  // The page is leaving for the provider: nothing waiting on this should go on meanwhile.
  return new Promise(() => {});
}

/** Renews the OIDC token before it expires when a refresh token can (a quarter of its life
 * early, at most a minute), else when it has expired: a new authorization request leaves
 * the page, so it waits while a turn is being streamed. */
function scheduleRenewal() {
  clearTimeout(renewTimer);
  const session = oidcSession();
  if (!session?.expiresAt) return;
  const early = session.refreshToken ? Math.min(60_000, (session.expiresAt - session.obtainedAt) / 4) : 0;
  const wait = session.expiresAt - early - Date.now();
  // setTimeout holds at most 2^31 - 1 ms; a longer wait is taken up again when that one ends.
  renewTimer = setTimeout(() => {
    if (wait > 2 ** 31 - 1 || (state.turnOpen && !session.refreshToken)) scheduleRenewal();
    else renew();
  }, Math.min(Math.max(wait, 1000), 2 ** 31 - 1));
}

function show(view) {
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${view}`;
  for (const button of document.querySelectorAll("#nav button")) {
    if (button.dataset.view === view) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  if (view === "inbox") loadInbox();
  if (view === "audit") loadAudit();
}

function fillAgents() {
  const select = $("agent");
  select.replaceChildren(
    ...state.capabilities.agents.map((agent) =>
      h("option", { value: agent.name, selected: agent.default, text: agent.displayName || agent.name })),
  );
}

// ---------------------------------------------------------------- attachments

let searchTimer = null;
// Answers can arrive out of order: only the latest search may fill the list.
let searchSerial = 0;

async function searchAttachments() {
  const serial = ++searchSerial;
  const kind = $("attach-kind").value;
  const q = $("attachment-search").value;
  const list = $("attachment-options");
  list.setAttribute("aria-busy", "true");
  try {
    const found = await call("GET", `ai/attachments/search?kind=${encodeURIComponent(kind)}&q=${encodeURIComponent(q)}&limit=20`);
    if (serial !== searchSerial) return;
    list.dataset.query = q;
    list.replaceChildren(...found.items.map((item) =>
      h("li", {}, h("button", {
        type: "button",
        "data-testid": "attachment-option",
        dataset: { reference: item.referenceId },
        onclick: () => attach(item),
      }, item.title, " ", h("small", { text: `${item.referenceId} · ${item.detail}` })))));
    if (!found.items.length) list.replaceChildren(h("li", { class: "hint", text: "Nothing matches." }));
  } catch (error) {
    if (serial === searchSerial) list.replaceChildren(h("li", { class: "error", text: error.message }));
  } finally {
    if (serial === searchSerial) list.removeAttribute("aria-busy");
  }
}

function attach(item) {
  if (!state.attachments.some((a) => a.kind === item.kind && a.referenceId === item.referenceId)) {
    state.attachments.push({ kind: item.kind, referenceId: item.referenceId, title: item.title });
  }
  renderAttachments();
  $("attach-panel").hidden = true;
  $("attach").setAttribute("aria-expanded", "false");
  $("message").focus();
}

function renderAttachments() {
  $("attached").replaceChildren(...state.attachments.map((a, index) =>
    h("li", {}, a.title, " ", h("small", { text: a.kind }), h("button", {
      type: "button",
      "aria-label": `Remove ${a.title}`,
      onclick: () => { state.attachments.splice(index, 1); renderAttachments(); },
    }, "×"))));
}

// ---------------------------------------------------------------- Markdown

// The assistant answers in Markdown. It is drawn with `h` and text nodes only, like every other
// server value: HTML in an answer stays text, a link goes only to an http(s) or mailto address,
// and an image is named by its alt text, never loaded.

const FENCE = /^( *)(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
/** Deeper quotes and lists than this are drawn as text. */
const MD_DEPTH = 12;
/** At most this many emphasis pairs in one paragraph, heading or cell. */
const MD_PAIRS = 500;

/** Markdown `source` as a list of nodes. An unfinished code fence or table (an answer still
 * streaming in) is drawn as far as it goes. */
function markdown(source) {
  return blocks(String(source ?? "").replace(/\r\n?/g, "\n").split("\n"), 0);
}

/** `line` as the opening of a code fence (its indentation, marks and info string), or null. */
function fenceAt(line) {
  const m = FENCE.exec(line);
  return m && !(m[2][0] === "`" && m[3].includes("`")) ? m : null;
}

/** Whether line `i` starts a block that ends a paragraph before it. */
function startsBlock(lines, i) {
  const line = lines[i];
  return !!(fenceAt(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)
    || ITEM.exec(line)?.[3]?.trim() || tableAt(lines, i));
}

/** `lines` as block nodes: headings, code, quotes, lists, tables, rules and paragraphs. */
function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    if (depth >= MD_DEPTH) {
      out.push(h("p", {}, textNodes(lines.slice(i).join("\n"))));
      break;
    }
    let found, node, next = i + 1;
    if ((found = fenceAt(line))) {
      [node, next] = codeBlock(lines, i, found);
    } else if ((found = HEADING.exec(line))) {
      // Headings sit inside a message, under the page's own: # is an h3, ## an h4, and so on.
      node = h(`h${Math.min(found[1].length + 2, 6)}`, {}, inline(found[2] || ""));
    } else if (RULE.test(line)) {
      node = h("hr");
    } else if (QUOTE.test(line)) {
      [node, next] = quoteBlock(lines, i, depth);
    } else if (ITEM.test(line)) {
      [node, next] = listBlock(lines, i, depth);
    } else if ((found = tableAt(lines, i))) {
      [node, next] = tableBlock(lines, i, found);
    } else {
      while (next < lines.length && lines[next].trim() && !startsBlock(lines, next)) next++;
      node = h("p", {}, inline(lines.slice(i, next).map((l) => l.trim()).join("\n")));
    }
    out.push(node);
    i = next;
  }
  return out;
}

/** A fenced code block from line `i` to its closing fence, or to the end when it has none
 * yet; its language (the first word after the marks) as a class and `data-lang`. */
function codeBlock(lines, i, [, indent, marks, info]) {
  const lang = info.trim().split(/\s+/)[0];
  const name = /^[\w#+.-]{1,32}$/.test(lang) ? lang : null;
  const body = [];
  let j = i + 1;
  let closed = false;
  for (; j < lines.length && !closed; j++) {
    const close = /^ *(`{3,}|~{3,})[ \t]*$/.exec(lines[j]);
    closed = !!close && close[1][0] === marks[0] && close[1].length >= marks.length;
    if (!closed) body.push(lines[j].replace(new RegExp(`^ {0,${indent.length}}`), ""));
  }
  // Still streaming in: the line being written has not begun yet.
  if (!closed && body.at(-1) === "") body.pop();
  return [h("pre", { "data-lang": name }, h("code", { class: name ? `language-${name}` : null, text: body.join("\n") })), j];
}

/** A blockquote: the lines marked `>` from line `i`, and unmarked paragraph lines between. */
function quoteBlock(lines, i, depth) {
  const inner = [];
  let j = i;
  for (; j < lines.length; j++) {
    const m = QUOTE.exec(lines[j]);
    if (m) inner.push(m[1]);
    else if (lines[j].trim() && inner.at(-1).trim() && !startsBlock(lines, j)) inner.push(lines[j]);
    else break;
  }
  return [h("blockquote", {}, blocks(inner, depth + 1)), j];
}

/** A list from line `i`: its items of the same kind (bulleted or numbered) and indentation.
 * Lines indented at least two spaces more than an item's marker are the item's own (a nested
 * list among them); so are unindented lines continuing its paragraph. */
function listBlock(lines, i, depth) {
  const first = ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const base = first[1].length;
  const items = [];
  let loose = false;
  let blank = 0;
  let j = i;
  while (j < lines.length) {
    const m = ITEM.exec(lines[j]);
    if (!m || /\d/.test(m[2]) !== ordered || Math.abs(m[1].length - base) >= 2 || RULE.test(lines[j])) break;
    // Items apart, with blank lines between, make a loose list: paragraphs in its items.
    if (blank) loose = true;
    const marker = m[1].length + m[2].length;
    const gap = /^[ \t]*/.exec(lines[j].slice(marker))[0].length;
    const width = marker + (gap >= 1 && gap <= 4 ? gap : 1);
    const own = m[1].length + 2;
    const body = [m[3] || ""];
    blank = 0;
    for (j++; j < lines.length; j++) {
      const line = lines[j];
      if (!line.trim()) { blank++; continue; }
      const lead = /^ */.exec(line)[0].length;
      if (lead >= Math.min(own, width)) {
        for (; blank; blank--) body.push("");
        body.push(line.slice(Math.min(lead, width)));
      } else if (blank || ITEM.test(line) || startsBlock(lines, j)) {
        break;
      } else {
        body.push(line);
      }
    }
    items.push(body);
  }
  const start = ordered ? parseInt(first[2], 10) : 1;
  return [h(ordered ? "ol" : "ul", { start: start !== 1 ? start : null }, items.map((body) => {
    const nodes = blocks(body, depth + 1);
    // In a tight list an item's first paragraph is the item's own text.
    if (!loose && nodes[0]?.tagName === "P") nodes.splice(0, 1, ...nodes[0].childNodes);
    return h("li", {}, nodes);
  })), j];
}

/** The cells of a table row: split at `|` (not at `\|`), the outer pipes dropped. */
function tableRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cell = "";
  for (let k = 0; k < s.length; k++) {
    if (s[k] === "\\" && s[k + 1] === "|") { cell += "|"; k++; }
    else if (s[k] === "|") { cells.push(cell.trim()); cell = ""; }
    else cell += s[k];
  }
  cells.push(cell.trim());
  return cells;
}

/** A table starting at line `i` (a header row, then a `|---|:-:|` row with one cell per
 * header cell, or fewer while it is the last line: still streaming in), or null. */
function tableAt(lines, i) {
  if (!lines[i].includes("|") || i + 1 >= lines.length || !lines[i + 1].includes("|")) return null;
  const marks = tableRow(lines[i + 1]);
  if (!marks.every((c) => /^:?-+:?$/.test(c))) return null;
  const header = tableRow(lines[i]);
  if (marks.length !== header.length && !(i + 2 === lines.length && marks.length < header.length)) return null;
  return { header, align: marks.map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : c.startsWith(":") ? "left" : null)) };
}

/** The table found at line `i` and its body rows (the lines after it holding a `|`), in a
 * region that scrolls sideways when the table is wider than the message. */
function tableBlock(lines, i, { header, align }) {
  let j = i + 2;
  const rows = [];
  for (; j < lines.length && lines[j].trim() && lines[j].includes("|"); j++) rows.push(tableRow(lines[j]));
  const cells = (values, tag) => header.map((_, k) =>
    h(tag, { scope: tag === "th" ? "col" : null, "data-align": align[k] }, inline(values[k] || "")));
  return [h("div", { class: "md-table", role: "region", tabindex: 0, "aria-label": "Table, scrollable" },
    h("table", {},
      h("thead", {}, h("tr", {}, cells(header, "th"))),
      h("tbody", {}, rows.map((r) => h("tr", {}, cells(r, "td")))))), j];
}

const PUNCTUATION = /[!-/:-@[-`{-~]/;
const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: "\u00a0" };
const WORD = /[\p{L}\p{N}]/u;
const isSpace = (ch) => ch === undefined || /\s/.test(ch);

/** `text` as text nodes, a line break at each newline and (unless `asWritten`) the common
 * character references (`&amp;`, `&lt;`, `&#39;` …) read as the characters they stand for:
 * text, never markup. */
function textNodes(text, asWritten = false) {
  const decoded = asWritten ? text : text.replace(/&(?:#(\d{1,7})|#[xX]([\da-fA-F]{1,6})|([a-z]{2,6}));/g, (all, dec, hex, name) => {
    if (name) return ENTITIES[name] ?? all;
    const code = dec ? parseInt(dec, 10) : parseInt(hex, 16);
    return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
  });
  return decoded.split("\n").flatMap((part, k) => (k ? [h("br"), part] : [part])).filter((n) => n !== "");
}

/** Inline Markdown `text` as nodes: `code`, *em*, **strong**, ~~struck~~, links to http(s)
 * and mailto addresses, images as their alt text, backslash escapes; all else is text. In
 * time about linear in `text`, whatever it holds: an answer is drawn again as it grows. */
function inline(text, depth = 0, inLink = false) {
  if (depth > MD_DEPTH) return textNodes(text);
  const box = document.createElement("span");
  const runs = [];
  const unclosed = new Set();
  const brackets = bracketPairs(text);
  let plain = "";
  const put = (...nodes) => { box.append(...textNodes(plain), ...nodes); plain = ""; };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let found;
    if (c === "\\" && text[i + 1] === "\n") {
      put(h("br"));
      i += 2;
    } else if (c === "\\" && PUNCTUATION.test(text[i + 1] || "")) {
      plain += text[i + 1];
      i += 2;
    } else if (c === "`") {
      // A run of backticks not closed (yet) is text.
      found = codeSpan(text, i, unclosed);
      if (found.code === undefined) plain += text.slice(i, found.end);
      else put(h("code", { text: found.code }));
      i = found.end;
    } else if (c === "!" && text[i + 1] === "[" && (found = linkAt(text, i + 1, brackets))) {
      // Nothing is loaded for an image: it is named by its alt text.
      put(h("span", { class: "md-image", text: found.label.trim() ? `[image: ${found.label.trim()}]` : "[image]" }));
      i = found.end;
    } else if (c === "[" && !inLink && (found = linkAt(text, i, brackets))) {
      const href = safeHref(found.dest);
      // A link to anywhere else is shown as it was written, and goes nowhere.
      if (href) put(h("a", { href, rel: "noopener noreferrer", target: "_blank" }, inline(found.label, depth + 1, true)));
      else put(...textNodes(text.slice(i, found.end), true));
      i = found.end;
    } else if (c === "<" && !inLink && (found = autolink(text, i))) {
      put(h("a", { href: found.href, rel: "noopener noreferrer", target: "_blank", text: found.label }));
      i = found.end;
    } else if (c === "*" || c === "_" || c === "~") {
      // A run of delimiters: text for now, made emphasis by `emphasis` once all are known.
      let end = i;
      while (text[end] === c) end++;
      const before = text[i - 1], after = text[end];
      const node = document.createTextNode(text.slice(i, end));
      put(node);
      if (c !== "~" || end - i === 2) {
        runs.push({
          node, c, count: end - i,
          opens: !isSpace(after) && !(c === "_" && WORD.test(before || "")),
          closes: !isSpace(before) && !(c === "_" && WORD.test(after || "")),
        });
      }
      i = end;
    } else {
      plain += c;
      i++;
    }
  }
  put();
  emphasis(runs);
  return [...box.childNodes].filter((n) => !(n.nodeType === Node.TEXT_NODE && !n.data));
}

/** Pairs the delimiter `runs` (in order, their text nodes siblings) into `em`, `strong` and
 * `del` elements around what lies between, as CommonMark's delimiter stack does: each
 * closing run takes the nearest open run of its kind; runs between a pair are spent. Past
 * `MD_PAIRS` pairs (emphasis nested thousands deep is no answer) the rest stays text. */
function emphasis(runs) {
  const floor = {};
  let top = -1;
  let pairs = 0;
  runs.forEach((closer, k) => {
    closer.prev = top;
    if (closer.closes && pairs < MD_PAIRS) {
      let o = closer.prev;
      while (closer.count && o > (floor[closer.c] ?? -1)) {
        const opener = runs[o];
        if (opener.c !== closer.c || !opener.opens || !opener.count) { o = opener.prev; continue; }
        const n = Math.min(2, opener.count, closer.count);
        if (++pairs > MD_PAIRS) break;
        const wrapper = document.createElement(closer.c === "~" ? "del" : n === 2 ? "strong" : "em");
        for (let node = opener.node.nextSibling; node && node !== closer.node;) {
          const next = node.nextSibling;
          wrapper.append(node);
          node = next;
        }
        opener.node.after(wrapper);
        opener.node.data = opener.node.data.slice(n);
        closer.node.data = closer.node.data.slice(n);
        opener.count -= n;
        closer.count -= n;
        o = closer.prev = opener.count ? o : opener.prev;
      }
      // No run further down opens for this kind of closer: later ones need not look there.
      if (closer.count) floor[closer.c] = k - 1;
    }
    top = closer.count && closer.opens ? k : closer.prev;
  });
}

/** The code span at `i`: a run of backticks closed by the next run of the same length; its
 * code, and where it ends (or only where the run ends, when it is not closed). `unclosed`
 * keeps the lengths no later run closes, so that no run looks twice. */
function codeSpan(text, i, unclosed) {
  let end = i;
  while (text[end] === "`") end++;
  const open = end - i;
  if (unclosed.has(open)) return { end };
  for (let j = text.indexOf("`", end); j >= 0; j = text.indexOf("`", j)) {
    let close = j;
    while (text[close] === "`") close++;
    if (close - j === open) {
      const code = text.slice(end, j).replace(/\n/g, " ");
      return { code: /^ .*[^ ].* $/s.test(code) ? code.slice(1, -1) : code, end: close };
    }
    j = close;
  }
  unclosed.add(open);
  return { end };
}

/** Where each `[` of `text` is closed: a map from its position to its `]`'s (brackets in
 * code spans and escaped ones are not brackets). */
function bracketPairs(text) {
  const pairs = new Map();
  const open = [];
  const unclosed = new Set();
  for (let j = 0; j < text.length; j++) {
    const ch = text[j];
    if (ch === "\\") j++;
    else if (ch === "`") j = codeSpan(text, j, unclosed).end - 1;
    else if (ch === "[") open.push(j);
    else if (ch === "]" && open.length) pairs.set(open.pop(), j);
  }
  return pairs;
}

/** The link whose `[` is at `i`: its label, destination and where it ends, or null when no
 * `(destination "title")` follows the closing `]`. */
function linkAt(text, i, brackets) {
  const j = brackets.get(i);
  if (j === undefined || text[j + 1] !== "(") return null;
  const label = text.slice(i + 1, j);
  const blank = /[ \t\n]*/y;
  let k = j + 2;
  const skip = () => { blank.lastIndex = k; blank.exec(text); k = blank.lastIndex; };
  skip();
  let dest;
  // Addresses and titles are looked for within a bound, so that many unclosed links in one
  // paragraph cost little.
  const limit = Math.min(text.length, k + 2048);
  if (text[k] === "<") {
    const close = text.slice(k, limit).indexOf(">");
    if (close < 0 || /[\n<]/.test(text.slice(k + 1, k + close))) return null;
    dest = text.slice(k + 1, k + close);
    k += close + 1;
  } else {
    const start = k;
    for (let parens = 0; k < limit; k++) {
      const ch = text[k];
      if (ch === "\\" && k + 1 < text.length) k++;
      else if (/[\s\x00-\x1f\x7f]/.test(ch)) break;
      else if (ch === "(" && ++parens > 32) return null;
      else if (ch === ")" && parens-- === 0) break;
    }
    if (k >= limit && limit < text.length) return null;
    dest = text.slice(start, k);
  }
  skip();
  const quote = { "\"": "\"", "'": "'", "(": ")" }[text[k]];
  if (quote) {
    const close = text.slice(k + 1, k + 1025).indexOf(quote);
    if (close < 0) return null;
    k += close + 2;
    skip();
  }
  if (text[k] !== ")") return null;
  return { label, dest: dest.replace(/\\([!-/:-@[-`{-~])/g, "$1"), end: k + 1 };
}

/** The autolink at `i` (an http(s) or mailto address in angle brackets), or null: then the
 * `<` is text, as every other tag is. */
function autolink(text, i) {
  const m = /^<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*)>/.exec(text.slice(i, i + 2048));
  const href = m && safeHref(m[1]);
  return href ? { href, label: m[1], end: i + m[0].length } : null;
}

/** `dest` as the address of a link when it is an absolute http(s) or mailto one, else null:
 * no `javascript:`, `data:` or other scheme, however spelt, and no relative address. */
function safeHref(dest) {
  const raw = dest.trim();
  if (!/^(?:https?:\/\/|mailto:)/i.test(raw)) return null;
  try {
    const url = new URL(raw);
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- chat

function transcriptItem(node) {
  $("transcript").append(h("li", {}, node));
  node.scrollIntoView({ block: "nearest" });
  return node;
}

function resetTranscript() {
  $("transcript").replaceChildren();
  state.cards.clear();
  state.texts.clear();
  state.lastSequence = 0;
}

function setTurnOpen(open) {
  state.turnOpen = open;
  $("send").disabled = open;
  $("cancel").disabled = !open;
  $("chat-status").textContent = open ? "Weaver is working…" : "";
}

async function send(event) {
  event.preventDefault();
  const message = $("message").value.trim();
  if (!message || state.turnOpen) return;
  const body = {
    conversationId: state.conversationId,
    message,
    agent: state.conversationId ? null : $("agent").value,
    attachments: state.attachments.map(({ kind, referenceId }) => ({ kind, referenceId })),
  };
  transcriptItem(h("div", { class: "msg user", text: message }));
  $("message").value = "";
  setTurnOpen(true);
  let response;
  try {
    response = await call("POST", "ai/chat", body, { Accept: "text/event-stream" });
  } catch (error) {
    transcriptItem(h("div", { class: "msg failed", role: "alert", text: error.message }));
    setTurnOpen(false);
    return;
  }
  state.conversationId = response.headers.get("x-conversation-id") || state.conversationId;
  state.attachments = [];
  renderAttachments();
  await follow(response);
}

/** Reads a turn's stream to its end; a stream that breaks off is resumed after the last
 * event seen (Last-Event-ID), and events seen already are skipped. */
async function follow(response) {
  let ended = false;
  for (let attempt = 0; attempt < 8 && !ended; attempt++) {
    try {
      ended = await readEvents(response);
    } catch {
      ended = false;
    }
    if (ended || !state.conversationId) break;
    $("chat-status").textContent = "Reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** attempt, 4000)));
    try {
      response = await call("GET", `ai/chat/${encodeURIComponent(state.conversationId)}/events`, undefined, {
        Accept: "text/event-stream",
        "Last-Event-ID": String(state.lastSequence),
      });
    } catch (error) {
      transcriptItem(h("div", { class: "msg failed", role: "alert", text: error.message }));
      break;
    }
  }
  setTurnOpen(false);
  loadConversations();
}

/** Reads Server-Sent Events; true when the turn's terminal event arrived. */
async function readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = parseEvent(block);
      if (!event) continue;
      if (event.sequence <= state.lastSequence) continue;
      state.lastSequence = event.sequence;
      handle(event);
      if (TERMINAL.has(event.type)) ended = true;
    }
    drawAnswers();
  }
  return ended;
}

function parseEvent(block) {
  let id = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") id = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  try {
    const json = JSON.parse(data.join("\n"));
    return { type: json.type, sequence: Number(json.sequence ?? id), data: json.data || {} };
  } catch {
    return null;
  }
}

function handle(event) {
  const data = event.data;
  switch (event.type) {
    case "assistant.delta":
      assistantText(data.messageId).text += data.content ?? data.text ?? "";
      break;
    case "assistant.completed":
      assistantText(data.messageId).text = data.content ?? data.text ?? "";
      break;
    case "tool.started":
    case "tool.progress":
    case "tool.completed":
    case "tool.failed":
      toolCard(event.type, data);
      break;
    case "proposal.created":
    case "proposal.updated":
      proposalCard(data);
      break;
    case "conversation.failed":
      transcriptItem(h("div", { class: "msg failed", role: "alert", dataset: { code: data.code } },
        data.content || data.error?.message || "The turn failed.", " ", h("small", { text: `(${data.code})` })));
      break;
    default:
      break;
  }
}

/** The answer `messageId` being streamed: its node and its text so far. The text is drawn
 * (as Markdown, afresh) by `drawAnswers`, once for all the events of a read. */
function assistantText(messageId = "message") {
  let answer = state.texts.get(messageId);
  if (!answer) {
    answer = { node: transcriptItem(assistantMessage("")), text: "", drawn: "" };
    state.texts.set(messageId, answer);
  }
  return answer;
}

/** Draws each answer whose text changed since it was last drawn. */
function drawAnswers() {
  for (const answer of state.texts.values()) {
    if (answer.text === answer.drawn) continue;
    fill(answer.node, markdown(answer.text));
    answer.drawn = answer.text;
  }
}

/** An answer of the assistant, its Markdown drawn as elements (see `markdown`). */
function assistantMessage(text) {
  return h("div", { class: "msg assistant md", "data-testid": "assistant-text" }, markdown(text));
}

function toolCard(type, data) {
  const id = data.toolCallId || data.callId;
  let card = state.cards.get(id);
  if (!card) {
    card = {
      started: performance.now(),
      node: transcriptItem(h("div", { class: "card tool", "data-testid": "tool-card", dataset: { tool: data.toolName } })),
    };
    state.cards.set(id, card);
  }
  if (data.arguments !== undefined) card.arguments = data.arguments;
  const status = type === "tool.completed" ? "completed" : type === "tool.failed" ? "failed" : "running";
  const seconds = status === "running" ? null : ((performance.now() - card.started) / 1000).toFixed(2);
  card.node.className = `card tool ${status}`;
  fill(card.node, [
    h("strong", { text: data.toolName || "tool" }), " ",
    h("span", { class: "status", "data-status": status, text: status }),
    seconds ? ` · ${data.durationMs !== undefined ? (data.durationMs / 1000).toFixed(2) : seconds} s` : "",
    data.summary && status !== "running" ? h("div", { class: "hint", text: data.summary }) : null,
    card.arguments !== undefined ? h("details", {}, h("summary", { text: "Arguments (redacted)" }), h("pre", { text: JSON.stringify(card.arguments, null, 2) })) : null,
  ]);
}

function proposalCard(data) {
  const id = data.proposalId;
  let node = state.cards.get(`proposal:${id}`)?.node;
  if (!node) {
    node = transcriptItem(h("div", { class: "card proposal", "data-testid": "proposal-card", dataset: { proposal: id } }));
    state.cards.set(`proposal:${id}`, { node });
  }
  fill(node, [
    h("strong", { text: `Proposal for ${data.workflowDefinitionId || "a workflow"}` }), " ",
    h("span", { class: "status", text: data.status }),
    data.summary ? h("div", { class: "hint", text: data.summary }) : null,
    h("button", { type: "button", onclick: () => { show("inbox"); openProposal(id); } }, "Review"),
  ]);
}

async function cancelTurn() {
  if (!state.conversationId) return;
  try {
    await call("POST", `ai/chat/${encodeURIComponent(state.conversationId)}/cancel`);
  } catch (error) {
    $("chat-status").textContent = error.message;
  }
}

async function loadConversations() {
  try {
    const page = await call("GET", "ai/conversations?limit=30");
    $("conversations").replaceChildren(...page.items.map(conversationItem));
  } catch {
    // The list is a convenience; chatting works without it.
  }
}

// One conversation of the history: open it, or delete it after a confirmation in place.
function conversationItem(c) {
  const title = c.title || c.id;
  const item = h("li", { class: "conversation", dataset: { conversationId: c.id } });
  const open = h("button", { type: "button", class: "open", onclick: () => openConversation(c.id), "aria-current": c.id === state.conversationId ? "true" : null }, title);
  const ask = h("button", { type: "button", class: "delete", "aria-label": `Delete conversation ${title}`, onclick: () => confirmDelete() }, "✕");
  const confirmDelete = () => fill(item, [
    h("span", { class: "confirm", role: "alert", text: `Delete “${title}” for good? Its messages go; proposals made in it stay.` }),
    h("button", { type: "button", class: "danger", onclick: () => deleteConversation(c.id, item) }, "Delete"),
    h("button", { type: "button", onclick: () => fill(item, [open, ask]) }, "Keep"),
  ]);
  return fill(item, [open, ask], false);
}

async function deleteConversation(id, item) {
  try {
    await call("DELETE", `ai/conversations/${encodeURIComponent(id)}`);
    if (state.conversationId === id) newConversation();
    item.remove();
  } catch (error) {
    fill(item, [h("span", { class: "error", role: "alert", text: error.message })]);
  }
}

// The call a stored Tool message holds, or null when its content is not one.
function storedCall(content) {
  try {
    const call = JSON.parse(content);
    return call && typeof call.toolName === "string" ? call : null;
  } catch {
    return null;
  }
}

async function openConversation(id) {
  const conversation = await call("GET", `ai/conversations/${encodeURIComponent(id)}`);
  resetTranscript();
  state.conversationId = id;
  for (const message of conversation.messages) {
    const call = message.role === "Tool" ? storedCall(message.content) : null;
    if (call) {
      // A stored tool call is drawn as the card the live stream drew for it.
      toolCard(call.result?.outcome === "Success" ? "tool.completed" : "tool.failed",
        { callId: call.callId, toolName: call.toolName, arguments: call.arguments });
      continue;
    }
    // The person's words are shown as typed; the assistant's answers as Markdown.
    transcriptItem(message.role === "Assistant" ? assistantMessage(message.content)
      : h("div", { class: `msg ${message.role === "User" ? "user" : "assistant"}`, text: message.content }));
  }
  try {
    // The proposals this conversation produced, with their status as it is now.
    const proposals = await call("GET", `ai/proposals?limit=100&conversationId=${encodeURIComponent(id)}`);
    for (const p of proposals.items) {
      proposalCard({ proposalId: p.id, workflowDefinitionId: p.definitionId, status: p.status, summary: p.rationale });
    }
  } catch {
    // Without the right to view proposals the messages are still the conversation.
  }
  const agent = $("agent");
  agent.value = conversation.agent;
  loadConversations();
}

function newConversation() {
  resetTranscript();
  state.conversationId = null;
  state.attachments = [];
  renderAttachments();
  loadConversations();
}

// ---------------------------------------------------------------- review

let inboxSequence = 0;

/** Proposals that act on instances or a definition rather than write a definition. */
const OPERATIONS = new Set(["Retry", "Cancel", "Restart", "Publish", "Unpublish", "Delete"]);
const INSTANCE_OPERATIONS = new Set(["Retry", "Cancel", "Restart"]);
/** While a proposal is in one of these states, applying it is still ahead. */
const PENDING = new Set(["Draft", "Validated", "Blocked", "Approved"]);

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

async function loadInbox() {
  const status = $("inbox-status").value;
  const body = $("inbox").tBodies[0];
  const sequence = ++inboxSequence;
  try {
    const page = await call("GET", `ai/proposals?limit=100${status ? `&status=${encodeURIComponent(status)}` : ""}`);
    if (sequence !== inboxSequence) return;
    const items = page.items;
    body.replaceChildren(...items.map((p) => h("tr", {
      "data-testid": "proposal-row",
      dataset: { id: p.id, kind: p.kind },
      tabindex: 0,
      onclick: () => openProposal(p.id),
      onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openProposal(p.id); } },
    },
    h("td", { text: p.definitionId }),
    h("td", {}, p.kind, typeof p.targetCount === "number"
      ? h("small", { class: "count", "data-testid": "target-count", text: ` · ${plural(p.targetCount, "target")}` })
      : null),
    h("td", {}, h("span", { class: "status", "data-testid": "proposal-status", text: p.status })),
    h("td", { text: p.createdBy }),
    h("td", { text: new Date(p.createdAt).toLocaleString() }))));
    if (!items.length) body.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "hint", text: "No proposals." })));
  } catch (error) {
    body.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "error", text: error.message })));
  }
}

async function openProposal(id) {
  const panel = $("proposal");
  panel.hidden = false;
  let p;
  try {
    p = await call("GET", `ai/proposals/${encodeURIComponent(id)}`);
  } catch (error) {
    panel.replaceChildren(h("p", { class: "error", role: "alert", text: error.message }));
    return;
  }
  renderProposal(p);
}

/** Draws proposal `p` (a ProposalView, as GET and every action answer it) in the panel. */
function renderProposal(p) {
  const panel = $("proposal");
  const id = p.id;
  const allowed = new Set(p.allowedActions || []);
  const diff = p.graphDiff || {};
  const operation = p.operation || null;
  const actions = h("div", { class: "actions" });
  const act = async (action, body) => {
    try {
      renderProposal(await call("POST", `ai/proposals/${encodeURIComponent(id)}/${action}`, body));
      loadInbox();
    } catch (error) {
      actions.append(h("p", { class: "error", role: "alert", text: error.message }));
    }
  };
  if (allowed.has("approve")) actions.append(h("button", { type: "button", class: "primary", "data-testid": "approve", onclick: () => act("approve", {}) }, "Approve"));
  if (allowed.has("reject")) {
    const reason = h("input", { id: "reject-reason", "data-testid": "reject-reason", placeholder: "Why?", "aria-label": "Reason for rejecting" });
    actions.append(reason, h("button", {
      type: "button", "data-testid": "reject",
      onclick: () => reason.value.trim() ? act("reject", { reason: reason.value.trim() }) : reason.focus(),
    }, "Reject"));
  }
  if (allowed.has("apply")) actions.append(h("button", { type: "button", class: "primary", "data-testid": "apply", onclick: () => act("apply", {}) }, "Apply"));
  if (!actions.children.length) actions.append(h("p", { class: "hint", text: "You may not act on this proposal now." }));

  const targets = operation?.targets || [];
  const what = operation
    ? (INSTANCE_OPERATIONS.has(p.kind) ? plural(targets.length, "workflow instance") : p.definitionId)
    : p.definitionId;
  fill(panel, [
    h("h3", {}, `Proposal ${p.id} · `, h("span", { class: "status", "data-testid": "proposal-status", text: p.status })),
    h("p", { text: `${p.kind} of ${what}, requested by ${p.createdBy}` + (p.appliedVersion ? `, applied as version ${p.appliedVersion.version}` : "") }),
    p.reviewedBy ? h("p", { id: "proposal-review", text: `Reviewed by ${p.reviewedBy}` + (p.reviewedAt ? ` on ${new Date(p.reviewedAt).toLocaleString()}` : "") + (p.reviewReason ? `, reason: ${p.reviewReason}` : "") }) : null,
    p.appliedBy ? h("p", { text: `Applied by ${p.appliedBy}` + (p.appliedAt ? ` on ${new Date(p.appliedAt).toLocaleString()}` : "") }) : null,
    operation ? operationSection(p, operation, allowed.has("dropTargets") && PENDING.has(p.status) ? (ids) => act("drop-targets", { targets: ids }) : null) : null,
    h("h3", { text: "Rationale" }), h("p", { text: p.rationale || "—" }),
    p.warnings?.length ? [h("h3", { text: "Warnings" }), h("ul", {}, p.warnings.map((w) => h("li", { text: w })))] : null,
    p.diagnostics?.length ? [h("h3", { text: "Diagnostics" }), h("ul", {}, p.diagnostics.map((d) => h("li", { text: `${d.severity || ""} ${d.code || ""}: ${d.message || ""}` })))] : null,
    // An operation writes no definition: it has no graph and no diff to draw.
    operation ? null : [
      diff.header?.length ? [h("h3", { text: "Workflow changes" }), h("ul", {}, diff.header.map((c) => h("li", { text: `${c.field}: ${c.before ?? "—"} → ${c.after ?? "—"}` })))] : null,
      h("h3", { text: "Graph" }),
      diffGraph(p.definition, diff),
      inputsTable(diff),
    ],
    h("h3", { text: "Review" }),
    actions,
  ]);
}

/** A target's state in words: `status/subStatus` for an instance, `latest vN, published
 * vM|none` for a definition. */
function stateText(s, instances) {
  if (!s) return "not read";
  if (s.exists === false) return "gone (no longer exists)";
  if (instances) return `${s.status ?? "?"}/${s.subStatus ?? "?"}`;
  const published = s.publishedVersion === undefined || s.publishedVersion === null ? "none" : `v${s.publishedVersion}`;
  return `latest ${s.latestVersion === undefined || s.latestVersion === null ? "?" : `v${s.latestVersion}`}, published ${published}`;
}

const STATE_FIELDS = ["exists", "status", "subStatus", "latestVersion", "publishedVersion"];
const sameState = (a, b) => STATE_FIELDS.every((k) => (a?.[k] ?? null) === (b?.[k] ?? null));

/** What an operation proposal does: its description, for a deletion what is lost, and a
 * table of its targets (state when proposed, now, and after the apply its outcome). With
 * `drop` (the caller may drop targets), a checkbox per target and "Drop selected". */
function operationSection(p, operation, drop) {
  const instances = INSTANCE_OPERATIONS.has(p.kind);
  const targets = operation.targets || [];
  const applied = targets.some((t) => t.outcome);
  const pending = PENDING.has(p.status);
  const deletion = operation.deletion;
  const selected = new Set();
  const dropButton = drop ? h("button", {
    type: "button", class: "danger", "data-testid": "drop-targets", disabled: true,
    onclick: () => { if (selected.size && selected.size < targets.length) drop([...selected]); },
  }, "Drop selected") : null;
  const dropHint = drop ? h("span", { class: "hint", role: "status", text: "Select the targets to leave out; at least one must remain." }) : null;
  const choose = (target, checked) => {
    if (checked) selected.add(target); else selected.delete(target);
    const all = selected.size >= targets.length;
    dropButton.disabled = !selected.size || all;
    dropHint.textContent = all ? "At least one target must remain." : selected.size ? `${plural(selected.size, "target")} selected.` : "Select the targets to leave out; at least one must remain.";
  };
  let changed = 0;
  const rows = targets.map((t) => {
    const differs = !t.outcome && t.current !== undefined && t.current !== null && !sameState(t.proposed, t.current);
    if (differs) changed++;
    const outcome = t.outcome;
    // Each cell holds one element, so that on a phone it reads as a label and a value.
    const cell = (label, col, attrs, ...content) => h("td", { "data-label": label, "data-col": col, ...attrs }, h("div", {}, content));
    return h("tr", { "data-testid": "target-row", class: differs ? "stale" : null, dataset: { target: t.id, stale: differs ? "true" : "false" } },
      drop ? cell("Drop", "drop", { class: "pick" }, h("input", {
        type: "checkbox", "data-testid": "drop-target", value: t.id, "aria-label": `Drop target ${t.id}`,
        onchange: (e) => choose(t.id, e.target.checked),
      })) : null,
      cell("Target", "id", {}, h("span", { class: "mono", text: t.id })),
      cell("Workflow", "workflow", {}, `${t.definitionId} v${t.version}`),
      cell("When proposed", "proposed", {}, stateText(t.proposed, instances)),
      cell("Now", "current", {}, stateText(t.current, instances),
        differs ? h("strong", { class: "stale-note", text: pending ? "Changed since proposed: will be skipped as stale" : "Changed since proposed" }) : null),
      applied ? cell("Outcome", "outcome", { "data-testid": "target-outcome", "data-result": outcome?.result || "" },
        outcome ? [h("span", { class: `outcome ${String(outcome.result).toLowerCase()}`, text: outcome.result }),
          outcome.reason ? `: ${outcome.reason}` : "",
          outcome.newInstanceId ? h("div", {}, "New instance ", h("span", { class: "mono", "data-testid": "new-instance", text: outcome.newInstanceId })) : null]
          : "—") : null);
  });
  const header = [drop ? "Drop" : null, "Target", "Workflow", "State when proposed", "State now", applied ? "Outcome" : null]
    .filter((c) => c !== null).map((c) => h("th", { scope: "col", class: c === "Drop" ? "pick" : null, text: c }));
  return h("section", { class: "operation", "data-testid": "operation", "aria-label": `${p.kind} operation` },
    h("h3", { text: "What applying does" }),
    h("p", { class: "description", "data-testid": "operation-description", text: operation.description }),
    deletion ? h("div", { class: "loss", role: "note", "data-testid": "deletion" },
      h("strong", { text: "Deleted for good, with no undo:" }),
      h("ul", {},
        h("li", { "data-testid": "deletion-versions", text: `${plural((deletion.versions || []).length, "version")}${(deletion.versions || []).length ? `: ${deletion.versions.map((v) => `v${v}`).join(", ")}` : ""}` }),
        h("li", { "data-testid": "deletion-published", text: deletion.publishedVersion === undefined || deletion.publishedVersion === null ? "No version is published" : `The published version v${deletion.publishedVersion}: its triggers stop starting it` }),
        h("li", { "data-testid": "deletion-instances", text: `${plural(deletion.instanceCount ?? 0, "workflow instance")} of it` }))) : null,
    h("h3", { text: `Targets (${targets.length})` }),
    changed ? h("p", { class: "stale-note", role: "note", text: `${plural(changed, "target")} changed since proposed${pending ? " and will be skipped when applied" : ""}.` }) : null,
    h("table", { class: "grid targets", "data-testid": "targets" },
      h("thead", {}, h("tr", {}, header)),
      h("tbody", {}, rows)),
    drop ? h("div", { class: "actions" }, dropButton, dropHint) : null);
}

/** The workflow graph of the proposed version, with removed activities and connections
 * drawn back in: added, removed, changed and unchanged each in a colour and a shape (a
 * marker letter and a line style), so the picture reads without colour too. */
function diffGraph(definition, diff) {
  const flowchart = definition?.root || {};
  const nodes = new Map();
  const status = new Map();
  for (const a of diff.activitiesAdded || []) if (a.id) status.set(a.id, "added");
  for (const a of diff.activitiesChanged || []) if (a.id) status.set(a.id, "changed");
  for (const a of flowchart.activities || []) {
    nodes.set(a.id, { id: a.id, type: a.type, label: a.name || a.id, status: status.get(a.id) || "same", position: a.metadata?.designer?.position });
  }
  for (const a of diff.activitiesRemoved || []) {
    if (a.id && !nodes.has(a.id)) nodes.set(a.id, { id: a.id, type: a.typeName, label: a.name || a.id, status: "removed" });
  }
  const key = (c) => `${c.source.activity}:${c.source.port}>${c.target.activity}:${c.target.port}`;
  const added = new Set((diff.connectionsAdded || []).map(key));
  const edges = [];
  for (const c of flowchart.connections || []) {
    const source = typeof c.source === "string" ? { activity: c.source, port: c.sourcePort || "Done" } : { activity: c.source?.activity, port: c.source?.port || "Done" };
    const target = typeof c.target === "string" ? { activity: c.target, port: c.targetPort || "In" } : { activity: c.target?.activity, port: c.target?.port || "In" };
    edges.push({ source, target, status: added.has(key({ source, target })) ? "added" : "same" });
  }
  for (const c of diff.connectionsRemoved || []) edges.push({ source: c.source, target: c.target, status: "removed" });

  // Layered layout: each activity one column right of the furthest activity leading to it.
  const layer = new Map([...nodes.keys()].map((id) => [id, 0]));
  for (let pass = 0; pass < nodes.size; pass++) {
    let moved = false;
    for (const e of edges) {
      const from = layer.get(e.source.activity), to = layer.get(e.target.activity);
      if (from !== undefined && to !== undefined && to <= from && from < nodes.size) { layer.set(e.target.activity, from + 1); moved = true; }
    }
    if (!moved) break;
  }
  const columns = new Map();
  for (const [id, column] of layer) {
    if (!columns.has(column)) columns.set(column, []);
    columns.get(column).push(id);
  }
  // One unit is one CSS pixel: an activity is drawn at one size in a workflow of one activity
  // or of fifty, and a graph wider or taller than its region scrolls there.
  const W = 150, H = 50, GX = 40, GY = 20, PAD = 16;
  const place = new Map();
  for (const [column, ids] of columns) ids.forEach((id, row) => place.set(id, { x: PAD + column * (W + GX), y: PAD + row * (H + GY) }));
  const width = PAD * 2 + Math.max(1, columns.size) * (W + GX) - GX;
  const lowest = PAD + Math.max(1, ...[...columns.values()].map((ids) => ids.length)) * (H + GY) - GY;
  // A connection that skips a column or runs backwards would pass behind the activities in
  // between (and look like another connection): it detours below them, each on its own track.
  const detours = edges.filter((e) => {
    const a = place.get(e.source.activity), b = place.get(e.target.activity);
    return a && b && (b.x - (a.x + W) > GX || b.x <= a.x);
  });
  const height = lowest + PAD + detours.length * 12;
  const marker = { added: "+", removed: "−", changed: "~", same: "" };
  const dash = { added: "", removed: "6 4", changed: "", same: "" };

  const picture = svg("svg", {
    class: "graph", "data-testid": "diff-graph", role: "img", viewBox: `0 0 ${width} ${height}`, width, height,
    "aria-label": `Workflow graph: ${[...nodes.values()].filter((n) => n.status !== "same").map((n) => `${n.label} ${n.status}`).join(", ") || "no activity changed"}`,
  },
  svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6e7781" }))),
  edges.map((e) => {
    const a = place.get(e.source.activity), b = place.get(e.target.activity);
    if (!a || !b) return null;
    const look = {
      class: e.status, stroke: "currentColor", fill: "none",
      "stroke-width": e.status === "same" ? 1.5 : 2.5, "stroke-dasharray": dash[e.status] || null, "marker-end": "url(#arrow)",
      "data-status": e.status, "data-source": e.source.activity, "data-target": e.target.activity,
    };
    const title = svg("title", { text: `${e.source.activity}:${e.source.port} → ${e.target.activity} (${e.status})` });
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    const track = detours.indexOf(e);
    if (track < 0) return svg("line", { x1, y1, x2, y2, ...look }, title);
    const below = lowest + 8 + track * 12;
    return svg("path", { d: `M${x1},${y1} H${x1 + 14 + track * 4} V${below} H${x2 - 14 - track * 4} V${y2} H${x2}`, ...look }, title);
  }),
  [...nodes.values()].map((n) => {
    const at = place.get(n.id);
    return svg("g", { class: n.status, "data-status": n.status, "data-activity": n.id },
      svg("rect", { x: at.x, y: at.y, width: W, height: H, rx: 6, fill: "#fff", stroke: "currentColor", "stroke-width": n.status === "same" ? 1 : 2.5, "stroke-dasharray": dash[n.status] || null }),
      svg("text", { x: at.x + 8, y: at.y + 19, fill: "currentColor", "font-size": 12, "font-weight": 600, text: fitted(`${marker[n.status]} ${n.label}`.trim(), "600 12px", W - 16) }),
      svg("text", { x: at.x + 8, y: at.y + 38, fill: "#5b6475", "font-size": 11, text: fitted((n.type || "").replace(/^Elsa\./, ""), "11px", W - 16) }),
      svg("title", { text: `${n.label} (${n.type}): ${n.status}` }));
  }));
  const legend = h("p", { class: "legend" },
    h("span", { class: "added", text: "+ added" }), h("span", { class: "removed", text: "− removed (dashed)" }),
    h("span", { class: "changed", text: "~ changed" }), h("span", { class: "same", text: "unchanged" }));
  // The picture keeps its size on any screen; what does not fit scrolls within the region.
  return h("div", {}, legend, h("div", { class: "graph-scroll", role: "region", tabindex: 0, "aria-label": "Workflow graph, scrollable" }, picture));
}

let measuring = null;

/** `text` as it fits in `room` pixels in `font` (weight and size; the page's family): cut
 * short with an ellipsis when it is wider. */
function fitted(text, font, room) {
  measuring ??= document.createElement("canvas").getContext("2d");
  measuring.font = `${font} ${getComputedStyle(document.body).fontFamily}`;
  if (measuring.measureText(text).width <= room) return text;
  const chars = [...text];
  let keep = chars.length - 1;
  while (keep > 1 && measuring.measureText(`${chars.slice(0, keep).join("")}…`).width > room) keep--;
  return `${chars.slice(0, keep).join("")}…`;
}

function inputsTable(diff) {
  const rows = [];
  for (const change of diff.activitiesChanged || []) {
    for (const input of change.inputs || []) {
      rows.push(h("tr", {},
        h("td", { text: `${change.id || change.path} · ${input.name}` }),
        h("td", {}, h("pre", { text: input.before === undefined || input.before === null ? "—" : JSON.stringify(input.before, null, 2) })),
        h("td", {}, h("pre", { text: input.after === undefined || input.after === null ? "—" : JSON.stringify(input.after, null, 2) }))));
    }
  }
  if (!rows.length) return null;
  return [h("h3", { text: "Changed inputs" }), h("table", { class: "grid" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col", text: "Input" }), h("th", { scope: "col", text: "Before" }), h("th", { scope: "col", text: "After" }))),
    h("tbody", {}, rows))];
}

// ---------------------------------------------------------------- audit

async function loadAudit(event) {
  event?.preventDefault();
  const params = new URLSearchParams({ limit: "200" });
  const add = (name, value) => { if (value) params.set(name, value); };
  add("actor", $("audit-actor").value.trim());
  add("outcome", $("audit-outcome").value);
  add("conversationId", $("audit-conversation").value.trim());
  add("proposalId", $("audit-proposal").value.trim());
  add("from", $("audit-from").value && new Date($("audit-from").value).toISOString());
  add("to", $("audit-to").value && new Date($("audit-to").value).toISOString());
  const body = $("audit").tBodies[0];
  try {
    const page = await call("GET", `ai/audit?${params}`);
    body.replaceChildren(...page.items.map((r) => h("tr", { "data-testid": "audit-row", dataset: { action: r.action } },
      h("td", { text: new Date(r.timestamp).toLocaleString() }),
      h("td", { text: r.actorId }),
      h("td", { text: r.action + (r.toolName ? ` (${r.toolName})` : "") }),
      h("td", { text: r.outcome }),
      h("td", { text: r.summary }))));
  } catch (error) {
    body.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "error", text: error.message })));
  }
}

// ---------------------------------------------------------------- wiring

function wire() {
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("signin-error").textContent = "";
    forget(); // a key or token signs in afresh: no OIDC session of before may renew it
    try {
      await signIn($("api-key").value.trim());
      $("api-key").value = "";
    } catch (error) {
      $("signin-error").textContent = error.status === 401 ? "The key or token was not accepted." : error.message;
    }
  });
  $("sign-out").addEventListener("click", signOut);
  for (const button of document.querySelectorAll("#nav button")) button.addEventListener("click", () => show(button.dataset.view));
  $("attach").addEventListener("click", () => {
    const panel = $("attach-panel");
    panel.hidden = !panel.hidden;
    $("attach").setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) { $("attachment-search").focus(); searchAttachments(); }
  });
  $("attachment-search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(searchAttachments, 200); });
  $("attach-kind").addEventListener("change", searchAttachments);
  $("chat-form").addEventListener("submit", send);
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("chat-form").requestSubmit();
  });
  $("cancel").addEventListener("click", cancelTurn);
  $("new-conversation").addEventListener("click", newConversation);
  $("inbox-status").addEventListener("change", loadInbox);
  $("inbox-refresh").addEventListener("click", loadInbox);
  $("audit-form").addEventListener("submit", loadAudit);
  providers.then(renderProviders);
  const answer = new URLSearchParams(location.search);
  if (answer.has("code") || answer.has("error")) completeAuthorization(answer);
  else if (state.credential) signIn(state.credential).catch(() => show("signin"));
}

wire();
