// The Report view: who held GPUs and how much of it was idle, over a range
// and by an owner the reader picks, with its CSV, JSON and heatmap.
import { getJson } from "./api.js";
import { byId, fill, h, table } from "./dom.js";
import { fmtHours } from "./format.js";

export async function renderReport() {
  const params = new URLSearchParams(location.hash.split("?")[1] || "since=7d&by=user");
  const since = params.get("since") || "7d", by = params.get("by") || "user";
  const query = `since=${encodeURIComponent(since)}&by=${encodeURIComponent(by)}`;
  const pick = (name, values, current) => h("select", { onchange: e => { params.set(name, e.target.value); location.hash = "report?" + params; } },
    values.map(v => h("option", { value: v, selected: v === current ? "selected" : null }, v)));
  byId("main").replaceChildren(h("h2", {}, "Report"), h("div", {}, "since ", pick("since", ["1d", "7d", "30d"], since), " by ",
    pick("by", ["user", "gpu", "container", "pod", "namespace", "slurm-job"], by), " · download ",
    h("a", { href: `api/v1/report?${query}&format=csv` }, "CSV"), " ", h("a", { href: `api/v1/report?${query}` }, "JSON")),
  h("div", { id: "report" }, h("p", { class: "muted" }, "loading…")));
  try {
    const r = await getJson(`api/v1/report?${query}`);
    const hours = v => [fmtHours(v), { class: "num" }];  // As tarmac report prints them.
    fill("report", h("p", { id: "verdict" }, r.verdict),
      table({}, ["owner", "GPU time held", "busy", "held idle"],
        (r.owners || []).map(o => [o.owner, hours(o.gpu_hours_held), hours(o.gpu_hours_busy), hours(o.held_idle_hours)])),
      // The heatmap and histograms are the HTML report's own page, not a
      // frame in this one (which would repeat the verdict in a scrolling box).
      h("p", {}, h("a", { id: "report-html", href: `api/v1/report?${query}&format=html`, target: "_blank", rel: "noreferrer" },
        "The heatmap, histograms and every table: the HTML report"), h("span", { class: "muted" }, " (tarmac report --format html)")));
  } catch (e) {
    fill("report", h("p", { class: "error" }, e.message));
  }
}
