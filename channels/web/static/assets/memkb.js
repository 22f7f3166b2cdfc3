// echogate console: the Knowledge tab (search, upload with progress, delete) and the Memory tab
// (edit, forget). Plain DOM; every value from the server is set as text, never as HTML. It uses
// console.js's helpers (window.echogateHelpers) and the admin API (cmd/echogate/admin_memkb.go).
"use strict";
(() => {
  const h = window.echogateHelpers;
  if (!h) return;
  const { el, td, clip, num, ago, api, post } = h;
  const who = h.who || ((id) => id);

  function size(n) {
    n = Number(n || 0);
    if (n < 1024) return n + " B";
    if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
    return (n / (1 << 20)).toFixed(1) + " MiB";
  }
  function button(label, onClick, cls) {
    const b = el("button", cls || "", label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }
  function table(headers, rows) {
    const tbl = el("table", "grid");
    const head = el("tr");
    for (const h of headers) head.append(el("th", "", h));
    const thead = el("thead"); thead.append(head);
    const tbody = el("tbody");
    for (const r of rows) tbody.append(r);
    tbl.append(thead, tbody);
    return tbl;
  }
  // embedLabel says which model made a document's vectors; demo ones match words, not meaning.
  function embedLabel(model) {
    if (!model) return "not recorded (re-embed: echogate knowledge reembed)";
    if (model.startsWith("demo:")) return "demo embeddings (words only, not meaning)";
    return model;
  }

  // Knowledge: search the base as the model does, list documents, delete one.
  function renderKnowledge(box, docs) {
    const form = el("form", "toolbar");
    const q = el("input");
    q.type = "search"; q.placeholder = "Search the knowledge base…"; q.setAttribute("aria-label", "Search the knowledge base");
    const go = el("button", "", "Search"); go.type = "submit";
    const results = el("div");
    form.append(q, go);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!q.value.trim()) { results.replaceChildren(); return; }
      const r = await api("api/knowledge/search?q=" + encodeURIComponent(q.value));
      if (!r.ok) { results.replaceChildren(el("p", "empty", "Search failed: " + r.error)); return; }
      const ps = r.data.passages || [];
      const list = el("div");
      if (r.data.keyword_only) list.append(el("p", "muted", "The embedding endpoint is unavailable: keyword matches only."));
      if (!ps.length) list.append(el("p", "empty", "No passage matches."));
      for (const p of ps) {
        const item = el("div", "passage");
        item.append(el("strong", "", "[" + p.doc_id + "#" + p.seq + "] " + (p.title || "") + (p.heading ? " › " + p.heading : "")));
        item.append(el("p", "muted", p.source));
        item.append(el("p", "wrap", clip(p.text, 600)));
        list.append(item);
      }
      results.replaceChildren(list);
    });
    const parts = [form, uploader(), results];
    if (!docs.length) {
      parts.push((h.prose || el)("p", "empty", "No documents yet: add files with `echogate knowledge add PATH…`."));
      box.replaceChildren(...parts);
      return;
    }
    const rows = docs.map((d) => {
      const tr = el("tr");
      tr.append(td(d.title || d.source), td(d.source, "wrap"), td(num(d.chunks)), td(size(d.bytes)),
        td(embedLabel(d.embed_model)), td(ago(d.updated_at)));
      const act = td("");
      act.append(button("Delete", async () => {
        if (!confirm("Delete " + (d.title || d.source) + " and its " + d.chunks + " passages from the knowledge base?")) return;
        const r = await post("api/knowledge/delete", { id: d.id });
        if (!r.ok) { alert("Could not delete: " + r.error); return; }
        h.reload("knowledge");
      }, "danger"));
      tr.append(act);
      tr.title = d.id + " · sha256 " + String(d.content_hash || "").slice(0, 12);
      return tr;
    });
    parts.push(table(["Title", "File", "Passages", "Size", "Embeddings", "Updated", ""], rows));
    box.replaceChildren(...parts);
  }

  // uploader adds files to the knowledge base: each file goes as base64 in a JSON body (the
  // admin API takes JSON only), with the upload's progress shown.
  function uploader() {
    const box = el("div", "toolbar");
    const input = el("input");
    input.type = "file"; input.multiple = true; input.accept = ".md,.markdown,.txt,.text,.html,.htm,.pdf";
    input.setAttribute("aria-label", "Files to add to the knowledge base");
    const bar = el("progress"); bar.max = 100; bar.value = 0; bar.hidden = true;
    const status = el("span", "muted");
    const go = button("Upload", async () => {
      const files = Array.from(input.files || []);
      if (!files.length) { status.textContent = "Choose .md, .txt, .html or .pdf files first."; return; }
      for (const [i, f] of files.entries()) {
        status.textContent = "Uploading " + f.name + " (" + (i + 1) + " of " + files.length + ")…";
        bar.hidden = false; bar.value = 0;
        const content = await new Promise((resolve, reject) => {
          const rd = new FileReader();
          rd.onload = () => resolve(String(rd.result).replace(/^data:[^,]*,/, ""));
          rd.onerror = () => reject(rd.error);
          rd.readAsDataURL(f);
        });
        const res = await new Promise((resolve) => {
          const x = new XMLHttpRequest();
          x.open("POST", "api/knowledge/upload");
          x.setRequestHeader("Content-Type", "application/json");
          x.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total); };
          x.onload = () => { let d = null; try { d = JSON.parse(x.responseText); } catch (_) { /* not JSON */ } resolve({ ok: x.status === 200, data: d }); };
          x.onerror = () => resolve({ ok: false, data: { error: "the gateway is unreachable" } });
          x.send(JSON.stringify({ name: f.name, content: content }));
        });
        if (!res.ok) { status.textContent = f.name + ": " + ((res.data && res.data.error) || "upload failed"); bar.hidden = true; return; }
      }
      bar.hidden = true;
      status.textContent = files.length + " file(s) added.";
      h.reload("knowledge");
    });
    box.append(input, go, bar, status);
    return box;
  }

  // Memory: each memory with its owner; edit its text or forget it.
  function renderMemory(box, mems) {
    if (!mems.length) { box.replaceChildren(el("p", "empty", "No memories yet.")); return; }
    const rows = mems.map((m) => {
      const tr = el("tr");
      tr.append(td(m.text, "wrap"), td(m.kind), td(who(String(m.owner || "").replace(/^user:/, ""))),
        td(m.pinned ? "pinned" : ""), td(ago(m.updated_at)));
      const act = td("");
      act.append(button("Edit", async () => {
        const text = prompt("Edit the memory:", m.text);
        if (text === null || text.trim() === "" || text === m.text) return;
        const r = await post("api/memory/edit", { id: m.id, text: text });
        if (!r.ok) { alert("Could not edit: " + r.error); return; }
        h.reload("memory");
      }), " ", button("Forget", async () => {
        if (!confirm("Forget: " + m.text + "?")) return;
        const r = await post("api/memory/forget", { id: m.id });
        if (!r.ok) { alert("Could not forget: " + r.error); return; }
        h.reload("memory");
      }, "danger"));
      tr.append(act);
      tr.title = m.id;
      return tr;
    });
    box.replaceChildren(table(["Memory", "Kind", "Whose", "", "Updated", ""], rows));
  }

  window.echogateMemKB = { renderKnowledge, renderMemory };
})();
