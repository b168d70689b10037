// The Leases view: the leases and the queue from the live stream, and the
// backfill batches running (api/v1/backfill).
import { getJson } from "./api.js";
import { bar, byId, fill, h, table } from "./dom.js";
import { counted, fmtDuration, fmtTime } from "./format.js";
import { state } from "./state.js";

function leasesTable() {
  const now = Date.now() / 1000;
  if (!state.leases.length) return h("p", { class: "muted" }, "no leases");
  // Command lines only where the agent gives them ([http] show_command_lines).
  const commands = state.leases.some(l => l.command);
  return table({ id: "leases" }, ["id", "user", "kind", "GPUs", "since", "until", "idle", ...(commands ? ["command"] : [])],
    state.leases.map(l => [l.id, l.user, l.kind + (l.revoking_since_unix ? " (revoking)" : ""),
      (l.mig_profile ? l.mig_profile + " on " : "") + (l.gpus || []).join(", "), fmtTime(l.granted_at_unix),
      l.ends_at_unix ? `${fmtTime(l.ends_at_unix)} (${fmtDuration(l.ends_at_unix - now)} left)` : "no end",
      l.idle_seconds ? fmtDuration(l.idle_seconds) : "–", ...(commands ? [l.command || ""] : [])]));
}

function queueTable() {
  if (!state.queue.length) return h("p", { class: "muted" }, "nothing queued");
  return table({ id: "queue" }, ["position", "id", "user", "wants", "waiting", "reason"],
    state.queue.map(q => [q.position, q.id, q.user,
      q.mig_profile || (q.uuids && q.uuids.length ? q.uuids.join(", ") : counted(q.gpus, "GPU")),
      fmtDuration(q.waiting_seconds), q.reason || ""]));
}

function batchesTable(j) {
  const batches = (j.batches || []).filter(b => ["queued", "running", "paused"].includes(b.state));
  if (!batches.length) return h("p", { class: "muted" }, "no batch running");
  return table({}, ["id", "user", "state", "model", "progress", "ETA", "preemptions"], batches.map(b => {
    const p = b.progress || {};
    const total = p.total || b.total || 0;
    const progress = h("span", { class: "progress" }, bar(total ? (p.done || 0) / total : 0, `${p.done || 0} / ${total}`));
    return [b.id, b.user, b.state, b.model, progress, b.eta_s ? fmtDuration(b.eta_s) : "–", p.preemptions || 0];
  }));
}

export function renderLeases() {
  byId("main").replaceChildren(h("h2", {}, "Leases"), leasesTable(), h("h2", {}, "Queue"), queueTable(),
    h("h2", {}, "Backfill"), h("div", { id: "backfill" }, h("p", { class: "muted" }, "loading…")));
  getJson("api/v1/backfill").then(j => fill("backfill", batchesTable(j)))
    .catch(e => fill("backfill", h("p", { class: "error" }, e.message)));
}
