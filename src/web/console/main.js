// The web console (docs/web.md): the page's views by the location's hash
// (#now, #leases, #events, #gpu/N, #report, #doctor, #fleet), fed by the
// agent's live stream and its read-only API. Loaded as an ES module; each
// module is served as it is written.
import { getJson } from "./api.js";
import { byId } from "./dom.js";
import { renderDoctor } from "./doctor.js";
import { renderEvents } from "./events.js";
import { renderFleet } from "./fleet.js";
import { renderGpu } from "./gpu.js";
import { renderLeases } from "./leases.js";
import { renderNow } from "./now.js";
import { probe } from "./probe.js";
import { renderReport } from "./report.js";
import { state } from "./state.js";
import { connect, updateLive } from "./stream.js";

const view = () => location.hash.replace("#", "").split("/")[0] || "now";

// The live views draw on each sample; those that fetch, on navigation only.
const LIVE = { now: renderNow, leases: renderLeases, events: renderEvents };
const FETCHED = { gpu: renderGpu, report: renderReport, doctor: renderDoctor, fleet: () => renderFleet(() => view() === "fleet") };

function render(fromNavigation) {
  const v = view();
  for (const a of document.querySelectorAll("nav a")) a.className = a.dataset.view === v ? "on" : "";
  if (state.status) byId("host").textContent = "tarmac · " + (state.status.host || "");
  if (LIVE[v]) LIVE[v]();
  else if (fromNavigation && FETCHED[v]) FETCHED[v]();
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
