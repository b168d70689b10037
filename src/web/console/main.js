// The web console (docs/web.md): the page's views by the location's hash
// (#now, #leases, #events, #gpu/N, #report, #doctor, #fleet), fed by the
// agent's live stream and its read-only API. Loaded as an ES module; each
// module is served as it is written. What the first drawing needs (the
// stream and the Now view) is imported here; every other view's module is
// imported when it is first shown, and fetched before that when the
// browser is idle.
import { getJson } from "./api.js";
import { byId } from "./dom.js";
import { renderNow } from "./now.js";
import { probe } from "./probe.js";
import { state } from "./state.js";
import { connect, updateLive } from "./stream.js";

const view = () => location.hash.replace("#", "").split("/")[0] || "now";

// Each view: its module, how it draws, and whether it draws on each sample
// (the live ones) or on navigation only (those that fetch).
const VIEWS = {
  leases: { load: () => import("./leases.js"), draw: m => m.renderLeases(), live: true },
  events: { load: () => import("./events.js"), draw: m => m.renderEvents(), live: true },
  gpu: { load: () => import("./gpu.js"), draw: m => m.renderGpu() },
  report: { load: () => import("./report.js"), draw: m => m.renderReport() },
  doctor: { load: () => import("./doctor.js"), draw: m => m.renderDoctor() },
  fleet: { load: () => import("./fleet.js"), draw: m => m.renderFleet(() => view() === "fleet") },
};
const loaded = {};  // View name -> its module, once imported.

function render(fromNavigation) {
  const v = view();
  for (const a of document.querySelectorAll("nav a")) a.className = a.dataset.view === v ? "on" : "";
  if (state.status) byId("host").textContent = "tarmac · " + (state.status.host || "");
  if (v === "now") return renderNow();
  const spec = VIEWS[v];
  if (!spec || !(fromNavigation || spec.live)) return;
  if (loaded[v]) return spec.draw(loaded[v]);
  spec.load().then(m => {
    loaded[v] = m;
    if (view() === v) spec.draw(m);
  }).catch(e => { byId("main").textContent = "this view could not be loaded: " + e.message; });
}

// For the tests and benchmarks (tests/e2e/web_console.py, bench/web_console.py).
window.tarmacConsole = { state, probe };

window.addEventListener("hashchange", () => render(true));
setInterval(updateLive, 1000);
// The stream first: its first sample is what the page waits for.
connect(() => render(false), () => { if (view() === "events") render(false); });
getJson("api/v1/events?newest=true&limit=200").then(j => {
  state.events = j.events;
  if (view() === "events") render(false);
}).catch(() => {});
render(true);
// The other views' modules, fetched when the browser is idle after the
// page is drawn (never competing with the first sample).
window.addEventListener("load", () => requestIdleCallback(() => {
  for (const [name, spec] of Object.entries(VIEWS)) spec.load().then(m => { loaded[name] ??= m; }).catch(() => {});
}, { timeout: 5000 }));
