// echogate console: the MCP tab. Each MCP server of mcp.servers with its state (connected,
// needs login, connecting, not connected), how many tools it offers (the names in the title),
// the command that logs it in when it needs one, and its last error (GET api/mcp/servers; see
// cmd/echogate/mcp_console.go). Plain DOM; every value from the server is set as text.
"use strict";
(() => {
  const h = window.echogateHelpers;
  if (!h) return;
  const { el, td, ago, api } = h;
  const $ = (id) => document.getElementById(id);
  const pillClass = { "connected": "done", "needs login": "paused", "connecting": "running", "not connected": "error" };

  async function load() {
    const r = await api("api/mcp/servers");
    const body = $("mcp-table").tBodies[0];
    if (!r.ok) {
      $("mcp-empty").hidden = false;
      $("mcp-empty").textContent = "Could not list the MCP servers: " + r.error;
      body.replaceChildren();
      return;
    }
    const servers = Array.isArray(r.data) ? r.data : [];
    $("mcp-empty").hidden = servers.length > 0;
    $("mcp-empty").textContent = "No MCP servers: add them under mcp.servers in the config.";
    body.replaceChildren(...servers.map((s) => {
      const tr = el("tr");
      tr.dataset.server = s.name;
      const name = td(s.name);
      name.title = s.transport + " · " + s.target;
      const state = td("");
      state.append(el("span", "pill " + (pillClass[s.state] || "none"), s.state));
      if (s.since) state.title = "since " + ago(s.since);
      const tools = td(String(s.tool_count || 0), "num");
      tools.title = (s.tools || []).join(", ");
      const note = td(s.needs_login ? (s.login || "") : (s.last_error || ""), "wrap");
      if (s.needs_login && s.last_error) note.title = s.last_error;
      tr.append(name, td(s.transport || ""), td(s.auth || "none"), state, tools, note);
      return tr;
    }));
    $("mcp-updated").textContent = "updated " + new Date().toLocaleTimeString();
  }

  $("mcp-refresh").addEventListener("click", load);
  window.echogateMCP = { load };
})();
