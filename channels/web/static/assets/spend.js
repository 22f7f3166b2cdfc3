// echogate console: the Spend tab (today, the month and the range against budgets, the
// cache-read share of input tokens, daily spend drawn as SVG bars, spend per agent). Plain DOM;
// every value from the server is set as text, never as HTML. Loaded before console.js, which
// builds it with its helpers: window.echogateSpend(helpers) returns { load }.
"use strict";
window.echogateSpend = (h) => {
  const { $, el, td, num, usd, api, cachePct, cacheShare, tokensCell } = h;
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, content) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (content !== undefined) e.textContent = content;
    return e;
  }

  async function loadSpend() {
    const days = $("spend-days").value;
    const [s, b] = await Promise.all([api("api/usage/series?days=" + encodeURIComponent(days)), api("api/budgets")]);
    const chart = $("spend-chart");
    if (!s.ok) { chart.replaceChildren(el("p", "empty", "Could not load the spend: " + s.error)); return; }
    const budgets = b.ok ? b.data : {};
    renderStats(s.data, budgets, Number(days));
    drawChart(chart, s.data.days || [], Number(budgets.per_day_usd || 0));
    renderBudgets(budgets, s.data);
    const since = new Date(s.data.from + "T00:00:00Z").toISOString().replace(/\.\d+Z$/, "Z");
    const u = await api("api/usage?limit=1&since=" + encodeURIComponent(since));
    const by = (u.ok && u.data.by_agent) || {};
    $("agent-spend").tBodies[0].replaceChildren(...Object.keys(by).sort().map((name) => {
      const tr = el("tr");
      tr.append(td(name, "mono"), td(usd(by[name].cost_usd), "num"), tokensCell(by[name]));
      return tr;
    }));
  }

  function stat(label, value, sub, ratio) {
    const box = el("div", "stat");
    box.append(el("div", "label", label), el("div", "value", value));
    if (sub) box.append(el("div", "sub", sub));
    if (ratio !== undefined) {
      const m = el("div", "meter" + (ratio >= 1 ? " over" : ratio >= 0.8 ? " high" : ""));
      const fill = el("span");
      fill.style.width = Math.min(100, Math.max(ratio > 0 ? 1 : 0, ratio * 100)).toFixed(1) + "%";
      m.append(fill);
      m.setAttribute("role", "meter");
      m.setAttribute("aria-valuenow", (ratio * 100).toFixed(1));
      m.setAttribute("aria-label", label + " of budget");
      box.append(m);
    }
    return box;
  }

  function renderStats(s, budgets, days) {
    const perDay = Number(budgets.per_day_usd || 0), perMonth = Number(budgets.per_month_usd || 0);
    const today = s.today || {}, month = s.month_to_date || {}, total = s.total || {};
    $("spend-cards").replaceChildren(
      stat("Today (UTC)", usd(today.cost_usd), perDay ? "of " + usd(perDay) + " daily budget" : "no daily budget", perDay ? today.cost_usd / perDay : undefined),
      stat("Month to date", usd(month.cost_usd), perMonth ? "of " + usd(perMonth) + " monthly budget" : "no monthly budget", perMonth ? month.cost_usd / perMonth : undefined),
      stat("Last " + days + " days", usd(total.cost_usd), "average " + usd((total.cost_usd || 0) / days) + " a day"),
      stat("Tokens, last " + days + " days", num((total.input_tokens || 0) + (total.output_tokens || 0)), num(total.input_tokens) + " in · " + num(total.output_tokens) + " out"),
      cacheStat(total, today, days),
    );
  }

  // cacheStat is the cache-read share of the range's input tokens, with today's.
  function cacheStat(total, today, days) {
    const pct = cachePct(total.input_tokens, total.cached_input_tokens);
    const todayPct = cachePct(today.input_tokens, today.cached_input_tokens);
    const box = stat("Cache reads, last " + days + " days", pct || (total.input_tokens ? "0%" : "—"),
      (todayPct ? "today " + todayPct + " · " : "") + num(total.cached_input_tokens) + " of " + num(total.input_tokens) + " input tokens");
    box.title = "Input tokens the provider read from its prompt cache (billed at the cached rate where one is set).";
    return box;
  }

  function renderBudgets(b, s) {
    const rows = [
      ["Per turn", b.per_turn_usd, ""], ["Per session", b.per_session_usd, ""],
      ["Per user and day", b.per_user_day_usd, ""], ["Per channel and day", b.per_channel_day_usd, ""],
      ["Per day", b.per_day_usd, s.today ? usd(s.today.cost_usd) + " spent today" : ""],
      ["Per month", b.per_month_usd, s.month_to_date ? usd(s.month_to_date.cost_usd) + " spent this month" : ""],
    ];
    const body = $("budgets-table").tBodies[0];
    body.replaceChildren(...rows.map(([k, v, note]) => {
      const tr = el("tr");
      tr.append(el("th", "", k), td(v ? usd(v) : "no limit", "num"), td(note, "muted"));
      return tr;
    }));
  }

  // drawChart draws daily spend as SVG bars with the daily budget as a dashed line. The scale
  // fits the data; a budget far above every day is named in a note instead of flattening the bars.
  function drawChart(box, days, budget) {
    const W = 860, H = 280, L = 58, R = 16, T = 22, B = 34;
    const w = W - L - R, h = H - T - B;
    const peak = days.reduce((m, d) => Math.max(m, Number(d.cost_usd || 0)), 0);
    let top = peak * 1.2;
    const budgetOnScale = budget > 0 && (peak === 0 ? true : budget <= peak * 4);
    if (budgetOnScale) top = Math.max(top, budget * 1.12);
    if (top <= 0) top = 1;
    const nice = niceStep(top / 4);
    top = Math.ceil(top / nice) * nice;
    const y = (v) => T + h - (v / top) * h;
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Daily spend in USD for the last " + days.length + " days", "data-days": days.length, "data-peak": peak });
    const axis = svg("g", { class: "axis" });
    for (let v = 0; v <= top + nice / 2; v += nice) {
      axis.append(svg("line", { class: "gridline", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      axis.append(svg("text", { x: L - 8, y: y(v) + 4, "text-anchor": "end" }, usd(v)));
    }
    s.append(axis);
    const n = Math.max(days.length, 1);
    const slot = w / n, bw = Math.max(2, Math.min(28, slot * 0.7));
    const bars = svg("g", { class: "bars" });
    const every = Math.ceil(n / 10);
    days.forEach((d, i) => {
      const v = Number(d.cost_usd || 0);
      const x = L + i * slot + (slot - bw) / 2;
      let bh = (v / top) * h;
      if (v > 0) bh = Math.max(bh, 2); // a day with any spend stays visible
      const r = svg("rect", { class: "bar" + (v > 0 ? "" : " zero"), x: x.toFixed(1), y: (T + h - Math.max(bh, 1)).toFixed(1), width: bw.toFixed(1), height: Math.max(bh, 1).toFixed(1), rx: 2, "data-day": d.day, "data-cost": v });
      const share = cacheShare(d.input_tokens, d.cached_input_tokens);
      r.setAttribute("data-cached", Number(d.cached_input_tokens || 0));
      r.append(svg("title", {}, `${d.day}: ${usd(v)} · ${num(d.input_tokens)} in / ${num(d.output_tokens)} out tokens` + (share ? ` · ${share}` : "")));
      bars.append(r);
      if (i % every === 0 || i === n - 1) {
        axis.append(svg("text", { x: (L + i * slot + slot / 2).toFixed(1), y: H - B + 16, "text-anchor": "middle" }, d.day.slice(5)));
      }
    });
    s.append(bars);
    if (budget > 0 && budgetOnScale) {
      s.append(svg("line", { class: "budget", x1: L, x2: W - R, y1: y(budget), y2: y(budget) }));
      s.append(svg("text", { class: "budget-label", x: W - R - 4, y: y(budget) - 6, "text-anchor": "end" }, "daily budget " + usd(budget)));
    } else if (budget > 0) {
      const pct = (peak / budget) * 100;
      s.append(svg("text", { class: "budget-label", x: W - R - 4, y: T - 8, "text-anchor": "end" },
        `daily budget ${usd(budget)} is off this scale (busiest day: ${pct < 0.1 ? "<0.1" : pct.toFixed(1)}% of it)`));
    }
    if (peak === 0) s.append(svg("text", { class: "note", x: L + w / 2, y: T + h / 2, "text-anchor": "middle" }, "No spend recorded in this range."));
    box.replaceChildren(s);
  }

  // niceStep rounds a raw grid step up to 1, 2 or 5 times a power of ten.
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  return { load: loadSpend };
};
