// The Now view: a card per GPU (its gauges, marks, holder, MIG instances
// and processes) under a summary line. Each sample replaces only the cards
// that would show something new (a counter the card does not show, like
// energy, changes nothing); the others stay on the page as they are.
import { bar, byId, h } from "./dom.js";
import { counted, fmtBytes, fmtBytesOf, fmtClock, fmtDuration, pct } from "./format.js";
import { noteFirst } from "./probe.js";
import { leaseOf, state } from "./state.js";

// Each card on the page, by GPU index.
const cards = new Map();

// What holds GPU `g`, in words: its lease (kind, time left, idle, revoked)
// and its pod.
function holderText(g) {
  const parts = [];
  if (g.lease) {
    const l = leaseOf(g.lease.id);
    const left = l && l.ends_at_unix ? fmtDuration(l.ends_at_unix - Date.now() / 1000) + " left" : "no end";
    parts.push(`lease ${g.lease.id} · ${g.lease.user} · ${g.lease.kind}` +
      (g.lease.slurm_job ? ` · Slurm job ${g.lease.slurm_job}` : "") + (l ? ` · ${left}` : "") +
      (l && l.idle_seconds ? ` · idle ${fmtDuration(l.idle_seconds)}` : "") + (g.lease.revoking ? " · being revoked" : ""));
  }
  if (g.pod) parts.push(` pod ${g.pod.namespace}/${g.pod.name}`);
  return parts;
}

// Who holds the GPU; without a holder, "free" only when nothing runs there.
function holderLine(g, parts) {
  if (parts.length) return h("div", { class: "holder" }, "held by ", parts.map(p => h("span", {}, p)));
  return h("div", { class: "holder muted" }, (g.processes || []).length ? "no lease" : "free");
}

function marksOf(g) {
  const m = [];
  // The health verdict allocation obeys (docs/health.md): to drain, first.
  if (g.verdict === "drain") {
    m.push(["bad", g.drained ? `DRAIN (drained by ${g.drained.by}: ${g.drained.reason})` : "DRAIN"]);
  } else if (g.verdict === "degraded") {
    m.push(["warn", "degraded"]);
  }
  if (g.health && g.health !== "ok") m.push(["bad", g.health + (g.error ? ": " + g.error : "")]);
  const held = (g.processes || []).some(p => p.is_idle_holding) ||
    (g.mig_instances || []).some(i => (i.idle_holding_pids || []).length);
  if (held) m.push(["held", "held idle"]);
  else if (g.is_idle) m.push(["idle", "idle"]);
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

function gauges(g) {
  const mem = g.memory_total_bytes ? g.memory_used_bytes / g.memory_total_bytes : undefined;
  const power = g.power_limit_milliwatts ? g.power_milliwatts / g.power_limit_milliwatts : undefined;
  const watts = mw => ((mw || 0) / 1000).toFixed(0);
  const hot = g.temperature_celsius === undefined ? undefined : g.temperature_celsius / (g.temperature_slowdown_celsius || 100);
  return [
    ["utilization", g.utilization_gpu_ratio, pct(g.utilization_gpu_ratio)],
    ["memory", mem, fmtBytesOf(g.memory_used_bytes, g.memory_total_bytes)],
    ["power", power, g.power_milliwatts === undefined ? "–" : `${watts(g.power_milliwatts)} / ${watts(g.power_limit_milliwatts)} W`],
    ["temperature", hot, g.temperature_celsius === undefined ? "–" : g.temperature_celsius + " °C"],
  ].map(([name, ratio, text]) => h("div", { class: "row" }, h("span", {}, name), bar(ratio, text)));
}

function migInstance(g, i) {
  const pids = new Set(i.pids || []);
  return h("div", { class: "mig", "data-mig": i.uuid },
    h("div", {}, h("b", {}, `MIG ${i.profile}`), ` GI ${i.gpu_instance_id} · `, h("span", { class: "uuid" }, i.uuid.slice(0, 16)),
      ` · ${fmtBytesOf(i.memory_used_bytes, i.memory_total_bytes)}`,
      i.lease ? ` · lease ${i.lease.id} ${i.lease.user}` : "", i.pod ? ` · pod ${i.pod.namespace}/${i.pod.name}` : ""),
    processTable((g.processes || []).filter(p => pids.has(p.pid))));
}

function gpuCard(g, holder) {
  const clocks = g.sm_clock_hertz === undefined ? "" :
    `SM ${(g.sm_clock_hertz / 1e6).toFixed(0)} MHz · memory ${((g.memory_clock_hertz || 0) / 1e6).toFixed(0)} MHz` +
    (g.performance_state !== undefined ? ` · P${g.performance_state}` : "");
  return h("div", { class: "gpu", "data-gpu": g.index },
    h("h2", {}, h("a", { href: `#gpu/${g.index}` }, `GPU ${g.index}`), h("span", {}, g.name || ""),
      h("span", { class: "uuid" }, (g.uuid || "").slice(0, 12))),
    gauges(g), clocks ? h("div", { class: "muted" }, clocks) : null, marksOf(g), holderLine(g, holder),
    g.mig_enabled && g.mig_instances ? g.mig_instances.map(i => migInstance(g, i)) : processTable(g.processes));
}

function summaryOf(s) {
  const gpus = s.gpus || [];
  const idle = gpus.filter(g => g.is_idle && !g.lease).length;
  const held = gpus.filter(g => (g.processes || []).some(p => p.is_idle_holding)).length;
  const taken = Date.parse(s.taken_at || "");
  return [`${counted(gpus.length, "GPU")} · ${idle} idle and free · ${held} held idle · ${counted(state.leases.length, "lease")} · ${state.queue.length} queued`,
    ` · sample ${s.sequence || ""}` + (Number.isNaN(taken) ? "" : ` at ${fmtClock(taken / 1000)}`),
    s.backend_error ? h("div", { class: "error" }, "driver: " + s.backend_error) : null].filter(x => x !== null);
}

export function renderNow() {
  const s = state.status;
  const main = byId("main");
  if (!s) {
    main.replaceChildren(h("p", { class: "muted" }, "waiting for the first sample…"));
    cards.clear();
    return;
  }
  const gpus = s.gpus || [];
  const grid = byId("gpus");
  if (!grid) {
    // The first drawing: every card built apart, then put on the page at once.
    cards.clear();
    for (const g of gpus) cards.set(g.index, gpuCard(g, holderText(g)));
    main.replaceChildren(h("div", { class: "summary", id: "summary" }, summaryOf(s)),
      h("div", { class: "gpus", id: "gpus" }, [...cards.values()]));
    if (gpus.length) noteFirst("firstRenderMs");
    return;
  }
  byId("summary").replaceChildren(...summaryOf(s));
  const shown = new Set();
  gpus.forEach((g, position) => {
    const drawn = gpuCard(g, holderText(g));
    let card = cards.get(g.index);
    if (!card || !card.isEqualNode(drawn)) {
      if (card) card.replaceWith(drawn);
      card = drawn;
      cards.set(g.index, card);
    }
    if (grid.children[position] !== card) grid.insertBefore(card, grid.children[position] || null);
    shown.add(g.index);
  });
  for (const [index, card] of cards) {
    if (shown.has(index)) continue;
    card.remove();
    cards.delete(index);
  }
  if (gpus.length) noteFirst("firstRenderMs");
}
