// What the console knows of the agent: the latest status sample, leases and
// queue from the live stream, the newest events, and the stream's state.
export const state = {
  status: null, // The last "status" message (docs/web.md).
  leases: [],
  queue: [],
  events: [], // The newest 500, oldest first.
  received: 0, // When the last sample arrived (ms since the epoch).
  connected: false,
  opens: 0, // How often the stream has opened (reconnections count).
};

export const leaseOf = id => state.leases.find(l => l.id === id);
