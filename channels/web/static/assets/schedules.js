// echogate console: the Schedules tab. Every job (the config's and those people made with the
// schedule tool): its timing, owner, agent, next run, last outcome and state, with Run now,
// Pause and Resume (GET api/schedules, POST api/schedules/{id}/run|pause|resume; see
// cmd/echogate/schedule_api.go). Plain DOM; every value from the server is set as text.
"use strict";
(() => {
  const h = window.echogateHelpers;
  if (!h) return;
  const { el, td, clip, ago, api, who } = h;
  const $ = (id) => document.getElementById(id);

  function when(t) {
    if (!t) return "";
    const d = new Date(t);
    return isNaN(d) ? String(t) : d.toLocaleString();
  }
  function button(label, onClick, cls) {
    const b = el("button", cls || "", label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }
  async function act(job, action) {
    const r = await api("api/schedules/" + encodeURIComponent(job.id) + "/" + action, { method: "POST" });
    if (!r.ok) { alert("Could not " + action + " " + (job.name || job.id) + ": " + r.error); return; }
    load();
  }

  async function load() {
    const r = await api("api/schedules");
    const body = $("schedules-table").tBodies[0];
    if (!r.ok) {
      $("schedules-empty").hidden = false;
      $("schedules-empty").textContent = "Could not list the jobs: " + r.error;
      body.replaceChildren();
      return;
    }
    const jobs = Array.isArray(r.data) ? r.data : [];
    $("schedules-empty").hidden = jobs.length > 0;
    $("schedules-empty").textContent = "No scheduled jobs: add them under schedules: in the config, or ask the agent for a reminder.";
    body.replaceChildren(...jobs.map((j) => {
      const tr = el("tr");
      tr.dataset.job = j.id;
      const name = td(j.name || j.id);
      name.title = j.id + " · " + j.deliver + " · " + clip(j.prompt || "", 200);
      let outcome = j.last_outcome || "";
      if (outcome && j.last_run_at) outcome += " (" + ago(j.last_run_at) + ")";
      const out = td(outcome, "wrap");
      if (j.last_error) out.title = j.last_error;
      const acts = td("");
      if (j.state === "paused") acts.append(button("Resume", () => act(j, "resume")));
      else if (j.state === "enabled") acts.append(button("Run now", () => act(j, "run")), " ", button("Pause", () => act(j, "pause")));
      tr.append(name, td(j.when || ""), td(who(j.owner)), td(j.agent || "default"), td(when(j.next_run)), out,
        td(j.state === "paused" ? "paused" + (j.failures ? " after " + j.failures + " failures" : "") : j.state), acts);
      return tr;
    }));
    $("schedules-updated").textContent = "updated " + new Date().toLocaleTimeString();
  }

  $("schedules-refresh").addEventListener("click", load);
  window.echogateSchedules = { load };
})();
