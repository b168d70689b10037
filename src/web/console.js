"use strict";
// Every value shown comes from the agent's JSON and goes into the page as
// text (textContent), never as markup.
const state = { status: null, leases: [], queue: [], events: [], received: 0, connected: false, source: null, opens: 0,
                // For tests and benchmarks: when the GPUs were first on screen
                // (ms since navigation), and each sample's age when drawn (ms).
                firstRenderMs: null, lagsMs: [],
                // Where the first render's time went (ms since navigation).
                timeline: { script: performance.now() } };

function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const GiB = 1024 ** 3;
const fmtBytes = b => b === undefined ? "–" : b >= GiB ? (b / GiB).toFixed(1) + " GiB" : (b / 1024 ** 2).toFixed(0) + " MiB";
const pct = r => r === undefined ? "–" : (100 * r).toFixed(0) + " %";
function fmtDuration(s) {
  if (s === undefined || s === null) return "–";
  s = Math.max(0, Math.round(s));
  if (s < 90) return s + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " d";
}
const fmtTime = unix => new Date(unix * 1000).toLocaleString();
function bar(ratio, text) {
  const r = ratio === undefined || isNaN(ratio) ? 0 : Math.max(0, Math.min(1, ratio));
  const fill = h("div", {});
  fill.style.width = `${(100 * r).toFixed(1)}%`;  // CSSOM: allowed under the page's style-src 'self'.
  return [h("div", { class: "bar" }, fill), h("span", { class: "muted" }, text)];
}
async function getJson(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (r.status === 401) { showLogin(); throw new Error("a token is needed"); }
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
  return j;
}

// ---- the live stream -------------------------------------------------
function connect() {
  const source = new EventSource("api/v1/stream");
  state.source = source;
  source.addEventListener("open", () => { state.connected = true; state.opens++; state.timeline.open ??= performance.now(); updateLive(); });
  source.addEventListener("error", () => {
    state.connected = false; updateLive();
    // EventSource retries by itself (the agent says after 2 s); a refusal
    // (401, 503) closes it, so try again from here.
    if (source.readyState === EventSource.CLOSED) {
      fetch("api/v1/status").then(r => { if (r.status === 401) showLogin(); }).catch(() => {});
      setTimeout(connect, 2000);
    }
  });
  source.addEventListener("status", e => {
    state.timeline.status ??= performance.now();
    state.status = JSON.parse(e.data);
    state.timeline.parsed ??= performance.now();
    state.received = Date.now();
    updateLive();
    render(false);
    const age = Date.now() - Date.parse(state.status.taken_at);  // From the sample to the screen.
    if (!isNaN(age)) state.lagsMs = state.lagsMs.concat([age]).slice(-1000);
  });
  source.addEventListener("leases", e => { const j = JSON.parse(e.data); state.leases = j.leases; state.queue = j.queue; });
  source.addEventListener("events", e => {
    state.events = state.events.concat(JSON.parse(e.data).events).slice(-500);
    if (view() === "events") render(false);
  });
}
function updateLive() {
  const live = document.getElementById("live");
  const age = state.received ? (Date.now() - state.received) / 1000 : null;
  const stale = !state.connected || age === null || age > 5;
  live.className = stale ? "stale" : "";
  live.textContent = !state.connected ? (state.received ? `reconnecting… (last sample ${fmtDuration(age)} ago)` : "connecting…")
                   : age === null ? "waiting for a sample" : stale ? `stale: last sample ${fmtDuration(age)} ago` : "live";
}
setInterval(updateLive, 1000);

function showLogin() {
  const main = document.getElementById("main");
  if (document.getElementById("token")) return;
  const input = h("input", { id: "token", type: "password", size: 40, placeholder: "token ([http] auth file)" });
  const message = h("p", { class: "error" });
  main.replaceChildren(h("h2", {}, "This agent asks for a token"),
    h("p", {}, "Paste the token from the agent's [http] auth file. It is kept in an HttpOnly cookie for this site only."),
    input, " ", h("button", { onclick: async () => {
      const r = await fetch("api/v1/login", { headers: { Authorization: "Bearer " + input.value } });
      if (r.ok) location.reload(); else message.textContent = "refused: " + (await r.text());
    } }, "Log in"), message);
}

// ---- views -----------------------------------------------------------
const view = () => (location.hash.replace("#", "").split("/")[0] || "now");
function render(fromNavigation) {
  for (const a of document.querySelectorAll("nav a")) a.className = a.dataset.view === view() ? "on" : "";
  const s = state.status;
  if (s) document.getElementById("host").textContent = "tarmac · " + (s.host || "");
  const v = view();
  // Views that fetch render on navigation only; the live ones each sample.
  if (v === "now") renderNow();
  else if (v === "leases") renderLeases();
  else if (v === "events") renderEvents();
  else if (fromNavigation && v === "gpu") renderGpu();
  else if (fromNavigation && v === "report") renderReport();
  else if (fromNavigation && v === "doctor") renderDoctor();
  else if (fromNavigation && v === "fleet") renderFleet();
}
window.addEventListener("hashchange", () => render(true));

function leaseOf(id) { return state.leases.find(l => l.id === id); }
function holderLine(g) {
  const parts = [];
  if (g.lease) {
    const l = leaseOf(g.lease.id);
    const left = l && l.ends_at_unix ? fmtDuration(l.ends_at_unix - Date.now() / 1000) + " left" : "no end";
    parts.push(h("span", {}, `lease ${g.lease.id} · ${g.lease.user} · ${g.lease.kind}`,
      g.lease.slurm_job ? ` · Slurm job ${g.lease.slurm_job}` : "", l ? ` · ${left}` : "",
      l && l.idle_seconds ? ` · idle ${fmtDuration(l.idle_seconds)}` : "", g.lease.revoking ? " · being revoked" : ""));
  }
  if (g.pod) parts.push(h("span", {}, ` pod ${g.pod.namespace}/${g.pod.name}`));
  return parts.length ? h("div", { class: "holder" }, "held by ", parts) : h("div", { class: "holder muted" }, "free");
}
function marksOf(g) {
  const m = [];
  if (g.health && g.health !== "ok") m.push(["bad", g.health + (g.error ? ": " + g.error : "")]);
  const held = (g.processes || []).some(p => p.is_idle_holding) || (g.mig_instances || []).some(i => (i.idle_holding_pids || []).length);
  if (held) m.push(["held", "held idle"]); else if (g.is_idle) m.push(["idle", "idle"]);
  if (g.xid_errors) m.push(["bad", `Xid ${g.xid_errors.last_xid} (${g.xid_errors.count})`]);
  const ecc = g.ecc_errors || {};
  if (ecc.volatile_uncorrected) m.push(["bad", `ECC uncorrected ${ecc.volatile_uncorrected}`]);
  if (g.is_pcie_degraded) m.push(["warn", `PCIe x${g.pcie_width} of x${g.pcie_width_max}`]);
  if ((g.nvlink_active || []).some(a => !a)) m.push(["warn", "NVLink down"]);
  for (const r of g.throttle_reasons || []) m.push(["warn", r.replaceAll("_", " ")]);
  return h("div", { class: "marks" }, m.map(([c, t]) => h("span", { class: "mark " + c }, t)));
}
function processTable(processes) {
  if (!processes || !processes.length) return h("div", { class: "muted" }, "no processes");
  return h("table", {}, h("tr", {}, h("th", { class: "num" }, "PID"), h("th", {}, "user"), h("th", { class: "num" }, "memory"),
    h("th", { class: "num" }, "SM"), h("th", {}, "name")),
    processes.map(p => h("tr", {}, h("td", { class: "num" }, p.pid), h("td", {}, p.user || p.uid),
      h("td", { class: "num" }, fmtBytes(p.used_memory_bytes)), h("td", { class: "num" }, pct(p.sm_utilization_ratio)),
      h("td", { title: p.command || "" }, p.name || "", p.pod ? ` (${p.namespace}/${p.pod})` : "",
        p.is_idle_holding ? h("span", { class: "mark held" }, "held idle") : ""))));
}
function gpuCard(g) {
  const mem = g.memory_total_bytes ? g.memory_used_bytes / g.memory_total_bytes : undefined;
  const power = g.power_limit_milliwatts ? g.power_milliwatts / g.power_limit_milliwatts : undefined;
  const rows = [
    ["utilization", g.utilization_gpu_ratio, pct(g.utilization_gpu_ratio)],
    ["memory", mem, `${fmtBytes(g.memory_used_bytes)} / ${fmtBytes(g.memory_total_bytes)}`],
    ["power", power, g.power_milliwatts === undefined ? "–" : `${(g.power_milliwatts / 1000).toFixed(0)} / ${((g.power_limit_milliwatts || 0) / 1000).toFixed(0)} W`],
    ["temperature", g.temperature_celsius === undefined ? undefined : g.temperature_celsius / (g.temperature_slowdown_celsius || 100),
     g.temperature_celsius === undefined ? "–" : g.temperature_celsius + " °C"],
  ];
  const clocks = g.sm_clock_hertz === undefined ? "" :
    `SM ${(g.sm_clock_hertz / 1e6).toFixed(0)} MHz · memory ${((g.memory_clock_hertz || 0) / 1e6).toFixed(0)} MHz` +
    (g.performance_state !== undefined ? ` · P${g.performance_state}` : "");
  const pidsOf = i => new Set(i.pids || []);
  return h("div", { class: "gpu", "data-gpu": g.index },
    h("h2", {}, h("a", { href: `#gpu/${g.index}` }, `GPU ${g.index}`), h("span", {}, g.name || ""), h("span", { class: "uuid" }, (g.uuid || "").slice(0, 12))),
    rows.map(([name, ratio, text]) => h("div", { class: "row" }, h("span", {}, name), bar(ratio, text))),
    clocks ? h("div", { class: "muted" }, clocks) : null,
    marksOf(g), holderLine(g),
    g.mig_enabled && g.mig_instances ? g.mig_instances.map(i => h("div", { class: "mig", "data-mig": i.uuid },
      h("div", {}, h("b", {}, `MIG ${i.profile}`), ` GI ${i.gpu_instance_id} · `, h("span", { class: "uuid" }, i.uuid.slice(0, 16)),
        ` · ${fmtBytes(i.memory_used_bytes)} / ${fmtBytes(i.memory_total_bytes)}`,
        i.lease ? ` · lease ${i.lease.id} ${i.lease.user}` : "", i.pod ? ` · pod ${i.pod.namespace}/${i.pod.name}` : ""),
      processTable((g.processes || []).filter(p => pidsOf(i).has(p.pid))))) : processTable(g.processes));
}
function renderNow() {
  const s = state.status;
  const main = document.getElementById("main");
  if (!s) { main.replaceChildren(h("p", { class: "muted" }, "waiting for the first sample…")); return; }
  const gpus = s.gpus || [];
  const idle = gpus.filter(g => g.is_idle && !g.lease).length;
  const held = gpus.filter(g => (g.processes || []).some(p => p.is_idle_holding)).length;
  main.replaceChildren(
    h("div", { class: "summary" }, `${gpus.length} GPUs · ${idle} idle and free · ${held} held idle · ${state.leases.length} leases · ${state.queue.length} queued`,
      s.backend_error ? h("div", { class: "error" }, "driver: " + s.backend_error) : null,
      ` · sample ${s.sequence || ""} at ${s.taken_at || ""}`),
    h("div", { class: "gpus" }, gpus.map(gpuCard)));
  if (gpus.length && state.firstRenderMs === null) state.firstRenderMs = performance.now();
}
function renderLeases() {
  const now = Date.now() / 1000;
  document.getElementById("main").replaceChildren(
    h("h2", {}, "Leases"),
    state.leases.length ? h("table", { id: "leases" }, h("tr", {}, ["id", "user", "kind", "GPUs", "since", "until", "idle", "command"].map(t => h("th", {}, t))),
      state.leases.map(l => h("tr", {}, h("td", {}, l.id), h("td", {}, l.user), h("td", {}, l.kind + (l.revoking_since_unix ? " (revoking)" : "")),
        h("td", {}, (l.mig_profile ? l.mig_profile + " on " : "") + (l.gpus || []).join(", ")),
        h("td", {}, fmtTime(l.granted_at_unix)), h("td", {}, l.ends_at_unix ? `${fmtTime(l.ends_at_unix)} (${fmtDuration(l.ends_at_unix - now)} left)` : "no end"),
        h("td", {}, l.idle_seconds ? fmtDuration(l.idle_seconds) : "–"), h("td", {}, l.command || ""))))
      : h("p", { class: "muted" }, "no leases"),
    h("h2", {}, "Queue"),
    state.queue.length ? h("table", { id: "queue" }, h("tr", {}, ["position", "id", "user", "wants", "waiting", "reason"].map(t => h("th", {}, t))),
      state.queue.map(q => h("tr", {}, h("td", {}, q.position), h("td", {}, q.id), h("td", {}, q.user),
        h("td", {}, q.mig_profile || (q.uuids && q.uuids.length ? q.uuids.join(", ") : `${q.gpus} GPU(s)`)),
        h("td", {}, fmtDuration(q.waiting_seconds)), h("td", {}, q.reason || ""))))
      : h("p", { class: "muted" }, "nothing queued"),
    h("h2", {}, "Backfill"), h("div", { id: "backfill" }, h("p", { class: "muted" }, "loading…")));
  getJson("api/v1/backfill").then(j => {
    const batches = (j.batches || []).filter(b => ["queued", "running", "paused"].includes(b.state));
    document.getElementById("backfill")?.replaceChildren(batches.length ? h("table", {},
      h("tr", {}, ["id", "user", "state", "model", "progress", "ETA", "preemptions"].map(t => h("th", {}, t))),
      batches.map(b => { const p = b.progress || {}; const total = p.total || b.total || 0; return h("tr", {}, h("td", {}, b.id), h("td", {}, b.user), h("td", {}, b.state),
        h("td", {}, b.model), h("td", {}, h("span", { class: "progress" }, bar(total ? (p.done || 0) / total : 0, `${p.done || 0} / ${total}`))),
        h("td", {}, b.eta_s ? fmtDuration(b.eta_s) : "–"), h("td", {}, p.preemptions || 0)); }))
      : h("p", { class: "muted" }, "no batch running"));
  }).catch(e => document.getElementById("backfill")?.replaceChildren(h("p", { class: "error" }, e.message)));
}
function eventRows(events) {
  return events.slice().reverse().map(e => h("tr", {}, h("td", {}, fmtTime(e.at_unix)), h("td", {}, e.kind),
    h("td", {}, e.lease || ""), h("td", {}, e.user || ""), h("td", {}, (e.gpus || []).join(", ")), h("td", {}, e.actor || ""), h("td", {}, e.detail || "")));
}
function renderEvents() {
  document.getElementById("main").replaceChildren(h("h2", {}, "Events"), h("table", { id: "events" },
    h("tr", {}, ["at", "kind", "lease", "user", "GPUs", "by", "detail"].map(t => h("th", {}, t))), eventRows(state.events)));
}

// A line chart of one series, at most one point per pixel (the server
// downsamples to the width asked), with events marked on the time axis.
function chart(title, rows, column, since, until, scale, unit, marks) {
  const W = 800, H = 160, pad = 30;
  const pts = rows.filter(r => r[column] !== undefined).map(r => [r.t, r[column] * scale]);
  const max = Math.max(1, ...pts.map(p => p[1]));
  const x = t => pad + (W - 2 * pad) * (t - since) / Math.max(1, until - since);
  const y = v => H - 20 - (H - 40) * v / max;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`); svg.setAttribute("class", "chart"); svg.setAttribute("data-series", column);
  const add = (tag, attrs, text) => { const e = document.createElementNS(ns, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text !== undefined) e.textContent = text; svg.append(e); return e; };
  add("text", { x: pad, y: 14, fill: "currentColor", "font-size": 12 }, `${title} (max ${max.toFixed(0)} ${unit})`);
  for (const m of marks) {
    if (m.at_unix < since || m.at_unix > until) continue;
    // Colour and a letter: what kind of event it was, not by colour alone.
    const [stroke, letter] = markStyle(m.kind);
    const l = add("line", { x1: x(m.at_unix), x2: x(m.at_unix), y1: 20, y2: H - 20, stroke, "stroke-dasharray": "3,3",
                            "stroke-width": 2, class: "event", "data-kind": m.kind });
    const tip = document.createElementNS(ns, "title");
    tip.textContent = `${fmtTime(m.at_unix)} ${m.kind} ${m.detail || ""}`;
    l.append(tip);
    add("text", { x: x(m.at_unix) + 2, y: 28, "font-size": 10, fill: stroke }, letter);
  }
  if (pts.length) add("polyline", { points: pts.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "), fill: "none", stroke: "#3b78c4", "stroke-width": 1.5 });
  else add("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "currentColor" }, "no samples in this range");
  add("text", { x: pad, y: H - 4, "font-size": 11, fill: "currentColor" }, fmtTime(since));
  add("text", { x: W - pad, y: H - 4, "font-size": 11, fill: "currentColor", "text-anchor": "end" }, fmtTime(until));
  return svg;
}
// An event's colour and letter on a chart's time axis.
function markStyle(kind) {
  if (/^(xid|gpu_lost|gpu_unreadable|driver_detached)$/.test(kind)) return ["#c62828", kind === "xid" ? "X" : "!"];
  if (kind.startsWith("throttle")) return ["#b26a00", "T"];
  if (kind.includes("preempt")) return ["#7b1fa2", "P"];
  if (kind.startsWith("doctor")) return ["#b26a00", "D"];
  return ["#5b6470", "L"];
}
async function renderGpu() {
  const [, index, range = "1h"] = location.hash.replace("#", "").split("/");
  const main = document.getElementById("main");
  main.replaceChildren(h("h2", {}, `GPU ${index}`), h("div", {}, ["1h", "24h", "7d", "30d"].map(r => h("a", { href: `#gpu/${index}/${r}`, class: "range" }, r === range ? `[${r}]` : r))),
    h("div", { id: "charts", class: "charts" }, h("p", { class: "muted" }, "loading…")));
  try {
    const points = Math.max(100, Math.min(2000, Math.round(main.clientWidth || 800)));
    const [history, events] = await Promise.all([getJson(`api/v1/history?gpu=${encodeURIComponent(index)}&since=${range}&points=${points}`),
      getJson("api/v1/events?newest=true&limit=2000").catch(() => ({ events: [] }))]);
    const until = Date.now() / 1000, since = until - { "1h": 3600, "24h": 86400, "7d": 604800, "30d": 2592000 }[range];
    // The lease journal's (grants, ends, preemptions, doctor findings) and
    // the store's (Xids, throttling, the GPU lost, the driver, the agent).
    const marks = (events.events || []).filter(e => !e.gpus || !e.gpus.length || e.gpus.includes(Number(index)))
      .concat((history.events || []).map(e => ({ at_unix: e.t, kind: e.kind, detail: e.detail })));
    const rows = history.rows.filter(r => String(r.gpu) === index || r.uuid === index);
    document.getElementById("charts").replaceChildren(
      chart("utilization", rows, "utilization_percent", since, until, 1, "%", marks),
      chart("memory", rows, "memory_used_mib", since, until, 1 / 1024, "GiB", marks),
      chart("power", rows, "power_watts", since, until, 1, "W", marks),
      chart("temperature", rows, "temperature_celsius", since, until, 1, "°C", marks),
      h("p", { class: "muted" }, `${history.tier} tier, one point per ${history.step_seconds} s`));
  } catch (e) { document.getElementById("charts").replaceChildren(h("p", { class: "error" }, e.message)); }
}
async function renderReport() {
  const main = document.getElementById("main");
  const params = new URLSearchParams(location.hash.split("?")[1] || "since=7d&by=user");
  const since = params.get("since") || "7d", by = params.get("by") || "user";
  const query = `since=${encodeURIComponent(since)}&by=${encodeURIComponent(by)}`;
  const pick = (name, values, current) => h("select", { onchange: e => { params.set(name, e.target.value); location.hash = "report?" + params; } },
    values.map(v => h("option", { value: v, selected: v === current ? "selected" : null }, v)));
  main.replaceChildren(h("h2", {}, "Report"), h("div", {}, "since ", pick("since", ["1d", "7d", "30d"], since), " by ",
    pick("by", ["user", "gpu", "container", "pod", "namespace", "slurm-job"], by), " · download ",
    h("a", { href: `api/v1/report?${query}&format=csv` }, "CSV"), " ", h("a", { href: `api/v1/report?${query}` }, "JSON")),
    h("div", { id: "report" }, h("p", { class: "muted" }, "loading…")));
  try {
    const r = await getJson(`api/v1/report?${query}`);
    document.getElementById("report").replaceChildren(h("p", { id: "verdict" }, r.verdict),
      h("table", {}, h("tr", {}, ["owner", "GPU-hours held", "busy", "held idle"].map(t => h("th", {}, t))),
        (r.owners || []).map(o => h("tr", {}, h("td", {}, o.owner), h("td", { class: "num" }, o.gpu_hours_held.toFixed(1)),
          h("td", { class: "num" }, o.gpu_hours_busy.toFixed(1)), h("td", { class: "num" }, o.held_idle_hours.toFixed(1))))),
      h("h3", {}, "Heatmap"), h("iframe", { src: `api/v1/report?${query}&format=html`, sandbox: "", title: "report" }));
  } catch (e) { document.getElementById("report").replaceChildren(h("p", { class: "error" }, e.message)); }
}
async function renderDoctor() {
  const main = document.getElementById("main");
  main.replaceChildren(h("h2", {}, "Doctor"), h("div", { id: "doctor" }, h("p", { class: "muted" }, "loading…")));
  try {
    const d = await getJson("api/v1/doctor");
    document.getElementById("doctor").replaceChildren(h("p", { class: "muted" }, `${d.runs} runs; findings of the last:`),
      h("div", {}, d.findings.length ? d.findings.map(f => h("div", { class: "finding " + f.severity }, h("b", {}, `${f.severity}: ${f.summary}`),
        f.gpu !== null ? ` (GPU ${f.gpu})` : "", h("div", {}, "evidence: ", f.evidence), h("div", {}, "meaning: ", f.meaning), h("div", {}, "next: ", f.action)))
        : h("p", {}, "nothing found: every check passed")));
  } catch (e) { document.getElementById("doctor").replaceChildren(h("p", { class: "error" }, e.message)); }
}

// ---- the fleet, from the Prometheus in [fleet] -----------------------
// A GPU's cell: its state in words as well as in colour.
function fleetCell(node, g) {
  let cls = "busy", text = pct(g.utilization_ratio);
  if (!node.up) { cls = "down"; text = "down"; }
  else if (g.lost) { cls = "lost"; text = "lost"; }
  else if (g.held_idle) { cls = "held"; text = "held"; }
  else if (g.idle) { cls = "idle"; text = "idle"; }
  const holders = (g.holders || []).map(x => `lease ${x.lease} ${x.user} (${x.kind})`).concat(g.pod ? [`pod ${g.pod}`] : []);
  const title = `GPU ${g.index} · ${g.model} · ${fmtBytes(g.memory_used_bytes)} / ${fmtBytes(g.memory_total_bytes)}` +
    (holders.length ? " · " + holders.join(", ") : "") + (g.idle_for_seconds ? ` · idle ${fmtDuration(g.idle_for_seconds)}` : "");
  return h("span", { class: "cell " + cls, title, "data-gpu": g.index, tabindex: 0, "aria-label": title }, text);
}
// The console of a node, from its Prometheus `instance` label: whatever the
// scrape configuration says, so a link only when it is a plain HOST:PORT
// that parses as one (no scheme, user, path, query or fragment of its own),
// and its title says where it goes.
function nodeConsoleUrl(instance) {
  if (typeof instance !== "string" || !/^[A-Za-z0-9.\-]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$/.test(instance)) return null;
  let url;
  try { url = new URL(`http://${instance}/`); } catch (e) { return null; }
  const port = Number(instance.slice(instance.lastIndexOf(":") + 1));
  if (url.protocol !== "http:" || url.username || url.password || url.pathname !== "/" || url.search || url.hash ||
      port < 1 || port > 65535) return null;
  return url.href;
}
function fleetNode(n) {
  const href = n.source === "tarmac" ? nodeConsoleUrl(n.instance) : null;
  const link = href ? h("a", { href, rel: "noreferrer", title: `${n.name}'s console: ${href}` }, n.name) : n.name;
  const state = n.up ? h("span", { class: "muted" }, `${n.gpus.length} GPUs`)
    : h("span", { class: "mark bad" }, n.last_seen_unix ? `DOWN since ${fmtTime(n.last_seen_unix)}` : "DOWN");
  return h("div", { class: "fleet-node", "data-node": n.name, "data-up": String(n.up) },
    h("div", { class: "fleet-name" }, link, " ", n.source !== "tarmac" ? h("span", { class: "muted" }, `(${n.source})`) : "", " ", state),
    h("div", { class: "cells" }, n.gpus.map(g => fleetCell(n, g))));
}
let fleetTimer = null, fleetReportAt = 0;
function renderFleetReport() {
  fleetReportAt = Date.now();
  const q = "since=7d&by=node";
  getJson(`api/v1/fleet/report?${q}`).then(r => document.getElementById("fleet-report")?.replaceChildren(
    h("p", { id: "fleet-verdict" }, r.verdict || ""),
    h("table", {}, h("tr", {}, ["node", "GPUs", "busy h", "idle h", "held idle h", "unknown h"].map((t, i) => h("th", { class: i ? "num" : null }, t))),
      (r.rows || []).map(x => h("tr", { "data-node": x.key }, h("td", {}, x.key), h("td", { class: "num" }, x.gpus),
        [x.busy_hours, x.idle_hours, x.held_idle_hours, x.unknown_hours].map(v => h("td", { class: "num" }, v.toFixed(1)))))),
    h("p", {}, "download ", h("a", { href: `api/v1/fleet/report?${q}&format=csv` }, "CSV"), " ",
      h("a", { href: `api/v1/fleet/report?${q}` }, "JSON"), " ",
      h("a", { href: `api/v1/fleet/report?${q}&format=html` }, "HTML with the heatmap"))))
    .catch(e => document.getElementById("fleet-report")?.replaceChildren(h("p", { class: "error" }, e.message)));
}
async function renderFleet() {
  clearTimeout(fleetTimer);
  const main = document.getElementById("main");
  if (!document.getElementById("fleet")) {
    main.replaceChildren(h("h2", {}, "Fleet"), h("div", { id: "fleet" }, h("p", { class: "muted" }, "loading…")),
      h("h2", {}, "Idle now"), h("div", { id: "fleet-idle" }),
      h("h2", {}, "Report, last 7 days by node"), h("div", { id: "fleet-report" }, h("p", { class: "muted" }, "loading…")));
    fleetReportAt = 0;
  }
  // The report once a minute; the fleet itself every 10 s.
  if (Date.now() - fleetReportAt > 60000) renderFleetReport();
  try {
    const [f, idle] = await Promise.all([getJson("api/v1/fleet"), getJson("api/v1/fleet/idle")]);
    if (view() !== "fleet") return;
    document.getElementById("fleet").replaceChildren(h("div", {},
      h("p", { id: "fleet-totals" }, f.totals.line, h("span", { class: "muted" }, ` · via ${f.prometheus}`)),
      (f.warnings || []).length ? h("p", { class: "error" }, "Prometheus says: " + f.warnings.join("; ")) : null,
      h("div", { class: "legend muted" }, ["busy", "idle", "held", "lost", "down"].map(c => h("span", { class: "cell " + c }, c)),
        " a GPU's utilization, or its state; hover for its holder"),
      f.nodes.map(fleetNode)));
    document.getElementById("fleet-idle").replaceChildren(h("div", {}, h("p", {}, idle.summary || ""),
      (idle.gpus || []).length ? h("table", {}, h("tr", {}, ["node", "GPU", "model", "state", "for", "cost", "held by"].map(t => h("th", {}, t))),
        idle.gpus.map(g => h("tr", {}, h("td", {}, g.node), h("td", {}, g.index), h("td", {}, g.model),
          h("td", {}, g.held_idle ? "held idle" : "idle"), h("td", {}, fmtDuration(g.idle_for_seconds)),
          h("td", {}, g.idle_for_cost !== undefined ? `${g.currency || ""} ${g.idle_for_cost.toFixed(2)}` : "–"),
          h("td", {}, (g.holders || []).map(x => `${x.user} (${x.kind})`).join(", ")))))
        : null));
  } catch (e) { document.getElementById("fleet")?.replaceChildren(h("p", { class: "error" }, e.message)); }
  // Prometheus is asked again while the view is open (the agent shares
  // one reading among pages).
  if (view() === "fleet") fleetTimer = setTimeout(() => { if (view() === "fleet") renderFleet(); }, 10000);
}

// The stream first: its first sample is what the page waits for.
connect();
getJson("api/v1/events?newest=true&limit=200").then(j => { state.events = j.events; if (view() === "events") render(false); }).catch(() => {});
render(true);
