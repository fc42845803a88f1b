// jobq web: the dashboard.  No framework: the DOM is built from text
// nodes only (never innerHTML), so a job's payload, key or error is shown
// as the text it is.  Data comes from the JSON API under /api/; actions are
// POSTs carrying the CSRF token that /api/session gives.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const main = document.getElementById("main");
const banner = document.getElementById("banner");
const STATES = ["ready", "scheduled", "waiting", "pending", "running", "done", "dead", "cancelled"];
let info = null;          // /api/session: csrf, read_only, login
let timer = null;         // the page's refresh
let clockSkew = 0;        // database clock minus this browser's

// ---------------------------------------------------------------- DOM

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  add(e, kids);
  return e;
}

function add(e, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function s(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function show(...kids) {
  main.replaceChildren();
  add(main, kids);
}

function say(text, kind) {
  banner.hidden = !text;
  banner.className = "banner " + (kind || "");
  banner.textContent = text || "";
}

// ---------------------------------------------------------------- formats

const num = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

function dur(ms) {
  if (ms === null || ms === undefined || ms < 0) return "–";
  if (ms < 1000) return Math.round(ms) + "ms";
  const sec = ms / 1000;
  if (sec < 60) return (sec < 10 ? sec.toFixed(1) : Math.round(sec)) + "s";
  const m = Math.floor(sec / 60);
  if (m < 60) return m + "m " + Math.round(sec % 60) + "s";
  const hr = Math.floor(m / 60);
  if (hr < 48) return hr + "h " + (m % 60) + "m";
  return Math.floor(hr / 24) + "d " + (hr % 24) + "h";
}

// An axis label: one number and its unit.
function durAxis(ms) {
  if (ms < 1000) return Math.round(ms) + "ms";
  if (ms < 60000) return +(ms / 1000).toFixed(1) + "s";
  if (ms < 3600000) return +(ms / 60000).toFixed(1) + "m";
  return +(ms / 3600000).toFixed(1) + "h";
}

function when(ms) {
  if (!ms) return "–";
  const d = new Date(ms);
  const pad = (x) => String(x).padStart(2, "0");
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
    pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}

function ago(ms) {
  if (!ms) return "–";
  const d = Date.now() + clockSkew - ms;
  return d >= 0 ? dur(d) + " ago" : "in " + dur(-d);
}

const badge = (text, kind) => h("span", { class: "badge " + (kind || text) }, text);
// A queue's limits in words ("at most 4 running · 1 per key · 100 started
// per 1s"), and a badge that says whether they hold the queue back now.
function limitsText(l) {
  const parts = [];
  if (l.running !== null) parts.push(`at most ${num(l.running)} running`);
  if (l.running_per_key !== null) parts.push(`${num(l.running_per_key)} per key`);
  if (l.rate !== null) parts.push(`${num(l.rate)} started per ${dur(l.rate_period_ms)}`);
  if (l.rate_per_key !== null) parts.push(`${num(l.rate_per_key)} of a key started per ${dur(l.rate_per_key_period_ms)}`);
  return parts.join(" · ");
}
const limitBadge = (l) => !l ? null : h("span", { class: "badge " + (l.held ? "held" : "limited"), title: limitsText(l) },
  l.held ? "held by limit" : "limited");
const plural = (n, one, many) => `${num(n)} ${n === 1 ? one : many}`;
// A queue in parts: their count, and a warning for those without a live
// owner (their jobs wait until a worker takes them).  Nothing for a queue
// in one part.
const partsBadges = (q) => q.parts > 1 ? [
  h("span", { class: "badge parts", title: `Split into parts: jobq parts ${q.name}` }, plural(q.parts, "part", "parts")),
  q.parts_unowned ? [" ", h("span", { class: "badge unowned", title: `${plural(q.parts_unowned, "part has", "parts have")} no live owner: their jobs wait until a worker takes them` },
    `${num(q.parts_unowned)} unowned`)] : null] : null;
// Numbers as ranges: [0, 1, 2, 3, 7] → "0–3, 7".
function ranges(list) {
  const out = [];
  for (let i = 0; i < list.length; i++) {
    let j = i;
    while (j + 1 < list.length && list[j + 1] === list[j] + 1) j++;
    out.push(j > i ? `${list[i]}–${list[j]}` : String(list[i]));
    i = j;
  }
  return out.join(", ");
}
const jobLink = (id) => h("a", { href: "#/job/" + id, class: "mono" }, "#" + id);
const queueLink = (q) => h("a", { href: "#/queue/" + encodeURIComponent(q) }, q);

function stateOf(job) {
  if (job.state === "ready" && job.run_at_ms > Date.now() + clockSkew) return "scheduled";
  return job.state;
}

// ---------------------------------------------------------------- API

class LoginNeeded extends Error {}

async function api(path) {
  const r = await fetch("/api/" + path, { credentials: "same-origin", cache: "no-store" });
  const body = await r.json().catch(() => ({ error: "the server answered " + r.status }));
  if (r.status === 401 && body.login) throw new LoginNeeded();
  if (!r.ok) throw new Error(body.error || "the server answered " + r.status);
  return body;
}

async function act(path, what) {
  try {
    const r = await fetch("/api/" + path, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": info.csrf },
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || "the server answered " + r.status);
    say(what(body), "ok");
  } catch (e) {
    say("Could not " + path.split("?")[0].replace("-", " ") + ": " + e.message, "error");
  }
  route();
}

// An action's button; none when read-only.
function button(label, path, what, kind) {
  if (info.read_only) return null;
  return h("button", { class: "small " + (kind || ""), "data-action": path.split("?")[0],
    onclick: (ev) => { ev.target.disabled = true; act(path, what); } }, label);
}

// ---------------------------------------------------------------- charts

// Bars per minute, stacked by series: [{name, color, values}], 60 values.
function barChart(series, minutes, unit) {
  const W = 600, H = 200, L = 44, B = 22, T = 10;
  const n = minutes.length;
  const totals = minutes.map((_, i) => series.reduce((a, sr) => a + sr.values[i], 0));
  const max = niceMax(Math.max(1, ...totals));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img" });
  axes(svg, max, W, H, L, B, T, minutes, unit);
  const bw = (W - L - 4) / n;
  for (let i = 0; i < n; i++) {
    let y = H - B;
    for (const sr of series) {
      const v = sr.values[i];
      if (!v) continue;
      const hgt = (v / max) * (H - B - T);
      y -= hgt;
      const r = s("rect", { x: L + i * bw + 1, y, width: Math.max(1, bw - 2), height: hgt, fill: sr.color });
      r.appendChild(s("title", {}, `${sr.name}: ${num(v)} at ${hhmm(minutes[i])}`));
      svg.appendChild(r);
    }
  }
  return chartBox(svg, series);
}

// Lines per minute: [{name, color, values}] (null: no point).
function lineChart(series, minutes, fmt) {
  const W = 600, H = 200, L = 44, B = 22, T = 10;
  const n = minutes.length;
  const all = series.flatMap((sr) => sr.values.filter((v) => v !== null));
  const max = niceMax(Math.max(1, ...all));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img" });
  axes(svg, max, W, H, L, B, T, minutes, fmt);
  const x = (i) => L + ((i + 0.5) * (W - L - 4)) / n;
  const y = (v) => H - B - (v / max) * (H - B - T);
  for (const sr of series) {
    let d = "";
    sr.values.forEach((v, i) => { if (v !== null) d += (d && sr.values[i - 1] !== null ? "L" : "M") + x(i) + "," + y(v); });
    if (d) svg.appendChild(s("path", { d, fill: "none", stroke: sr.color, "stroke-width": 2, "vector-effect": "non-scaling-stroke" }));
    sr.values.forEach((v, i) => {
      if (v === null) return;
      const c = s("circle", { cx: x(i), cy: y(v), r: 2.2, fill: sr.color });
      c.appendChild(s("title", {}, `${sr.name}: ${fmt(v)} at ${hhmm(minutes[i])}`));
      svg.appendChild(c);
    });
  }
  return chartBox(svg, series);
}

function axes(svg, max, W, H, L, B, T, minutes, fmt) {
  for (let k = 0; k <= 4; k++) {
    const v = (max * k) / 4, yy = H - B - (v / max) * (H - B - T);
    svg.appendChild(s("line", { x1: L, x2: W - 4, y1: yy, y2: yy, class: k ? "grid" : "axis" }));
    svg.appendChild(s("text", { x: L - 6, y: yy + 3.5, "text-anchor": "end" }, fmt === dur ? durAxis(v) : short(v)));
  }
  const n = minutes.length;
  for (let i = 0; i < n; i += 10) {
    const xx = L + ((i + 0.5) * (W - L - 4)) / n;
    svg.appendChild(s("text", { x: xx, y: H - 6, "text-anchor": "middle" }, hhmm(minutes[i])));
  }
}

function chartBox(svg, series) {
  return h("div", { class: "chart" }, svg,
    h("div", { class: "legend" }, series.map((sr) => {
      const dot = h("i");
      dot.style.background = sr.color;
      return h("span", {}, dot, sr.name);
    })));
}

function spark(values, color) {
  const W = 120, H = 26, max = Math.max(1, ...values), n = values.length;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "spark", preserveAspectRatio: "none" });
  let d = "";
  values.forEach((v, i) => { d += (i ? "L" : "M") + ((i * W) / (n - 1)).toFixed(1) + "," + (H - 2 - (v / max) * (H - 4)).toFixed(1); });
  svg.appendChild(s("path", { d: d + `L${W},${H}L0,${H}Z`, fill: color, opacity: 0.15 }));
  svg.appendChild(s("path", { d, fill: "none", stroke: color, "stroke-width": 1.5, "vector-effect": "non-scaling-stroke" }));
  return svg;
}

function niceMax(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
const short = (v) => (v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(v >= 1e4 ? 0 : 1) + "k" : String(Math.round(v * 10) / 10));
const hhmm = (minute) => { const d = new Date(minute * 60000); return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0"); };

// The wait (ms) below which a fraction q of the counted waits fall,
// interpolated inside its bucket.
function quantile(wait, bounds, q) {
  const total = wait.reduce((a, b) => a + b, 0);
  if (!total) return null;
  let seen = 0;
  for (let i = 0; i < wait.length; i++) {
    if (seen + wait[i] >= q * total) {
      const lo = i ? bounds[i - 1] : 0, hi = i < bounds.length ? bounds[i] : bounds[bounds.length - 1] * 2;
      return lo + ((q * total - seen) / wait[i]) * (hi - lo);
    }
    seen += wait[i];
  }
  return bounds[bounds.length - 1];
}

// The last hour's minutes, with each queue's (or all queues') figures.
function perMinute(ov, queue) {
  const last = Math.floor(ov.now_ms / 60000), minutes = [];
  for (let m = last - 59; m <= last; m++) minutes.push(m);
  const zero = () => ({ claimed: 0, done: 0, failed: 0, retried: 0, dead: 0, cancelled: 0,
    empty_claims: 0, wait_ms: 0, wait: new Array(ov.wait_bounds_ms.length + 1).fill(0) });
  const rows = minutes.map(zero);
  for (const t of ov.minutes) {
    const i = t.minute - (last - 59);
    if (i < 0 || i >= 60 || (queue !== undefined && t.queue !== queue)) continue;
    const r = rows[i];
    for (const k of ["claimed", "done", "failed", "retried", "dead", "cancelled", "empty_claims", "wait_ms"]) r[k] += t[k];
    t.wait.forEach((w, b) => { r.wait[b] += w; });
  }
  return { minutes, rows };
}

// ---------------------------------------------------------------- pages

async function overview() {
  const ov = await api("overview");
  clockSkew = ov.now_ms - Date.now();
  const { minutes, rows } = perMinute(ov);
  const sum = (k) => ov.queues.reduce((a, q) => a + q[k], 0);
  const lastTen = rows.slice(-10);
  const done10 = lastTen.reduce((a, r) => a + r.done, 0);
  const waits10 = lastTen.reduce((acc, r) => acc.map((v, i) => v + r.wait[i]), new Array(ov.wait_bounds_ms.length + 1).fill(0));
  const p95 = quantile(waits10, ov.wait_bounds_ms, 0.95);
  const oldest = Math.max(0, ...ov.queues.filter((q) => q.ready > 0).map((q) => q.oldest_ready_ms));
  const card = (label, value, sub, warn) => h("div", { class: "card" + (warn ? " warn" : "") },
    h("div", { class: "label" }, label), h("div", { class: "value" }, value), sub ? h("div", { class: "sub" }, sub) : null);

  const table = h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "Queue"), STATES.map((st) => h("th", { class: "num" }, st)),
      h("th", { class: "num" }, "Oldest ready"), h("th", {}, "Done / min, last hour"), h("th", {}, ""))),
    h("tbody", {}, ov.queues.length ? ov.queues.map((q) => {
      const qm = perMinute(ov, q.name).rows;
      return h("tr", { "data-queue": q.name },
        h("td", {}, queueLink(q.name), " ", q.paused ? badge("paused") : null, " ", limitBadge(q.limits), " ", partsBadges(q)),
        STATES.map((st) => h("td", { class: "num" }, num(q[st]))),
        h("td", { class: "num" }, q.ready ? dur(q.oldest_ready_ms) : "–"),
        h("td", {}, spark(qm.map((r) => r.done), "#1a9e5a")),
        h("td", {}, q.paused ? button("Resume", "resume?queue=" + encodeURIComponent(q.name), () => `Resumed ${q.name}`)
          : button("Pause", "pause?queue=" + encodeURIComponent(q.name), () => `Paused ${q.name}`)));
    }) : h("tr", {}, h("td", { colspan: 12, class: "empty" }, "No queue yet: put a job with  jobq put -q NAME PAYLOAD"))));

  show(
    h("h1", {}, "Overview"),
    h("div", { class: "cards" },
      card("Ready", num(sum("ready")), num(sum("scheduled")) + " scheduled"),
      card("Running", num(sum("running")), plural(ov.sessions, "live session", "live sessions")),
      card("Waiting", num(sum("waiting") + sum("pending")), num(sum("pending")) + " for the jobs they were put after"),
      card("Dead", num(sum("dead")), "until retried or pruned", sum("dead") > 0),
      card("Throughput", (done10 >= 100 ? num(Math.round(done10 / 10)) : (done10 / 10).toFixed(1)) + "/min", "done, last 10 min"),
      card("Pickup p95", p95 === null ? "–" : dur(p95), "due → claimed, last 10 min"),
      card("Oldest ready", oldest ? dur(oldest) : "–", "waiting to be claimed", oldest > 60000)),
    h("div", { class: "grid2" },
      h("div", { class: "panel" }, h("h2", {}, "Jobs finished per minute"),
        barChart([
          { name: "done", color: "#1a9e5a", values: rows.map((r) => r.done) },
          { name: "failed, retried", color: "#dc8a04", values: rows.map((r) => r.retried) },
          { name: "dead", color: "#d92d20", values: rows.map((r) => r.dead) },
          { name: "cancelled", color: "#98a2b3", values: rows.map((r) => r.cancelled) },
        ], minutes)),
      h("div", { class: "panel" }, h("h2", {}, "Pickup latency (due → claimed)"),
        lineChart([
          { name: "p50", color: "#1f6feb", values: rows.map((r) => quantile(r.wait, ov.wait_bounds_ms, 0.5)) },
          { name: "p95", color: "#7a5af8", values: rows.map((r) => quantile(r.wait, ov.wait_bounds_ms, 0.95)) },
        ], minutes, dur))),
    h("div", { class: "panel" }, h("h2", {}, "Queues"), table),
    h("p", { class: "muted small" }, `Figures per minute come from the sessions' heartbeats, kept in the database (schema ${ov.schema_version}, epoch ${ov.epoch}).`));
  return 5000;
}

async function queuePage(name, params) {
  const state = params.get("state") || "all";
  const key = params.get("key") || "";
  const after = params.get("after") || "";
  const q = new URLSearchParams({ queue: name, state, limit: 50 });
  if (key) q.set("key", key);
  if (after) q.set("after", after);
  const data = await api("queue?" + q);
  const st = data.queue || { name, paused: false, dead: 0 };
  const link = (p) => {
    const u = new URLSearchParams({ state, ...(key ? { key } : {}), ...p });
    for (const [k, v] of [...u]) if (!v) u.delete(k);
    return "#/queue/" + encodeURIComponent(name) + "?" + u;
  };
  const keyInput = h("input", { type: "text", name: "key", placeholder: "ordering key", value: key });
  const form = h("form", { onsubmit: (ev) => { ev.preventDefault(); location.hash = link({ key: keyInput.value, after: "" }); } },
    keyInput, h("button", { type: "submit" }, "Filter"));
  show(
    h("h1", {}, "Queue ", h("span", { class: "mono" }, name), st.paused ? badge("paused") : null, limitBadge(st.limits), partsBadges(st),
      h("span", { class: "spacer" }),
      h("span", { class: "actions" },
        st.paused ? button("Resume", "resume?queue=" + encodeURIComponent(name), () => `Resumed ${name}`, "primary")
          : button("Pause", "pause?queue=" + encodeURIComponent(name), () => `Paused ${name}`),
        st.dead ? button(`Retry all ${num(st.dead)} dead`, "retry-dead?queue=" + encodeURIComponent(name), (b) => `Retried ${num(b.count)} dead jobs`, "danger") : null)),
    st.limits ? h("p", { class: "muted", id: "limits" }, "Limits: ", limitsText(st.limits), " (",
      plural(st.limits.running_now, "job", "jobs"), " running",
      st.limits.rate !== null ? `, ${num(st.limits.claimed_now)} started in the last ${dur(st.limits.rate_period_ms)}` : "",
      st.limits.rate_per_key !== null ? `, ${plural(st.limits.keys_full_now, "key", "keys")} at its rate` : "",
      st.limits.held ? "; held back now" : "", "). Set with  jobq limit ", name) : null,
    h("div", { class: "cards" }, STATES.map((sn) => h("a", { class: "card", href: link({ state: sn, after: "" }) },
      h("div", { class: "label" }, sn), h("div", { class: "value" }, num(st[sn]))))),
    h("div", { class: "tabs" }, ["all", ...STATES].map((sn) => h("a", { href: link({ state: sn, after: "" }), class: sn === state ? "active" : "" }, sn)), form),
    h("div", { class: "panel" }, jobsTable(data.jobs, false),
      h("div", { class: "actions" }, after ? h("a", { href: link({ after: "" }) }, "← first page") : null,
        data.next_after ? h("a", { href: link({ after: data.next_after }) }, "next page →") : null)),
    partsPanel(st));
  return 5000;
}

// A queue's parts, where it has more than one: each one's owner, since
// when, and its ready jobs, drawn to scale so that a part that holds
// more than its share stands out; a part without a live owner is marked.
function partsPanel(st) {
  if (!(st.parts > 1)) return null;
  const most = Math.max(1, ...st.owners.map((p) => p.ready));
  const owner = (p) => p.session === null ? badge("no owner", "unowned") : [
    p.session_name === null ? null : [p.session_name, p.session_host === null ? "" : " on " + p.session_host, " "],
    h("span", { class: "mono muted", title: p.session }, p.session.slice(0, 8)),
    p.live ? null : [" ", badge("lease expired", "unowned")]];
  const bar = (p) => {
    const b = h("i");
    b.style.width = ((100 * p.ready) / most).toFixed(1) + "%";
    return h("div", { class: "bar" }, b);
  };
  return h("div", { class: "panel", id: "parts" },
    h("h2", {}, "Parts ", h("span", { class: "muted small" }, plural(st.parts, "part", "parts"), ", ",
      st.parts_unowned ? `${num(st.parts_unowned)} without a live owner` : "each with a live owner",
      ". Set with  jobq parts ", st.name, " N")),
    h("table", {},
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "Part"), h("th", {}, "Owner"), h("th", {}, "Since"),
        h("th", { class: "num" }, "Ready"), h("th", {}, ""))),
      h("tbody", {}, st.owners.map((p) => h("tr", { "data-part": p.part, class: p.live ? null : "unowned" },
        h("td", { class: "num" }, p.part), h("td", { class: "owner" }, owner(p)),
        h("td", { title: when(p.since_ms) }, ago(p.since_ms)),
        h("td", { class: "num ready" }, num(p.ready)), h("td", { class: "bars" }, bar(p)))))));
}

function jobsTable(jobs, withQueue, actions) {
  if (!jobs.length) return h("p", { class: "empty" }, "No jobs here.");
  return h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "Job"), withQueue ? h("th", {}, "Queue") : null, h("th", {}, "State"),
      h("th", {}, "Key"), h("th", { class: "num" }, "Priority"), h("th", { class: "num" }, "Attempts"),
      h("th", {}, "Created"), h("th", {}, "Last error"), actions ? h("th", {}, "") : null)),
    h("tbody", {}, jobs.map((j) => h("tr", { "data-job": j.id },
      h("td", {}, jobLink(j.id)), withQueue ? h("td", {}, queueLink(j.queue)) : null,
      h("td", {}, badge(stateOf(j))), h("td", { class: "mono" }, j.key === null ? "–" : j.key),
      h("td", { class: "num" }, j.priority), h("td", { class: "num" }, `${j.attempts} / ${j.max_attempts}`),
      h("td", { title: when(j.created_at_ms) }, ago(j.created_at_ms)),
      h("td", { class: "err", title: j.last_error || "" }, j.last_error || ""),
      actions ? h("td", {}, h("span", { class: "actions" }, actions(j))) : null))));
}

function dataBlock(label, d, kind) {
  if (!d) return null;
  return h("div", {}, h("h2", {}, label, " ", h("span", { class: "muted small" },
      `${num(d.length)} bytes${d.hex !== undefined ? ", not UTF-8: shown as hex" : ""}${d.truncated ? ", first 64 KiB" : ""}`)),
    h("pre", { class: "data " + (kind || "") }, d.text !== undefined ? d.text : d.hex));
}

// The parents (or children) of a job page's links: each a link and its state.
function linked(links, child) {
  const mine = (links || []).filter((l) => l.child === child);
  if (!mine.length) return "–";
  return mine.map((l, i) => [i ? ", " : "", jobLink(l.id), " ", badge(l.state || "pruned")]);
}

async function jobPage(id) {
  const data = await api("job?id=" + encodeURIComponent(id));
  const j = data.job, st = stateOf(j);
  const fact = (k, v) => [h("dt", {}, k), h("dd", {}, v)];
  const sess = data.session;
  const rows = data.attempts.map((a) => ({ ...a, claimed: a.claimed_at_ms, ended: a.ended_at_ms }));
  // The job's own attempt: running now, or the one that finished it.
  if (j.attempts > 0 && (st === "running" || j.finished_at_ms)) {
    rows.push({ attempt: j.attempts, outcome: st === "running" ? "running" : st, error: st === "done" ? null : j.last_error,
      session: j.session, host: sess ? sess.host : (rows.find((a) => a.session === j.session && a.host) || {}).host,
      claimed: j.claimed_at_ms, ended: j.finished_at_ms });
  }
  const finished = ["done", "dead", "cancelled"].includes(st);
  show(
    h("h1", {}, "Job ", h("span", { class: "mono" }, "#" + j.id), badge(st), j.cancel_requested && !finished ? badge("cancel requested", "retry") : null,
      h("span", { class: "spacer" }),
      h("span", { class: "actions" },
        st === "dead" || st === "cancelled" ? button("Retry", "retry?id=" + j.id, () => `Job #${j.id} will run again`, "primary") : null,
        !finished || st === "dead" ? button("Cancel", "cancel?id=" + j.id, (b) => b.now ? `Job #${j.id} cancelled` : `Cancel of job #${j.id} requested: its worker is told`, "danger") : null)),
    h("div", { class: "grid2" },
      h("div", { class: "panel" }, h("dl", { class: "facts" },
        fact("Queue", queueLink(j.queue)), fact("Key", j.key === null ? "–" : h("span", { class: "mono" }, j.key)),
        fact("Unique key", j.unique_key === null ? "–" : h("span", { class: "mono" }, j.unique_key)),
        fact("Priority", j.priority), fact("Attempts", `${j.attempts} of ${j.max_attempts}`),
        fact("Created", `${when(j.created_at_ms)} (${ago(j.created_at_ms)})`),
        fact("Runs at", when(j.run_at_ms)), fact("Last claimed", when(j.claimed_at_ms)), fact("Finished", when(j.finished_at_ms)),
        fact("Timeout", j.timeout_ms ? dur(j.timeout_ms) : "none"), fact("Barrier", j.barrier ? "yes" : "no"),
        j.part === null ? null : fact("Part", j.part),
        fact("After", linked(data.links, false)), fact("Children", linked(data.links, true)),
        fact("Session", sess ? `${sess.name} on ${sess.host} (pid ${sess.pid})` : j.session ? h("span", { class: "mono" }, j.session) : "–"))),
      h("div", { class: "panel" }, dataBlock("Payload", j.payload), j.result ? dataBlock("Result", j.result) : null,
        j.last_error && st !== "done" ? h("div", {}, h("h2", {}, "Last error"), h("pre", { class: "data error" }, j.last_error)) : null)),
    h("div", { class: "panel" }, h("h2", {}, "Attempts"),
      rows.length ? h("table", {},
        h("thead", {}, h("tr", {}, h("th", { class: "num" }, "#"), h("th", {}, "Outcome"), h("th", {}, "Machine"), h("th", {}, "Session"),
          h("th", {}, "Claimed"), h("th", {}, "Ended"), h("th", { class: "num" }, "Took"), h("th", {}, "Error"))),
        h("tbody", {}, rows.map((a) => h("tr", {},
          h("td", { class: "num" }, a.attempt || "?"), h("td", {}, badge(a.outcome)), h("td", {}, a.host || "–"),
          h("td", { class: "mono" }, a.session ? a.session.slice(0, 8) : "–"),
          h("td", {}, when(a.claimed)), h("td", {}, a.ended ? when(a.ended) : "–"),
          h("td", { class: "num" }, a.claimed && a.ended ? dur(a.ended - a.claimed) : a.claimed ? dur(Date.now() + clockSkew - a.claimed) : "–"),
          h("td", { class: "err", title: a.error || "" }, a.error || "")))))
        : h("p", { class: "empty" }, "Not run yet.")));
  return finished ? 0 : 5000;
}

async function sessionsPage() {
  const data = await api("sessions");
  clockSkew = data.now_ms - Date.now();
  const hosts = new Map();
  for (const x of data.sessions) { if (!hosts.has(x.host)) hosts.set(x.host, []); hosts.get(x.host).push(x); }
  show(h("h1", {}, "Sessions"),
    hosts.size ? [...hosts].map(([host, list]) => h("div", { class: "panel host" },
      h("h2", {}, host, h("span", { class: "muted small" }, `${plural(list.length, "session", "sessions")}, ${plural(list.reduce((a, x) => a + x.claimed, 0), "job", "jobs")} held`)),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Session"), h("th", { class: "num" }, "Pid"),
        h("th", {}, "Started"), h("th", {}, "Heartbeat"), h("th", { class: "num" }, "Lease"), h("th", { class: "num" }, "Held"),
        h("th", { class: "num" }, "In flight"), h("th", { class: "num" }, "Done"), h("th", { class: "num" }, "Failed"), h("th", {}, "Parts"),
        h("th", {}, "Jobs in flight"))),
        h("tbody", {}, list.map((x) => h("tr", { "data-session": x.id },
          h("td", {}, x.name, " ", x.expired ? badge("expired") : null), h("td", { class: "mono", title: x.id }, x.id.slice(0, 8)),
          h("td", { class: "num" }, x.pid), h("td", { title: when(x.started_at_ms) }, ago(x.started_at_ms)),
          h("td", { title: when(x.heartbeat_at_ms) }, ago(x.heartbeat_at_ms)), h("td", { class: "num" }, dur(x.lease_ms)),
          h("td", { class: "num" }, num(x.claimed)), h("td", { class: "num" }, num(x.in_flight)), h("td", { class: "num" }, num(x.done)),
          h("td", { class: "num" }, num(x.failed)),
          h("td", { class: "parts" }, Object.keys(x.parts).length ? Object.entries(x.parts).map(([q, l], i) =>
            [i ? "; " : "", queueLink(q), ": ", ranges(l)]) : "–"),
          h("td", { class: "jobs-inline" }, x.jobs.slice(0, 12).map((j) => jobLink(j.id)), x.jobs.length > 12 ? `+${x.jobs.length - 12} more` : null))))))
    ) : h("div", { class: "panel empty" }, "No session: start a worker with  jobq work -- COMMAND"));
  return 5000;
}

async function deadPage(params) {
  const queue = params.get("queue") || "";
  const after = params.get("after") || "";
  const q = new URLSearchParams({ limit: 50 });
  if (queue) q.set("queue", queue);
  if (after) q.set("after", after);
  const data = await api("dead?" + q);
  show(h("h1", {}, "Dead jobs", queue ? h("span", { class: "muted" }, " in ", queueLink(queue)) : null),
    h("p", { class: "muted" }, "Jobs that failed with no attempts left. Retry runs one again with a fresh attempt count; cancel ends it for good (and lets its ordering key go on)."),
    h("div", { class: "panel" }, jobsTable(data.jobs, true, (j) => [
      button("Retry", "retry?id=" + j.id, () => `Job #${j.id} will run again`, "primary"),
      button("Cancel", "cancel?id=" + j.id, () => `Job #${j.id} cancelled`, "danger")]),
    h("div", { class: "actions" }, data.next_after ? h("a", { href: "#/dead?" + new URLSearchParams({ ...(queue ? { queue } : {}), after: data.next_after }) }, "next page →") : null)));
  return 10000;
}

function loginPage() {
  const input = h("input", { type: "password", name: "token", placeholder: "token", autocomplete: "current-password" });
  show(h("div", { class: "panel login" }, h("h1", {}, "Log in"),
    h("p", { class: "muted" }, "This dashboard needs the token of its --token-file."),
    h("form", { onsubmit: async (ev) => {
      ev.preventDefault();
      const r = await fetch("/login", { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: input.value }) });
      if (r.ok) { info = null; say(""); route(); } else say("Wrong token.", "error");
    } }, input, h("button", { type: "submit", class: "primary" }, "Log in"))));
  input.focus();
}

// ---------------------------------------------------------------- routing

async function route() {
  clearTimeout(timer);
  const [path, query] = location.hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("header nav a"))
    a.classList.toggle("active", a.dataset.nav === (parts[0] || "overview"));
  try {
    if (!info) {
      info = await api("session");
      document.getElementById("mode").textContent = info.read_only ? "read-only" : "";
    }
    let again;
    if (parts[0] === "queue" && parts[1]) again = await queuePage(parts[1], params);
    else if (parts[0] === "job" && parts[1]) again = await jobPage(parts[1]);
    else if (parts[0] === "sessions") again = await sessionsPage();
    else if (parts[0] === "dead") again = await deadPage(params);
    else again = await overview();
    document.getElementById("clock").textContent = "updated " + new Date().toLocaleTimeString();
    if (again) timer = setTimeout(route, again);
  } catch (e) {
    if (e instanceof LoginNeeded) { info = null; loginPage(); return; }
    say("Could not load the page: " + e.message, "error");
    timer = setTimeout(route, 10000);
  }
}

window.addEventListener("hashchange", () => { say(""); route(); });
route();
