// The live stream (api/v1/stream, server-sent events): each status sample,
// the leases and queue, and new events, into the console's state.
import { showLogin } from "./api.js";
import { byId } from "./dom.js";
import { fmtDuration } from "./format.js";
import { noteFirst, noteLag } from "./probe.js";
import { state } from "./state.js";

// Connects, and calls `onSample` after each status sample and `onEvents`
// after new events.
export function connect(onSample, onEvents) {
  const source = new EventSource("api/v1/stream");
  source.addEventListener("open", () => {
    state.connected = true;
    state.opens++;
    noteFirst("open");
    updateLive();
  });
  source.addEventListener("error", () => {
    state.connected = false;
    updateLive();
    // EventSource retries by itself (the agent says after 2 s); a refusal
    // (401, 503) closes it, so try again from here.
    if (source.readyState === EventSource.CLOSED) {
      fetch("api/v1/status").then(r => { if (r.status === 401) showLogin(); }).catch(() => {});
      setTimeout(() => connect(onSample, onEvents), 2000);
    }
  });
  source.addEventListener("status", e => {
    noteFirst("status");
    state.status = JSON.parse(e.data);
    noteFirst("parsed");
    state.received = Date.now();
    updateLive();
    onSample();
    noteLag(Date.now() - Date.parse(state.status.taken_at)); // From the sample to the screen.
  });
  source.addEventListener("leases", e => {
    const j = JSON.parse(e.data);
    state.leases = j.leases;
    state.queue = j.queue;
  });
  source.addEventListener("events", e => {
    state.events = state.events.concat(JSON.parse(e.data).events).slice(-500);
    onEvents();
  });
}

// The header's word on the stream: live, stale, or reconnecting.
export function updateLive() {
  const live = byId("live");
  const age = state.received ? (Date.now() - state.received) / 1000 : null;
  const stale = !state.connected || age === null || age > 5;
  live.className = stale ? "stale" : "";
  if (!state.connected) {
    live.textContent = state.received ? `reconnecting… (last sample ${fmtDuration(age)} ago)` : "connecting…";
  } else {
    live.textContent = age === null ? "waiting for a sample" : stale ? `stale: last sample ${fmtDuration(age)} ago` : "live";
  }
}
