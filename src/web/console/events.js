// The Events view: the lease journal's newest events, newest first.
import { byId, h, table } from "./dom.js";
import { fmtTime } from "./format.js";
import { state } from "./state.js";

export function renderEvents() {
  const rows = state.events.slice().reverse().map(e =>
    [fmtTime(e.at_unix), e.kind, e.lease || "", e.user || "", (e.gpus || []).join(", "), e.actor || "", e.detail || ""]);
  byId("main").replaceChildren(h("h2", {}, "Events"),
    table({ id: "events" }, ["at", "kind", "lease", "user", "GPUs", "by", "detail"], rows));
}
