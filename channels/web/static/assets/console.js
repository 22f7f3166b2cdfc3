// echogate console: the tabs beside the chat (turns, approvals, spend, breakers, memory,
// knowledge). Plain DOM, no dependencies; every value from the server is set as text, never as
// HTML. Data comes from the admin JSON API under api/ (see cmd/echogate/admin.go). The Spend tab
// is in spend.js, the Knowledge and Memory tabs in memkb.js.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const PANELS = ["chat", "turns", "approvals", "spend", "access", "schedules", "breakers", "memory", "knowledge", "mcp"];
  const POLL_MS = 3000;        // refresh of the visible live panel
  const BADGE_MS = 5000;       // refresh of the approvals badge when its panel is hidden

  let active = "chat";
  let pollTimer = null;
  let badgeTimer = null;
  let selectedTurn = "";
  let info = null;

  // ---- helpers ------------------------------------------------------------------------------
  function el(tag, cls, content) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined && content !== null) e.textContent = String(content);
    return e;
  }
  function td(content, cls) { return el("td", cls, content); }
  // prose is an element showing a server's message with its `code` spans as code, not as
  // backticks (the text is set as text, never as HTML).
  function prose(tag, cls, text) {
    const e = el(tag, cls);
    for (const [i, part] of String(text || "").split(/`([^`\n]+)`/).entries()) {
      e.append(i % 2 ? el("code", "", part) : document.createTextNode(part));
    }
    return e;
  }
  function pill(state, label) {
    const s = String(state || "none");
    return el("span", "pill " + s.replace(/[^a-z-]/g, ""), label || s);
  }
  // decidedPill shows a turn that paused for approval and was decided ("resumed" in the store:
  // another turn carried on) by its final state: the state of the turn of its session that
  // started next, which is the one that resumed it.
  function decidedPill(t, turns) {
    const next = turns.filter((u) => u.session === t.session && u.id !== t.id && u.started_at > t.started_at)
      .sort((a, b) => (a.started_at < b.started_at ? -1 : 1))[0];
    const p = pill(next ? next.status : "resumed", next ? "decided → " + next.status : "decided");
    p.title = "The approval was decided; the turn that resumed it " + (next ? "(" + next.id + ") ended " + next.status : "carries on") + ".";
    return p;
  }
  function clip(s, n) { s = s || ""; return s.length > n ? s.slice(0, n) + "…" : s; }
  function num(n) { return Number(n || 0).toLocaleString(); }
  // cachePct is the cache-read share of input tokens ("80%"): the part the provider read from its
  // prompt cache. "" when none was, as /usage leaves it out then.
  function cachePct(input, cached) {
    input = Number(input || 0);
    cached = Math.min(Number(cached || 0), input);
    return cached > 0 ? Math.round((100 * cached) / input) + "%" : "";
  }
  function cacheShare(input, cached) { const p = cachePct(input, cached); return p ? p + " cached" : ""; }
  function cacheTitle(input, cached) {
    return num(cached) + " of " + num(input) + " input tokens read from the provider's prompt cache";
  }
  // tokensCell renders "in / out", and " · 80% cached" when the provider's cache served some input.
  function tokensCell(u) {
    const cell = td(num(u.input_tokens) + " / " + num(u.output_tokens), "num");
    const share = cacheShare(u.input_tokens, u.cached_input_tokens);
    if (share) {
      cell.append(el("span", "muted", " · " + share));
      cell.title = cacheTitle(u.input_tokens, u.cached_input_tokens);
    }
    return cell;
  }
  // usageLine renders a ledger sum: "$0.02 · 3,600 in · 900 out · 80% cached".
  function usageLine(u) {
    const share = cacheShare(u.input_tokens, u.cached_input_tokens);
    return usd(u.cost_usd) + " · " + num(u.input_tokens) + " in · " + num(u.output_tokens) + " out" + (share ? " · " + share : "");
  }
  // sessionUsage resolves to the ledger's sum of the session (every turn, every agent), or null.
  async function sessionUsage(session) {
    const r = await api("api/usage?limit=1&session=" + encodeURIComponent(session));
    return r.ok && r.data ? r.data.total || {} : null;
  }
  function usd(v) {
    v = Number(v || 0);
    if (v === 0) return "$0";
    if (Math.abs(v) < 0.1) return "$" + String(Number(v.toPrecision(2))); // 0.018, 0.0006
    if (Math.abs(v) < 1) return "$" + v.toFixed(2);
    if (Math.abs(v) < 1000) return "$" + v.toFixed(2);
    return "$" + Math.round(v).toLocaleString();
  }
  function when(t) {
    if (!t) return "";
    const d = new Date(t);
    return isNaN(d) ? "" : d.toLocaleString();
  }
  function ago(t) {
    if (!t) return "";
    const s = Math.round((Date.now() - new Date(t).getTime()) / 1000);
    if (!isFinite(s)) return "";
    if (s < 5) return "just now";
    if (s < 60) return s + "s ago";
    if (s < 3600) return Math.floor(s / 60) + "m ago";
    if (s < 86400) return Math.floor(s / 3600) + "h ago";
    return Math.floor(s / 86400) + "d ago";
  }
  function duration(a, b) {
    if (!a || !b) return "";
    const ms = new Date(b) - new Date(a);
    if (!isFinite(ms) || ms < 0) return "";
    return ms < 1000 ? ms + " ms" : ms < 60000 ? (ms / 1000).toFixed(1) + " s" : Math.round(ms / 60000) + " min";
  }
  function stamp(id) { $(id).textContent = "updated " + new Date().toLocaleTimeString(); }
  function banner(text) {
    const b = $("banner");
    b.textContent = text || "";
    b.hidden = !text;
  }

  // api fetches a JSON endpoint. It resolves to {ok, status, data, error}; it never throws.
  async function api(path, opts) {
    let resp;
    try {
      resp = await fetch(path, opts);
    } catch (e) {
      return { ok: false, status: 0, error: "the gateway is unreachable (" + e.message + ")" };
    }
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    if (resp.status === 401) banner("Authentication required: reload the page and log in (any user name, the http.auth_token as password).");
    if (!resp.ok) {
      return { ok: false, status: resp.status, data, error: (data && data.error) || resp.status + " " + resp.statusText };
    }
    return { ok: true, status: resp.status, data };
  }
  function post(path, body) {
    return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  }

  // ---- display names ------------------------------------------------------------------------
  // The gateway learns people's names from their messages (Slack users.info, Discord authors);
  // GET api/names?ids=… returns those it knows. Known names are kept; an unknown id is asked
  // again after NAME_RETRY_MS (its name may be learned meanwhile).
  const NAME_RETRY_MS = 30000;
  const names = new Map();   // qualified id -> display name
  const askedAt = new Map(); // qualified id -> when it was last asked without an answer
  async function learnNames(ids) {
    const now = Date.now();
    const want = [...new Set(ids.filter((id) => id && id.includes(":") && !names.has(id) &&
      !(now - (askedAt.get(id) || -Infinity) < NAME_RETRY_MS)))].slice(0, 500);
    if (!want.length) return;
    const r = await api("api/names?ids=" + encodeURIComponent(want.join(",")));
    if (!r.ok) return;
    const got = (r.data && r.data.names) || {};
    for (const id of want) {
      if (got[id]) { names.set(id, got[id]); askedAt.delete(id); } else askedAt.set(id, now);
    }
  }
  // who renders a qualified id for people: "ann (slack:U123)", or the id when no name is known.
  function who(id) {
    id = String(id || "");
    const n = names.get(id);
    return n ? n + " (" + id + ")" : id;
  }

  // ---- tabs ---------------------------------------------------------------------------------
  function show(name) {
    if (!PANELS.includes(name)) name = "chat";
    active = name;
    for (const p of PANELS) {
      $("panel-" + p).hidden = p !== name;
      $("tab-" + p).setAttribute("aria-selected", p === name ? "true" : "false");
    }
    schedule(true);
    if (name === "chat") $("text").focus();
  }
  const loaders = {
    turns: loadTurns, approvals: loadApprovals, spend: () => spend.load(), access: loadAccess, breakers: loadBreakers,
    memory: () => loadFeature("memory"), knowledge: () => loadFeature("knowledge"),
    schedules: () => window.echogateSchedules && window.echogateSchedules.load(), // schedules.js
    mcp: () => window.echogateMCP && window.echogateMCP.load(), // mcp.js
  };
  const live = { turns: () => $("turns-live").checked, approvals: () => true, access: () => true, breakers: () => true, schedules: () => true, mcp: () => true };

  // schedule loads the active panel now (when asked) and then polls it while it is live and the
  // page is visible. The approvals badge refreshes on its own, slower timer.
  function schedule(now) {
    clearTimeout(pollTimer);
    pollTimer = null;
    const load = loaders[active];
    if (!load) return;
    const tick = async () => {
      if (!document.hidden) await load();
      if (live[active] && live[active]()) pollTimer = setTimeout(tick, POLL_MS);
    };
    if (now) tick();
    else if (live[active] && live[active]()) pollTimer = setTimeout(tick, POLL_MS);
  }
  async function badgeTick() {
    clearTimeout(badgeTimer);
    if (!document.hidden && active !== "approvals") await refreshBadge();
    badgeTimer = setTimeout(badgeTick, BADGE_MS);
  }
  async function refreshBadge() {
    const r = await api("api/approvals");
    if (r.ok) setBadge(countApprovals(r.data));
  }
  function countApprovals(list) { return (list || []).filter((p) => p.kind === "approval").length; }
  function setBadge(n) {
    const b = $("approvals-badge");
    b.textContent = String(n);
    b.hidden = !n;
  }

  // ---- header -------------------------------------------------------------------------------
  async function loadInfo() {
    const r = await api("api/info");
    if (!r.ok) return;
    info = r.data;
    const box = $("info");
    box.replaceChildren();
    if (info.demo) box.append(el("span", "chip demo", "DEMO MODEL"));
    box.append(el("span", "chip", "model " + info.model));
    box.append(el("span", "chip", "store " + info.store));
    box.append(el("span", "chip", (info.channels || []).join(" · ")));
    box.append(el("span", "chip", info.version));
  }

  // ---- turns --------------------------------------------------------------------------------
  async function loadTurns() {
    const session = $("turns-session").value.trim();
    const agent = $("turns-agent").value;
    const [r, su] = await Promise.all([
      api("api/turns?limit=100" + (session ? "&session=" + encodeURIComponent(session) : "") +
        (agent ? "&agent=" + encodeURIComponent(agent) : "")),
      session ? sessionUsage(session) : null,
    ]);
    if (!r.ok) { $("turns-updated").textContent = r.error; return; }
    const summary = $("turns-session-usage");
    summary.textContent = su ? "Session " + session + " (all agents): " + usageLine(su) : "";
    summary.hidden = !su;
    const turns = r.data || [];
    await learnNames(turns.map((t) => t.user_id));
    const body = $("turns-table").tBodies[0];
    const rows = turns.map((t) => {
      const tr = el("tr", "clickable" + (t.id === selectedTurn ? " selected" : ""));
      tr.dataset.turn = t.id;
      tr.tabIndex = 0;
      const started = td(ago(t.started_at));
      started.title = when(t.started_at);
      const sess = td(t.session, "mono clip");
      sess.title = t.session;
      const user = td(who(t.user_id), "clip");
      user.title = t.user_id || "";
      tr.append(started, sess, user, td(t.agent || "", "mono"));
      const st = td("");
      st.append(t.status === "resumed" ? decidedPill(t, turns) : pill(t.status));
      tr.append(st, td(t.model || "", "mono"),
        tokensCell(t),
        td(usd(t.cost_usd), "num"),
        td(t.status === "running" ? duration(t.started_at, new Date().toISOString()) : duration(t.started_at, t.ended_at), "num"));
      tr.addEventListener("click", () => selectTurn(t.id));
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectTurn(t.id); } });
      return tr;
    });
    body.replaceChildren(...rows);
    $("turns-empty").hidden = turns.length > 0;
    stamp("turns-updated");
    const sel = turns.find((t) => t.id === selectedTurn);
    if (sel && sel.status === "running") loadTurnDetail(selectedTurn); // live turn: keep its detail fresh
  }

  function selectTurn(id) {
    selectedTurn = id;
    for (const tr of $("turns-table").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.turn === id);
    loadTurnDetail(id);
  }

  async function loadTurnDetail(id) {
    const box = $("turn-detail");
    const r = await api("api/turns/detail?id=" + encodeURIComponent(id));
    if (id !== selectedTurn) return;
    if (!r.ok) { box.replaceChildren(el("p", "empty", r.error)); return; }
    const { turn: t, usage, messages } = r.data;
    const su = t.session ? await sessionUsage(t.session) : null;
    if (id !== selectedTurn) return;
    await learnNames([t.user_id]);
    if (id !== selectedTurn) return;
    const h = el("h2", "", "Turn ");
    h.append(el("span", "mono", t.id), pill(t.status));
    const kv = el("dl", "kv");
    const row = (k, v, cls) => { if (v === "" || v === undefined || v === null) return; kv.append(el("dt", "", k), el("dd", cls, v)); };
    row("Session", t.session, "mono");
    row("User", who(t.user_id));
    row("Model", t.model, "mono");
    row("Routing", t.route_reason);
    row("Skills loaded", (t.skills || []).join(", "), "mono");
    row("Started", when(t.started_at));
    row("Ended", when(t.ended_at));
    row("Duration", duration(t.started_at, t.ended_at));
    const pct = cachePct(t.input_tokens, t.cached_input_tokens);
    row("Tokens", num(t.input_tokens) + " in · " + num(t.output_tokens) + " out" +
      (pct ? " · " + num(t.cached_input_tokens) + " cached (" + pct + ")" : ""));
    row("Cost", usd(t.cost_usd));
    if (su) row("Session total", usageLine(su));
    row("Error", t.error);
    row("Event", t.event_key, "mono");
    const parts = [h, kv];
    if (t.session && t.session.startsWith("web:") && window.echogateChat) {
      const open = el("button", "", "Open in chat");
      open.type = "button";
      open.addEventListener("click", () => { location.hash = "#chat"; window.echogateChat.open(t.session.slice(4)); });
      parts.push(el("p"), open);
    }

    parts.push(el("h3", "", "Model calls"));
    if (!usage.length) parts.push(el("p", "muted", "No usage recorded for this turn."));
    else {
      const tbl = el("table", "grid");
      const head = el("tr");
      for (const c of ["Kind", "Model", "In", "Out", "Cached", "Cost", ""]) head.append(el("th", c === "In" || c === "Out" || c === "Cached" || c === "Cost" ? "num" : "", c));
      tbl.append(el("thead"), el("tbody"));
      tbl.tHead.append(head);
      for (const u of usage) {
        const x = u.usage || {};
        const tr = el("tr");
        tr.append(td(x.kind), td(x.model || "", "mono"), td(num(x.input_tokens), "num"), td(num(x.output_tokens), "num"),
          td(num(x.cached_input_tokens), "num"), td(usd(x.cost_usd), "num"), td(x.failed ? "failed" : ""));
        tbl.tBodies[0].append(tr);
      }
      parts.push(tbl);
    }

    parts.push(el("h3", "", "Events"));
    if (!messages.length) parts.push(el("p", "muted", "No transcript entries for this turn (yet)."));
    else {
      const ol = el("ol", "events");
      for (const m of messages) for (const li of eventItems(m.message || {})) ol.append(li);
      parts.push(ol);
    }
    box.replaceChildren(...parts);
  }

  // eventItems renders one transcript message as the steps it stands for.
  function eventItems(m) {
    const item = (cls, what, text) => {
      const li = el("li", cls);
      li.append(el("div", "what", what));
      if (text) li.append(el("pre", "", clip(text, 4000)));
      return li;
    };
    const out = [];
    if (m.role === "user") out.push(item("user", "user message", m.content));
    else if (m.role === "tool") {
      const li = item("result" + (m.is_error ? " failed" : ""), "tool result · " + (m.name || "tool") + (m.is_error ? " · error" : ""), m.content);
      out.push(li);
    } else if (m.role === "assistant") {
      if (m.content) out.push(item("assistant", "answer", m.content));
      for (const c of m.tool_calls || []) out.push(item("call", "tool call · " + c.name, c.arguments));
    } else out.push(item("", m.role || "message", m.content));
    return out;
  }

  // ---- approvals ----------------------------------------------------------------------------
  const decided = new Map(); // call_id -> result text, kept while the server still lists it

  async function loadApprovals() {
    const r = await api("api/approvals");
    const list = $("approvals-list");
    if (!r.ok) { $("approvals-updated").textContent = r.error; return; }
    const items = r.data || [];
    await learnNames(items.map((p) => p.requested_by));
    setBadge(countApprovals(items));
    const seen = new Set(items.map((p) => p.call_id));
    for (const k of decided.keys()) if (!seen.has(k)) decided.delete(k);
    // Keep cards whose buttons are busy; rebuild the rest.
    const cards = items.map((p) => {
      const existing = list.querySelector('[data-call="' + CSS.escape(p.call_id) + '"]');
      if (existing && existing.dataset.busy) return existing;
      return approvalCard(p);
    });
    list.replaceChildren(...cards);
    $("approvals-empty").hidden = items.length > 0;
    stamp("approvals-updated");
  }

  function approvalCard(p) {
    const card = el("article", "card");
    card.dataset.call = p.call_id;
    card.dataset.session = p.session;
    const title = el("div", "title");
    title.append(el("span", "mono", p.tool || "tool"), el("span", "pill " + (p.kind === "approval" ? "paused" : "none"), p.kind === "approval" ? "needs approval" : "asked the user"));
    card.append(title);
    const kv = el("dl", "kv");
    const row = (k, v, cls) => { if (v) kv.append(el("dt", "", k), el("dd", cls, v)); };
    row("Session", p.session, "mono");
    row("Requested by", who(p.requested_by));
    row("Asked", ago(p.created_at) + " · " + when(p.created_at));
    row("Expires", when(p.expires_at));
    row("Turn", p.turn, "mono");
    card.append(kv);
    if (p.args) card.append(el("pre", "mono", p.args));
    const result = el("div", "result");
    if (decided.has(p.call_id)) { result.textContent = decided.get(p.call_id); result.classList.add("ok"); }
    if (p.kind === "approval") {
      const actions = el("div", "actions");
      for (const [label, decision, cls] of [["Approve", "approve", "primary"], ["Approve for this conversation", "approve_session", ""], ["Deny", "deny", "danger"]]) {
        const b = el("button", cls, label);
        b.type = "button";
        b.dataset.decision = decision;
        b.disabled = decided.has(p.call_id);
        b.addEventListener("click", () => decide(card, p, decision, result));
        actions.append(b);
      }
      card.append(actions);
    } else {
      card.append(el("p", "muted", "The assistant asked a question: the user's next message in the conversation answers it."));
    }
    card.append(result);
    return card;
  }

  // decide sends a decision through the admin endpoint, which submits it through the pipeline as
  // the console's own (recorded as "console", or "console:<name>" with the name typed in
  // "Your name"), never as the user who asked or a listed approver.
  async function decide(card, p, decision, result) {
    const buttons = card.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    card.dataset.busy = "1";
    result.className = "result";
    result.textContent = "Sending…";
    const as = $("decide-as").value.trim();
    const web = p.session.startsWith("web:");
    const r = await post("api/approvals/decide", { session: p.session, call_id: p.call_id, decision, user: as });
    delete card.dataset.busy;
    if (!r.ok) {
      result.className = "result err";
      result.textContent = "Not accepted: " + r.error;
      buttons.forEach((b) => { b.disabled = false; });
      return;
    }
    const text = decision === "deny" ? "Denied — the turn continues without the tool." : "Approved — the turn resumes.";
    decided.set(p.call_id, text);
    result.className = "result ok";
    result.textContent = text;
    if (web && window.echogateChat) {
      const id = p.session.slice(4);
      window.echogateChat.markDecided(id, p.call_id, decision === "deny" ? "Denied from the console." : "Approved from the console.");
      window.echogateChat.follow(id);
    }
    setTimeout(() => { if (active === "approvals") loadApprovals(); else refreshBadge(); }, 800);
  }

  // ---- breakers -----------------------------------------------------------------------------
  async function loadBreakers() {
    const r = await api("api/breakers");
    if (!r.ok) { banner("Could not load the breakers: " + r.error); return; }
    const tools = r.data.tools || [], models = r.data.models || [];
    $("tool-breakers").tBodies[0].replaceChildren(...tools.map((t) => {
      const tr = el("tr");
      const st = td("");
      st.append(pill(t.state));
      tr.append(td(t.tool, "mono"), td(t.safety), td(t.approval), st);
      return tr;
    }));
    $("model-breakers").tBodies[0].replaceChildren(...models.map((m) => {
      const tr = el("tr");
      const st = td("");
      st.append(pill(m.state));
      const err = td(clip(m.last_error, 160), "wrap");
      if (m.last_error_at) err.title = when(m.last_error_at);
      tr.append(td(m.model, "mono"), st, td(num(m.consecutive_failures), "num"), td(num(m.calls), "num"),
        td(num(m.failures), "num"), td(num(m.skipped), "num"), td(when(m.since)), err);
      return tr;
    }));
    $("model-breakers").hidden = models.length === 0;
    $("model-breakers-empty").hidden = models.length > 0;
  }

  // ---- agents and access --------------------------------------------------------------------
  async function loadAgentOptions() {
    const r = await api("api/agents");
    if (!r.ok) return;
    const sel = $("turns-agent"), cur = sel.value;
    sel.replaceChildren(el("option", "", "all agents"), ...(r.data || []).map((a) => el("option", "", a.name)));
    sel.options[0].value = "";
    sel.value = cur;
    return r.data || [];
  }
  async function loadAccess() {
    const agents = await loadAgentOptions();
    if (agents) {
      await learnNames(agents.flatMap((a) => a.approvers || []));
      const flag = (v) => (v === undefined || v === null ? "as configured" : v ? "on" : "off");
      $("agents-table").tBodies[0].replaceChildren(...agents.map((a) => {
        const tr = el("tr");
        tr.append(td(a.name, "mono"), td(a.match && a.match.length ? a.match.join(", ") : "every other place", "wrap"),
          td(a.route ? "route " + a.route : a.model || "default", "mono"), td(a.tools ? a.tools.join(", ") || "none" : "all", "wrap"),
          td(flag(a.memory)), td(flag(a.knowledge)), td(a.budgets ? "yes" : "no"), td((a.approvers || []).map(who).join(", "), "wrap"));
        return tr;
      }));
    }
    await loadSkills();
    const r = await api("api/refusals");
    if (!r.ok) { $("access-updated").textContent = r.error; return; }
    const list = r.data || [];
    await learnNames(list.map((x) => x.user_id));
    $("refusals-table").tBodies[0].replaceChildren(...list.map((x) => {
      const tr = el("tr");
      const at = td(ago(x.at));
      at.title = when(x.at);
      tr.append(at, td(x.place, "mono"), td(who(x.user_id), "mono"), td(x.reason), td(x.replied ? "yes" : "no"));
      return tr;
    }));
    $("refusals-empty").hidden = list.length > 0;
    stamp("access-updated");
  }

  // The installed skills, the agents whose catalogue lists them, and the last load's problems.
  async function loadSkills() {
    const r = await api("api/skills");
    if (!r.ok) return;
    const list = r.data.skills || [], problems = r.data.problems || [];
    $("skills-table").tBodies[0].replaceChildren(...list.map((s) => {
      const tr = el("tr");
      tr.append(td(s.name, "mono"), td(clip(s.description, 200), "wrap"), td((s.agents || []).join(", ") || "none", "wrap"),
        td(s.allowed_tools ? s.allowed_tools.join(", ") || "only the skill tools" : "the agent's", "wrap"),
        td(num(s.files), "num"), td(s.locked ? "yes" : "no"));
      return tr;
    }));
    $("skills-table").hidden = list.length === 0;
    $("skills-empty").hidden = list.length > 0;
    $("skills-problems").replaceChildren(...problems.map((p) =>
      el("li", "", (p.warning ? "warning: " : "refused: ") + p.file + (p.field ? " (" + p.field + ")" : "") + ": " + p.error + (p.fix ? " — " + p.fix : ""))));
  }

  // ---- memory and knowledge -----------------------------------------------------------------
  async function loadFeature(name) {
    const box = $(name + "-body");
    const r = await api("api/" + name);
    if (!r.ok) {
      const p = el("div", "empty");
      if (r.status === 404 || r.status === 501) {
        p.append(el("strong", "", name[0].toUpperCase() + name.slice(1) + " is not configured."));
        p.append(prose("p", "muted", r.error));
      } else p.textContent = "Could not load " + name + ": " + r.error;
      box.replaceChildren(p);
      return;
    }
    let items = r.data;
    if (items && !Array.isArray(items)) items = items.items || items.records || items.documents || items.memories || [];
    const memkb = window.echogateMemKB;
    if (memkb && name === "knowledge") { memkb.renderKnowledge(box, items || []); return; }
    if (memkb && name === "memory") {
      await learnNames((items || []).map((m) => String(m.owner || "").replace(/^user:/, "")));
      memkb.renderMemory(box, items || []);
      return;
    }
    if (!items || !items.length) { box.replaceChildren(el("p", "empty", "Nothing stored yet.")); return; }
    const keys = [];
    for (const it of items.slice(0, 50)) for (const k of Object.keys(it || {})) if (!keys.includes(k) && keys.length < 8) keys.push(k);
    const tbl = el("table", "grid");
    tbl.append(el("thead"), el("tbody"));
    const head = el("tr");
    for (const k of keys) head.append(el("th", "", k));
    tbl.tHead.append(head);
    for (const it of items.slice(0, 500)) {
      const tr = el("tr");
      for (const k of keys) {
        let v = it[k];
        if (v !== null && typeof v === "object") v = JSON.stringify(v);
        tr.append(td(clip(v === undefined || v === null ? "" : String(v), 300), "wrap"));
      }
      tbl.tBodies[0].append(tr);
    }
    box.replaceChildren(tbl);
  }

  // The chat tab tells the console when a turn asked for approval or ended.
  window.echogateConsole = { refreshBadge };
  // memkb.js (the Knowledge and Memory tabs) uses the same helpers.
  window.echogateHelpers = { el, td, clip, num, ago, api, post, who, prose, reload: loadFeature };
  // spend.js (the Spend tab) is loaded first and built here with the helpers it needs.
  const spend = window.echogateSpend({ $, el, td, num, usd, api, cachePct, cacheShare, tokensCell });

  // ---- wiring -------------------------------------------------------------------------------
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
  document.addEventListener("visibilitychange", () => { if (!document.hidden) schedule(true); });
  $("turns-filter").addEventListener("submit", (e) => { e.preventDefault(); selectedTurn = ""; loadTurns(); });
  $("turns-live").addEventListener("change", () => schedule(false));
  $("turns-agent").addEventListener("change", () => { selectedTurn = ""; loadTurns(); });
  $("approvals-refresh").addEventListener("click", loadApprovals);
  $("spend-refresh").addEventListener("click", () => spend.load());
  $("spend-days").addEventListener("change", () => spend.load());
  $("breakers-refresh").addEventListener("click", loadBreakers);
  for (const b of document.querySelectorAll("[data-refresh]")) b.addEventListener("click", () => loadFeature(b.dataset.refresh));
  loadInfo();
  loadAgentOptions();
  show(location.hash.slice(1) || "chat");
  badgeTick();
})();
