// How the console writes sizes, ratios, durations and times; "–" for a
// value the agent did not give.
const GiB = 1024 ** 3;

export const fmtBytes = b =>
  b === undefined ? "–" : b >= GiB ? (b / GiB).toFixed(1) + " GiB" : (b / 1024 ** 2).toFixed(0) + " MiB";

// A used and a total amount together, the unit once when they share it:
// "71.0 / 80.0 GiB" (as tarmac status writes it), "512 MiB / 80.0 GiB".
export function fmtBytesOf(used, total) {
  if (used === undefined || total === undefined) return `${fmtBytes(used)} / ${fmtBytes(total)}`;
  return used >= GiB && total >= GiB ? `${(used / GiB).toFixed(1)} / ${(total / GiB).toFixed(1)} GiB`
    : `${fmtBytes(used)} / ${fmtBytes(total)}`;
}

// A count with its noun: "1 lease", "3 leases".
export const counted = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;

export const pct = r => r === undefined ? "–" : (100 * r).toFixed(0) + " %";

export function fmtDuration(s) {
  if (s === undefined || s === null) return "–";
  s = Math.max(0, Math.round(s));
  if (s < 90) return s + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " d";
}

const two = n => String(n).padStart(2, "0");

// A moment in the browser's time zone, as the CLI writes one: "2026-12-06 20:34:35".
export function fmtTime(unix) {
  const d = new Date(unix * 1000);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${fmtClock(unix)}`;
}

// The time of day of a moment: "20:34:35".
export function fmtClock(unix) {
  const d = new Date(unix * 1000);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

// GPU time as tarmac report and tarmac fleet report print it
// (common/units.h FormatHours): "12.5h" from an hour on, "42m" below, "<1m".
export function fmtHours(hours) {
  if (hours >= 0.995) return hours.toFixed(1) + "h";
  if (hours * 60 >= 0.5) return Math.round(hours * 60) + "m";
  return hours > 0 ? "<1m" : "0";
}
