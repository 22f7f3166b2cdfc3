// echogate console, chat tab: streams a turn by reading the body of POST api/chat as Server-Sent
// Events. console.js (the other tabs) talks to it through window.echogateChat.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const log = $("log"), statusLine = $("status"), text = $("text"), stopBtn = $("stop");
  const sessionInput = $("session"), userInput = $("user"), sessionList = $("sessions");
  const store = window.localStorage;
  const SESSION_RE = /^[A-Za-z0-9._-]{1,128}$/;

  let session = store.getItem("echogate.session") || newId();
  let lastEventId = 0;       // id of the last SSE event seen in this session
  let current = null;        // {bubble, text} of the turn being streamed
  let streaming = null;      // AbortController of the open stream
  let failed = false;        // the current turn reported an error (its done repeats the text)
  let asked = false;         // the current turn asked for approval (its done repeats the prompt)
  const tools = new Map();   // call_id -> details element
  const approvals = new Map(); // call_id or prompt_id -> approval element

  function newId() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }
  function el(tag, cls, content) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined) e.textContent = content;
    return e;
  }
  function add(node) {
    for (const h of log.querySelectorAll(".hint")) h.remove(); // the empty chat's hint
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    log.append(node);
    if (atBottom) log.scrollTop = log.scrollHeight;
    return node;
  }
  function setStatus(s) { statusLine.textContent = s; }

  // render shows a model answer with the little Markdown models use: ``` code blocks, `code` and
  // **bold**. It builds DOM nodes (never HTML), so the text cannot inject markup.
  function render(node, md) {
    const out = [];
    const parts = String(md || "").split(/```/);
    parts.forEach((part, i) => {
      if (i % 2 === 1) { // inside a fence; the first line may name the language
        const nl = part.indexOf("\n");
        const code = nl >= 0 && /^[\w+-]*$/.test(part.slice(0, nl)) ? part.slice(nl + 1) : part;
        const pre = el("pre", "code");
        pre.append(el("code", "", code.replace(/\n$/, "")));
        out.push(pre);
        return;
      }
      for (const [j, seg] of part.split(/(`[^`\n]+`)/).entries()) {
        if (j % 2 === 1) { out.push(el("code", "", seg.slice(1, -1))); continue; }
        for (const [k, b] of seg.split(/(\*\*[^*\n]+\*\*)/).entries()) {
          if (k % 2 === 1) out.push(el("strong", "", b.slice(2, -2)));
          else if (b) out.push(document.createTextNode(b));
        }
      }
    });
    node.replaceChildren(...out);
    return node;
  }
  function setBusy(b) {
    stopBtn.disabled = !b;
    log.setAttribute("aria-busy", b ? "true" : "false");
  }
  function user() { return userInput.value.trim(); }
  function clip(s, n) { s = s || ""; return s.length > n ? s.slice(0, n) + "…" : s; }

  function rememberSession(id) {
    let list = [];
    try { list = JSON.parse(store.getItem("echogate.sessions") || "[]"); } catch (_) { list = []; }
    list = [id, ...list.filter((x) => x !== id)].slice(0, 20);
    store.setItem("echogate.sessions", JSON.stringify(list));
    store.setItem("echogate.session", id);
    sessionList.replaceChildren(...list.map((x) => { const o = el("option"); o.value = x; return o; }));
  }

  async function apiError(resp) {
    try { const j = await resp.json(); if (j && j.error) return j.error; } catch (_) { /* not JSON */ }
    return resp.status + " " + resp.statusText;
  }

  // readSSE calls onEvent(type, data, id) for each event of a text/event-stream response body.
  async function readSSE(resp, onEvent) {
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + (buf[i] === "\r" ? 4 : 2));
        let type = "message", data = "", id = null;
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith(":")) continue;
          const c = line.indexOf(":");
          const field = c < 0 ? line : line.slice(0, c);
          const val = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
          if (field === "event") type = val;
          else if (field === "data") data += (data ? "\n" : "") + val;
          else if (field === "id") id = val;
        }
        if (!data) continue;
        let obj;
        try { obj = JSON.parse(data); } catch (_) { continue; }
        onEvent(type, obj, id);
      }
    }
  }

  function bubble() {
    if (!current) {
      current = { bubble: add(el("div", "msg assistant", "")), text: "" };
    }
    return current;
  }

  // toolRow shows a tool call (live, or from the stored history); toolResult adds its result.
  function toolRow(tool, args, callId) {
    const d = el("details", "tool");
    d.append(el("summary", "", "🔧 " + (tool || "tool") + (args ? " " + clip(args, 80) : "")));
    if (args) d.append(el("pre", "", clip(args, 4000)));
    if (callId) tools.set(callId, d);
    return add(d);
  }
  function toolResult(d, result, isError) {
    d.append(el("pre", "", "→ " + clip(result, 4000)));
    if (isError) d.classList.add("failed");
    d.querySelector("summary").textContent += isError ? "  ✗" : "  ✓";
  }

  function approvalCard(ev) {
    const key = ev.call_id || ev.prompt_id;
    if (!key || approvals.has(key)) {
      const card = approvals.get(key);
      if (card && ev.prompt_id) card.dataset.prompt = ev.prompt_id;
      return;
    }
    const card = el("section", "approval");
    card.setAttribute("aria-label", "Approval needed");
    card.dataset.call = ev.call_id || "";
    card.dataset.prompt = ev.prompt_id || "";
    if (ev.tool) {
      const title = el("div", "approval-title", "Approval needed: run ");
      title.append(el("code", "", ev.tool), document.createTextNode(ev.args ? " with" : "?"));
      card.append(title);
      if (ev.args) card.append(el("pre", "", clip(ev.args, 2000)));
      if (ev.requested_by) card.append(el("div", "meta", "Asked by " + ev.requested_by + "; they or an approver can decide."));
    } else {
      card.append(render(el("div"), ev.text || "Approval needed."));
    }
    const actions = el("div", "actions");
    for (const [label, decision] of [["Approve", "approve"], ["Approve for this conversation", "approve_session"], ["Deny", "deny"]]) {
      const b = el("button", "", label);
      b.type = "button";
      b.addEventListener("click", () => decide(card, decision));
      actions.append(b);
    }
    card.append(actions);
    approvals.set(key, card);
    add(card);
  }

  async function decide(card, decision) {
    const buttons = card.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    const body = { session, user: user(), decision };
    if (card.dataset.call) body.call_id = card.dataset.call; else body.prompt_id = card.dataset.prompt;
    try {
      let resp = await fetch("api/chat/approve", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      if (resp.status === 404 && body.call_id) {
        // The web channel forgot the session (idle or restarted): decide through the admin API,
        // which finds the pause in the store and records the decision as the console's.
        resp = await fetch("api/approvals/decide", {
          method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ session: "web:" + session, call_id: body.call_id, decision }),
        });
      }
      if (!resp.ok) {
        setStatus("Decision not accepted: " + (await apiError(resp)));
        buttons.forEach((b) => { b.disabled = false; });
        return;
      }
      card.dataset.decided = "1";
      const how = decision === "deny" ? "Denied" : decision === "approve_session" ? "Approved for this conversation" : "Approved once";
      card.append(el("div", "meta", how + " by " + (user() || "you") + "."));
      await follow(session);
    } catch (e) {
      setStatus("Decision failed: " + e.message);
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  function onEvent(type, ev, id) {
    if (id) lastEventId = Number(id);
    switch (type) {
      case "start":
        current = null;
        failed = false;
        asked = false;
        setStatus("Thinking…");
        break;
      case "delta": {
        const c = bubble();
        c.text += ev.text || "";
        render(c.bubble, c.text.replace(/^\s+/, "")); // a bubble after a tool call opens with its words
        if (log.scrollHeight - log.scrollTop - log.clientHeight < 80) log.scrollTop = log.scrollHeight;
        break;
      }
      case "reasoning":
        setStatus("Reasoning…");
        break;
      case "tool_call":
        current = null; // text after the tool call goes into a new bubble
        toolRow(ev.tool, ev.args, ev.call_id);
        setStatus("Running " + (ev.tool || "a tool") + "…");
        break;
      case "tool_result":
        toolAsked = false;
        toolResult(tools.get(ev.call_id) || toolRow(ev.tool, "", ""), ev.text, ev.is_error);
        break;
      case "approval_request":
        asked = true;
        approvalCard(ev);
        if (window.echogateConsole) window.echogateConsole.refreshBadge();
        setStatus("Waiting for approval.");
        break;
      case "ask":
        // A tool call's question (an MCP server asks) waits inside the running turn: the next
        // message answers it without leaving this turn's stream (answerQuestion).
        toolAsked = !!ev.tool && !ev.call_id;
        add(el("div", "msg ask", ev.text || ""));
        setStatus("The assistant asked a question: your next message answers it.");
        text.focus();
        break;
      case "plan":
        add(el("div", "msg plan", ev.text || ""));
        break;
      case "done": {
        toolAsked = false;
        const c = current;
        const s = ev.status || "done";
        if (failed) { failed = false; }
        else if (s === "paused" && asked) { /* the approval card shows the prompt */ }
        else if (ev.text && (!c || !c.text)) add(render(el("div", "msg assistant"), ev.text));
        else if (c && ev.text && ev.text.startsWith(c.text)) render(c.bubble, ev.text.replace(/^\s+/, ""));
        current = null;
        setStatus(s === "done" ? "" : s === "paused" ? (asked ? "Waiting for approval." : "Paused.") : s === "aborted" ? "Stopped." : "Failed.");
        if (window.echogateConsole) window.echogateConsole.refreshBadge();
        setBusy(false);
        break;
      }
      case "error":
        failed = true;
        add(el("div", "msg error", ev.text || "error"));
        current = null;
        setStatus("");
        setBusy(false);
        break;
      case "notice":
        if (ev.kind === "approval_prompt") approvalCard(ev);
        else add(render(el("div", "msg " + (ev.kind === "assistant" ? "assistant" : "notice")), ev.text || ""));
        break;
    }
  }

  async function stream(resp) {
    if (streaming) streaming.abort();
    const ctl = new AbortController();
    streaming = ctl;
    setBusy(true);
    try {
      await readSSE(resp, onEvent);
    } catch (e) {
      if (e.name !== "AbortError") setStatus("Connection lost: " + e.message + " (reload to re-attach).");
    } finally {
      if (streaming === ctl) { streaming = null; setBusy(false); }
    }
  }

  // attach re-attaches to the session's running turn, resuming after the last event seen. It
  // resolves to false when there was nothing to follow.
  async function attach() {
    const headers = lastEventId ? { "Last-Event-ID": String(lastEventId) } : {};
    const resp = await fetch("api/chat/stream?session=" + encodeURIComponent(session), { headers });
    if (resp.status === 204) return false;
    if (!resp.ok) { setStatus(await apiError(resp)); return false; }
    await stream(resp);
    return true;
  }

  // follow shows a turn that something else (the Approvals tab) started in the open session: it
  // re-attaches, retrying for a few seconds while the turn has not started yet.
  async function follow(id) {
    if (id !== session) return;
    for (let i = 0; i < 20 && id === session; i++) {
      if (streaming) return; // already attached: the stream shows it
      if (await attach()) return;
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  // markDecided marks the chat's approval card of callId as decided elsewhere.
  function markDecided(id, callId, text) {
    if (id !== session) return;
    const card = approvals.get(callId);
    if (!card || card.dataset.decided) return;
    card.dataset.decided = "1";
    card.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    card.append(el("div", "meta", text));
  }

  // answerQuestion sends the answer to a running turn's tool question; the turn's own stream
  // goes on showing the turn, this request's stream only ends with a note.
  let toolAsked = false;
  async function answerQuestion(message) {
    add(el("div", "msg user", message));
    const body = JSON.stringify({ session, user: user(), text: message, id: newId() });
    try {
      const resp = await fetch("api/chat", { method: "POST", headers: { "Content-Type": "application/json" }, body });
      if (!resp.ok) { add(el("div", "msg error", await apiError(resp))); return; }
      await readSSE(resp, (ev) => {
        if (ev.type === "done" && ev.text) add(el("div", "meta", ev.text));
        if (ev.type === "done" && !/could not read/.test(ev.text || "")) toolAsked = false;
      });
    } catch (e) {
      add(el("div", "msg error", "The answer could not be delivered: " + e.message));
    }
  }

  async function send(message) {
    if (toolAsked && streaming) return answerQuestion(message);
    add(el("div", "msg user", message));
    setBusy(true);
    setStatus("Sending…");
    const body = JSON.stringify({ session, user: user(), text: message, id: newId() });
    for (let attempt = 0; attempt < 3; attempt++) {
      let resp;
      try {
        resp = await fetch("api/chat", { method: "POST", headers: { "Content-Type": "application/json" }, body });
      } catch (e) {
        setStatus("Network error: " + e.message + "; retrying…");
        await new Promise((r) => setTimeout(r, 1000 * (attempt + 1)));
        continue;
      }
      if (resp.status === 429) {
        const wait = Math.min(Number(resp.headers.get("Retry-After")) || 1, 30);
        setStatus("Busy; retrying in " + wait + "s…");
        await new Promise((r) => setTimeout(r, wait * 1000));
        continue;
      }
      if (!resp.ok) {
        add(el("div", "msg error", await apiError(resp)));
        setStatus("");
        setBusy(false);
        return;
      }
      await stream(resp);
      return;
    }
    add(el("div", "msg error", "The message could not be delivered; try again."));
    setStatus("");
    setBusy(false);
  }

  async function open(id) {
    if (streaming) streaming.abort();
    session = id;
    sessionInput.value = id;
    rememberSession(id);
    log.replaceChildren();
    tools.clear();
    approvals.clear();
    current = null;
    lastEventId = 0;
    setStatus("");
    try {
      const resp = await fetch("api/chat/history?session=" + encodeURIComponent(id));
      if (!resp.ok) { setStatus(await apiError(resp)); return; }
      const h = await resp.json();
      for (const m of h.messages || []) {
        if (m.role === "approval_prompt") continue; // a pending one is a card below; a decided one's outcome is its tool row
        if (m.role === "tool") {
          const d = toolRow(m.tool, m.args, m.call_id);
          if (m.result) toolResult(d, m.result, m.is_error);
          continue;
        }
        const node = el("div", "msg " + (m.role === "user" || m.role === "assistant" ? m.role : "notice"));
        if (m.role === "user") node.textContent = m.text; else render(node, m.text);
        add(node);
      }
      if (!(h.messages || []).length && !(h.pending || []).length) await hint();
      for (const p of h.pending || []) approvalCard({ call_id: p.call_id, prompt_id: p.prompt_id, text: p.text, tool: p.tool, args: p.args, requested_by: p.requested_by });
      if (h.running) { lastEventId = h.last_event_id; await attach(); } else { lastEventId = h.last_event_id || 0; }
    } catch (e) {
      setStatus("Could not load the session: " + e.message);
    }
  }

  // hint fills an empty conversation with what to do first (in demo mode, the phrases the
  // offline model answers with a tool call and an approval).
  async function hint() {
    const p = el("div", "msg notice hint");
    p.append(document.createTextNode("Type a message below to start. Answers stream here; a tool call shows as a row you can open, and a call that needs approval as a card with Approve and Deny."));
    try {
      const r = await fetch("api/info");
      if (r.ok && (await r.json()).demo) {
        p.append(el("br"), document.createTextNode("Demo mode (no model configured): try "), el("code", "", "what time is it?"),
          document.createTextNode(" for a tool call, or "), el("code", "", "remind me every day to check the deploys"),
          document.createTextNode(" for an approval."));
      }
    } catch (_) { /* the hint stays generic */ }
    if (!log.children.length) log.append(p);
  }

  $("session-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const id = sessionInput.value.trim().replace(/^web:/, ""); // as the Turns tab shows it
    if (!SESSION_RE.test(id)) { setStatus("A web session id holds only letters, digits, '-', '_' and '.' (after an optional web:); Slack and Discord conversations are read in the Turns tab."); return; }
    open(id);
  });
  $("new-session").addEventListener("click", () => open(newId()));
  userInput.value = store.getItem("echogate.user") || "";
  userInput.addEventListener("change", () => store.setItem("echogate.user", user()));
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const message = text.value;
    if (!message.trim()) return;
    text.value = "";
    send(message);
  });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  stopBtn.addEventListener("click", async () => {
    stopBtn.disabled = true;
    try {
      const resp = await fetch("api/chat/stop", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ session, user: user() }),
      });
      setStatus(resp.ok ? "Stopping…" : await apiError(resp));
    } catch (e) {
      setStatus("Stop failed: " + e.message);
    }
  });
  window.echogateChat = { session: () => session, user, open, follow, markDecided };
  open(SESSION_RE.test(session) ? session : newId());
})();
