// Timings for the tests and benchmarks (bench/web_console.py), kept apart
// from the console's state: when the script ran, the stream opened, the
// first sample arrived and was parsed, and the GPUs were first on screen
// (ms since navigation), and each sample's age when drawn (ms, the newest
// 1000).
export const probe = { script: performance.now(), open: null, status: null, parsed: null, firstRenderMs: null, lagsMs: [] };

// Notes `name` the first time only.
export function noteFirst(name) {
  probe[name] ??= performance.now();
}

export function noteLag(ms) {
  if (isNaN(ms)) return;
  probe.lagsMs.push(ms);
  if (probe.lagsMs.length > 1000) probe.lagsMs.splice(0, probe.lagsMs.length - 1000);
}
