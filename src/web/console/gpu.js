// The GPU view: one GPU's history over a range, four charts with the events
// of the lease journal and the store marked on their time axis.
import { getJson } from "./api.js";
import { byId, fill, h } from "./dom.js";
import { fmtTime } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";
const RANGES = { "1h": 3600, "24h": 86400, "7d": 604800, "30d": 2592000 };

// An event's colour and letter on a chart's time axis: what kind of event
// it was, not by colour alone.
function markStyle(kind) {
  if (/^(xid|gpu_lost|gpu_unreadable|driver_detached)$/.test(kind)) return ["#c62828", kind === "xid" ? "X" : "!"];
  if (kind.startsWith("throttle")) return ["#b26a00", "T"];
  if (kind.includes("preempt")) return ["#7b1fa2", "P"];
  if (kind.startsWith("doctor")) return ["#b26a00", "D"];
  return ["#5b6470", "L"];
}

// A line chart of one series, at most one point per pixel (the server
// downsamples to the width asked), with events marked on the time axis.
function chart(title, rows, column, range, scale, unit, marks) {
  const [since, until] = range;
  const W = 800, H = 160, pad = 30;
  const pts = rows.filter(r => r[column] !== undefined).map(r => [r.t, r[column] * scale]);
  const max = Math.max(1, ...pts.map(p => p[1]));
  const x = t => pad + (W - 2 * pad) * (t - since) / Math.max(1, until - since);
  const y = v => H - 20 - (H - 40) * v / max;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("data-series", column);
  const add = (tag, attrs, text, parent = svg) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    parent.append(e);
    return e;
  };
  add("text", { x: pad, y: 14, fill: "currentColor", "font-size": 12 }, `${title} (max ${max.toFixed(0)} ${unit})`);
  for (const m of marks) {
    if (m.at_unix < since || m.at_unix > until) continue;
    const [stroke, letter] = markStyle(m.kind);
    const line = add("line", { x1: x(m.at_unix), x2: x(m.at_unix), y1: 20, y2: H - 20, stroke, "stroke-dasharray": "3,3",
      "stroke-width": 2, class: "event", "data-kind": m.kind });
    add("title", {}, `${fmtTime(m.at_unix)} ${m.kind} ${m.detail || ""}`, line);
    add("text", { x: x(m.at_unix) + 2, y: 28, "font-size": 10, fill: stroke }, letter);
  }
  if (pts.length) {
    add("polyline", { points: pts.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "), fill: "none",
      stroke: "#3b78c4", "stroke-width": 1.5 });
  } else {
    add("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "currentColor" }, "no samples in this range");
  }
  add("text", { x: pad, y: H - 4, "font-size": 11, fill: "currentColor" }, fmtTime(since));
  add("text", { x: W - pad, y: H - 4, "font-size": 11, fill: "currentColor", "text-anchor": "end" }, fmtTime(until));
  return svg;
}

export async function renderGpu() {
  const [, index, range = "1h"] = location.hash.replace("#", "").split("/");
  const main = byId("main");
  main.replaceChildren(h("h2", {}, `GPU ${index}`),
    h("div", {}, Object.keys(RANGES).map(r => h("a", { href: `#gpu/${index}/${r}`, class: "range" }, r === range ? `[${r}]` : r))),
    h("div", { id: "charts", class: "charts" }, h("p", { class: "muted" }, "loading…")));
  try {
    const points = Math.max(100, Math.min(2000, Math.round(main.clientWidth || 800)));
    const [history, events] = await Promise.all([
      getJson(`api/v1/history?gpu=${encodeURIComponent(index)}&since=${range}&points=${points}`),
      getJson("api/v1/events?newest=true&limit=2000").catch(() => ({ events: [] }))]);
    const until = Date.now() / 1000;
    const span = [until - RANGES[range], until];
    // The lease journal's (grants, ends, preemptions, doctor findings) and
    // the store's (Xids, throttling, the GPU lost, the driver, the agent).
    const marks = (events.events || []).filter(e => !e.gpus || !e.gpus.length || e.gpus.includes(Number(index)))
      .concat((history.events || []).map(e => ({ at_unix: e.t, kind: e.kind, detail: e.detail })));
    const rows = history.rows.filter(r => String(r.gpu) === index || r.uuid === index);
    fill("charts",
      chart("utilization", rows, "utilization_percent", span, 1, "%", marks),
      chart("memory", rows, "memory_used_mib", span, 1 / 1024, "GiB", marks),
      chart("power", rows, "power_watts", span, 1, "W", marks),
      chart("temperature", rows, "temperature_celsius", span, 1, "°C", marks),
      h("p", { class: "muted" }, `${history.tier} tier, one point per ${history.step_seconds} s`));
  } catch (e) {
    fill("charts", h("p", { class: "error" }, e.message));
  }
}
