// The GPU view: one GPU's history over a range, four uPlot charts (axes
// with units, the window clipped to the data, a crosshair with the values,
// drag to zoom, double-click to zoom out) with the events of the lease
// journal and the store marked on a strip under their time axis, grouped
// where they fall close together. While the view is open the charts follow
// the history: asked again every step of its tier (10 s at least), unless
// a chart is zoomed in.
import { getJson } from "./api.js";
import { byId, fill, h } from "./dom.js";
import { fmtTime } from "./format.js";
import uPlot from "./uplot.js";

const RANGES = { "1h": 3600, "24h": 86400, "7d": 604800, "30d": 2592000 };

let follow = null;  // The timer of the next asking.

// An event's colour and letter: what kind of event it was, not by colour alone.
function markStyle(kind) {
  if (/^(xid|gpu_lost|gpu_unreadable|driver_detached)$/.test(kind)) return ["bad", kind === "xid" ? "X" : "!"];
  if (kind.startsWith("throttle")) return ["warn", "T"];
  if (kind.includes("preempt")) return ["held", "P"];
  if (kind.startsWith("doctor")) return ["warn", "D"];
  return ["", "L"];
}

// The events strip under a chart `width` pixels wide: one mark per group of
// events that fall within a mark's width (28 px) of each other, its title
// listing them, so no two marks cover each other.
function eventStrip(marks, from, to, width) {
  const strip = h("div", { class: "event-strip" });
  const inside = marks.filter(m => m.at_unix >= from && m.at_unix <= to).sort((a, b) => a.at_unix - b.at_unix);
  const span = Math.max(1, to - from);
  let group = [];
  const flush = () => {
    if (!group.length) return;
    const [cls, letter] = markStyle(group[0].kind);
    const at = (group[0].at_unix - from) / span;
    const title = group.map(m => `${fmtTime(m.at_unix)} ${m.kind} ${m.detail || ""}`).join("\n");
    const mark = h("span", { class: `event ${cls}`, "data-kind": group[0].kind, title, tabindex: 0, "aria-label": title },
      group.length > 1 ? `${letter}${group.length}` : letter);
    mark.style.left = `${(100 * at).toFixed(2)}%`;  // CSSOM: allowed under the page's style-src 'self'.
    strip.append(mark);
    group = [];
  };
  const near = 28 / Math.max(100, width - 64);  // A mark's width, as a share of the strip.
  for (const m of inside) {
    if (group.length && (m.at_unix - group[0].at_unix) / span > near) flush();
    group.push(m);
  }
  flush();
  return strip;
}

// One chart: the series `column` of `rows` (scaled), in `unit`; its uPlot
// is added to `plots`.
function chart(title, rows, column, scale, unit, marks, width, plots) {
  const points = rows.filter(r => r[column] !== undefined && r[column] !== null);
  const box = h("div", { class: "chart", "data-series": column, "data-points": points.length });
  if (!points.length) {
    box.append(h("p", { class: "muted" }, `${title}: no samples in this range`));
    return box;
  }
  const xs = points.map(r => r.t), ys = points.map(r => r[column] * scale);
  const top = unit === "%" ? 100 : Math.max(1, ...ys) * 1.15;
  const show = v => v === null || v === undefined ? "–" : `${v.toFixed(unit === "GiB" ? 1 : 0)} ${unit}`;
  const plot = h("div", {});
  box.append(plot);
  plots.push(new uPlot({
    title: `${title} (${unit})`, width, height: 180,
    scales: { x: { time: true }, y: { range: () => [0, top] } },
    series: [{ value: (u, t) => t === null ? "–" : fmtTime(t) },
      { label: title, stroke: "#3b78c4", width: 1.5, fill: "rgba(59,120,196,0.08)", value: (u, v) => show(v) }],
    axes: [{ stroke: "currentColor", grid: { stroke: "rgba(128,128,128,0.2)" } },
      { stroke: "currentColor", size: 56, grid: { stroke: "rgba(128,128,128,0.2)" }, values: (u, vals) => vals.map(v => `${v}${unit === "%" ? "%" : ""}`) }],
    cursor: { drag: { x: true, y: false } },
  }, [xs, ys], plot));
  box.dataset.from = xs[0];
  box.dataset.to = xs[xs.length - 1];
  box.append(eventStrip(marks, xs[0], xs[xs.length - 1], width));
  return box;
}

// Whether the user zoomed into one of `plots` (its x scale narrower than its data).
const isZoomed = plots => plots.some(p => p.scales.x.min > p.data[0][0] + 0.5 ||
  p.scales.x.max < p.data[0][p.data[0].length - 1] - 0.5);

// The charts of GPU `index` over `range`, from the history; then, while
// this view is still the one shown, again a step later. `journal` keeps the
// lease journal's events read so far: each drawing after the first asks
// only for those after them.
async function drawCharts(index, range, hash, plots, journal) {
  const main = byId("main");
  try {
    const points = Math.max(100, Math.min(2000, Math.round(main.clientWidth || 800)));
    const [history, events] = await Promise.all([
      getJson(`api/v1/history?gpu=${encodeURIComponent(index)}&since=${range}&points=${points}`),
      getJson(journal.length ? `api/v1/events?after=${journal[journal.length - 1].seq}&limit=2000`
        : "api/v1/events?newest=true&limit=2000").catch(() => ({ events: [] }))]);
    journal.push(...(events.events || []));
    // The lease journal's (grants, ends, preemptions, doctor findings) and
    // the store's (Xids, throttling, the GPU lost, the driver, the agent).
    const marks = journal.filter(e => !e.gpus || !e.gpus.length || e.gpus.includes(Number(index)))
      .concat((history.events || []).map(e => ({ at_unix: e.t, kind: e.kind, detail: e.detail })));
    const rows = history.rows.filter(r => String(r.gpu) === index || r.uuid === index);
    const area = byId("charts");
    if (!area || location.hash !== hash) return;
    const space = area.clientWidth || 800;
    const width = Math.max(260, Math.floor(space >= 900 ? (space - 12) / 2 : space) - 2);
    const drawn = [];
    fill("charts",
      chart("utilization", rows, "utilization_percent", 1, "%", marks, width, drawn),
      chart("memory", rows, "memory_used_mib", 1 / 1024, "GiB", marks, width, drawn),
      chart("power", rows, "power_watts", 1, "W", marks, width, drawn),
      chart("temperature", rows, "temperature_celsius", 1, "°C", marks, width, drawn),
      h("p", { class: "muted" }, `${history.tier} tier, one point per ${history.step_seconds} s · marks: ` +
        "L lease, X Xid, ! GPU lost or unreadable, T throttling, P preemption, D doctor; " +
        "a number counts the events in one mark (hover or focus it for the list)"));
    for (const p of plots.splice(0)) p.destroy();
    plots.push(...drawn);
    const again = () => {
      if (location.hash !== hash) return;
      if (isZoomed(plots)) follow = setTimeout(again, 10000);
      else drawCharts(index, range, hash, plots, journal);
    };
    follow = setTimeout(again, Math.max(10, history.step_seconds || 0) * 1000);
  } catch (e) {
    if (location.hash === hash) fill("charts", h("p", { class: "error" }, e.message));
  }
}

export function renderGpu() {
  clearTimeout(follow);
  const [, index, range = "1h"] = location.hash.replace("#", "").split("/");
  const main = byId("main");
  main.replaceChildren(h("h2", {}, `GPU ${index}`),
    h("div", {}, Object.keys(RANGES).map(r => h("a", { href: `#gpu/${index}/${r}`, class: "range" }, r === range ? `[${r}]` : r)),
      h("span", { class: "muted" }, " · drag across a chart to zoom in, double-click to zoom out")),
    h("div", { id: "charts", class: "charts" }, h("p", { class: "muted" }, "loading…")));
  return drawCharts(index, range, location.hash, [], []);
}
