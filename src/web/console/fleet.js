// The Fleet view, from the Prometheus in [fleet]: each node's GPUs as
// cells, the idle ones with what their idle time costs, and the report of
// the last 7 days by node. Asked again every 10 s while open (the agent
// shares one reading among pages), the report once a minute.
import { getJson } from "./api.js";
import { byId, fill, h, table } from "./dom.js";
import { fmtBytes, fmtDuration, fmtHours, fmtTime, pct } from "./format.js";

let fleetTimer = null;
let reportAt = 0;

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
export function nodeConsoleUrl(instance) {
  if (typeof instance !== "string" || !/^[A-Za-z0-9.-]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$/.test(instance)) return null;
  let url;
  try {
    url = new URL(`http://${instance}/`);
  } catch {
    return null;
  }
  const port = Number(instance.slice(instance.lastIndexOf(":") + 1));
  if (url.protocol !== "http:" || url.username || url.password || url.pathname !== "/" || url.search || url.hash ||
      port < 1 || port > 65535) return null;
  return url.href;
}

function fleetNode(n) {
  const href = n.source === "tarmac" ? nodeConsoleUrl(n.instance) : null;
  const link = href ? h("a", { href, rel: "noreferrer", title: `${n.name}'s console: ${href}` }, n.name) : n.name;
  const up = n.up ? h("span", { class: "muted" }, `${n.gpus.length} GPUs`)
    : h("span", { class: "mark bad" }, n.last_seen_unix ? `DOWN since ${fmtTime(n.last_seen_unix)}` : "DOWN");
  return h("div", { class: "fleet-node", "data-node": n.name, "data-up": String(n.up) },
    h("div", { class: "fleet-name" }, link, " ", n.source !== "tarmac" ? h("span", { class: "muted" }, `(${n.source})`) : "", " ", up),
    h("div", { class: "cells" }, n.gpus.map(g => fleetCell(n, g))));
}

// The Fleet view of an agent without [fleet]: how to give it one, not an error.
function fleetSetup() {
  byId("main").replaceChildren(h("h2", {}, "Fleet"), h("div", { id: "fleet" },
    h("p", {}, "This agent reads no fleet yet. The Fleet view shows every node's GPUs from a Prometheus that scrapes " +
      "each node's agent: set its address in the agent's configuration (/etc/tarmac/tarmac.toml), then restart the agent."),
    h("pre", {}, '[fleet]\nprometheus_url = "http://prometheus:9090"'),
    h("p", { class: "muted" }, "docs/fleet.md says how to scrape the nodes; tarmac fleet status reads the same Prometheus.")));
}

function renderFleetReport() {
  reportAt = Date.now();
  const q = "since=7d&by=node";
  getJson(`api/v1/fleet/report?${q}`).then(r => fill("fleet-report",
    h("p", { id: "fleet-verdict" }, r.verdict || ""),
    h("table", {}, h("tr", {}, ["node", "GPUs", "busy", "idle", "held idle", "unknown"].map((t, i) => h("th", { class: i ? "num" : null }, t))),
      (r.rows || []).map(x => h("tr", { "data-node": x.key }, h("td", {}, x.key), h("td", { class: "num" }, x.gpus),
        [x.busy_hours, x.idle_hours, x.held_idle_hours, x.unknown_hours].map(v => h("td", { class: "num" }, fmtHours(v)))))),
    h("p", {}, "download ", h("a", { href: `api/v1/fleet/report?${q}&format=csv` }, "CSV"), " ",
      h("a", { href: `api/v1/fleet/report?${q}` }, "JSON"), " ",
      h("a", { href: `api/v1/fleet/report?${q}&format=html` }, "HTML with the heatmap"))))
    .catch(e => { if (e.status !== 404) fill("fleet-report", h("p", { class: "error" }, e.message)); });
}

function idleTable(idle) {
  if (!(idle.gpus || []).length) return null;
  return table({}, ["node", "GPU", "model", "state", "for", "cost", "held by"], idle.gpus.map(g => [g.node, g.index, g.model,
    g.held_idle ? "held idle" : "idle", fmtDuration(g.idle_for_seconds),
    g.idle_for_cost !== undefined ? `${g.currency || ""} ${g.idle_for_cost.toFixed(2)}` : "–",
    g.held_by || "–"]));
}

// `isOpen()`: whether the Fleet view is still the one shown.
export async function renderFleet(isOpen) {
  clearTimeout(fleetTimer);
  if (!byId("fleet")) {
    byId("main").replaceChildren(h("h2", {}, "Fleet"), h("div", { id: "fleet" }, h("p", { class: "muted" }, "loading…")),
      h("h2", {}, "Idle now"), h("div", { id: "fleet-idle" }),
      h("h2", {}, "Report, last 7 days by node"), h("div", { id: "fleet-report" }, h("p", { class: "muted" }, "loading…")));
    reportAt = 0;
  }
  if (Date.now() - reportAt > 60000) renderFleetReport();
  try {
    const [f, idle] = await Promise.all([getJson("api/v1/fleet"), getJson("api/v1/fleet/idle")]);
    if (!isOpen()) return;
    fill("fleet", h("div", {},
      h("p", { id: "fleet-totals" }, f.totals.line, h("span", { class: "muted" }, ` · via ${f.prometheus}`)),
      (f.warnings || []).length ? h("p", { class: "error" }, "Prometheus says: " + f.warnings.join("; ")) : null,
      h("div", { class: "legend muted" }, ["busy", "idle", "held", "lost", "down"].map(c => h("span", { class: "cell " + c }, c)),
        " a GPU's utilization, or its state; hover for its holder"),
      f.nodes.map(fleetNode)));
    fill("fleet-idle", h("div", {}, h("p", {}, idle.summary || ""), idleTable(idle)));
  } catch (e) {
    if (e.status === 404) return fleetSetup();  // No [fleet]: nothing to ask again until it has one.
    fill("fleet", h("p", { class: "error" }, e.message));
  }
  if (isOpen()) fleetTimer = setTimeout(() => { if (isOpen()) renderFleet(isOpen); }, 10000);
}
