// SPDX-License-Identifier: Apache-2.0
#include "agent/snapshot_methods.h"

#include <fmt/format.h>

#include "common/json_text.h"
#include "node/node_json.h"

namespace tarmac::agent {

using nlohmann::json;

namespace {

// One GPU of the `status` result: marked with its lease, and with the
// recent mean and series when asked.
json SnapshotGpu(const node::GpuView& gpu, const node::LeaseMarks* marks, const node::Snapshot& snapshot,
                 const node::UtilizationHistory* history, std::optional<std::chrono::seconds> window,
                 std::optional<std::chrono::seconds> series) {
  json g;
  if (marks != nullptr && !marks->empty()) {
    node::GpuView marked = gpu;
    node::ApplyLeaseMarks(*marks, &marked);
    g = node::GpuToJson(marked);
  } else {
    g = node::GpuToJson(gpu);
  }
  int index = gpu.info.index;
  if (window && history != nullptr) {
    std::optional<double> mean = history->Mean(index, snapshot.taken_at_steady, *window);
    if (mean) g["utilization_gpu_recent_ratio"] = *mean;
  }
  if (series && history != nullptr) {
    g["utilization_gpu_series"] = history->Series(index, snapshot.taken_at_steady, *series);
    g["utilization_gpu_series_seconds"] =
        history->SeriesSpanSeconds(index, snapshot.taken_at_steady, *series);
  }
  return g;
}

// Every field of the `status` result but "gpus".
json SnapshotHeader(const node::Snapshot& snapshot) {
  json result = node::StatusHeaderToJson(snapshot.node_view);
  result["sequence"] = snapshot.sequence;
  result["tick_duration_seconds"] = static_cast<double>(snapshot.tick_duration.count()) / 1e6;
  return result;
}

}  // namespace

json SnapshotStatus(const AgentInfo& agent, const node::Snapshot& snapshot,
                    const node::UtilizationHistory* history, std::optional<std::chrono::seconds> window,
                    std::optional<std::chrono::seconds> series) {
  std::shared_ptr<const node::LeaseMarks> marks = agent.lease_marks ? agent.lease_marks() : nullptr;
  json gpus = json::array();
  for (const node::GpuView& g : snapshot.node_view.gpus) {
    gpus.push_back(SnapshotGpu(g, marks.get(), snapshot, history, window, series));
  }
  json result = SnapshotHeader(snapshot);
  result["gpus"] = std::move(gpus);
  return result;
}

void AppendSnapshotStatus(std::string* out, const AgentInfo& agent, const node::Snapshot& snapshot,
                          const std::function<void(json*)>& edit) {
  std::shared_ptr<const node::LeaseMarks> marks = agent.lease_marks ? agent.lease_marks() : nullptr;
  json header = SnapshotHeader(snapshot);
  if (edit) edit(&header);
  AppendObjectWith(out, header, "gpus", [&](std::string* text) {
    *text += '[';
    for (const node::GpuView& g : snapshot.node_view.gpus) {
      if (&g != &snapshot.node_view.gpus.front()) *text += ',';
      json gpu = SnapshotGpu(g, marks.get(), snapshot, nullptr, std::nullopt, std::nullopt);
      if (edit) edit(&gpu);
      AppendJson(text, gpu);
    }
    *text += ']';
  });
}

std::string AnswerSnapshotMethod(const ipc::Request& request, const ipc::PeerCredentials& peer,
                                 const AgentInfo& agent, const node::Snapshot* snapshot,
                                 const node::SamplerStats* stats, const node::UtilizationHistory* history) {
  if (request.method == "hello") {
    json sampler = json::object();
    if (stats != nullptr) {
      sampler = {{"ticks", stats->ticks},
                 {"slow_ticks", stats->slow_ticks},
                 {"last_tick_seconds", static_cast<double>(stats->last_tick_duration.count()) / 1e6},
                 {"max_lateness_seconds", static_cast<double>(stats->max_lateness.count()) / 1e6},
                 {"p99_lateness_seconds", static_cast<double>(stats->p99_lateness.count()) / 1e6},
                 {"attaches", stats->attaches},
                 {"xid_events", stats->xid_events},
                 {"mig_config_changes", stats->mig_config_changes}};
    }
    return ipc::EncodeResult(request.id,
                             {{"agent_version", agent.version},
                              {"sampler", sampler},
                              {"agent_pid", agent.pid},
                              {"backend", agent.backend},
                              {"started_at_unix", agent.started_at_unix},
                              {"protocol_version", ipc::kProtocolVersion},
                              {"store", agent.store_status ? agent.store_status() : json(nullptr)},
                              {"lease_state", agent.lease_state ? agent.lease_state() : json(nullptr)},
                              {"http", agent.http},
                              {"peer", {{"pid", peer.pid}, {"uid", peer.uid}, {"gid", peer.gid}}}});
  }
  if (request.method == "status") {
    std::optional<std::chrono::seconds> window, series;
    for (auto [key, out] :
         {std::pair{"recent_window_seconds", &window}, std::pair{"series_seconds", &series}}) {
      auto w = request.params.find(key);
      if (w == request.params.end()) continue;
      if (!w->is_number_integer() || w->get<int64_t>() < 1 ||
          w->get<int64_t>() > ipc::kMaxRecentWindowSeconds) {
        return ipc::EncodeError(
            request.id, ipc::kErrorBadRequest,
            fmt::format("params.{}: expected an integer from 1 to {}", key, ipc::kMaxRecentWindowSeconds));
      }
      *out = std::chrono::seconds(w->get<int64_t>());
    }
    if (snapshot == nullptr)
      return ipc::EncodeError(request.id, ipc::kErrorUnavailable, "no sample taken yet");
    return ipc::EncodeResult(request.id, SnapshotStatus(agent, *snapshot, history, window, series));
  }
  return ipc::EncodeError(request.id, ipc::kErrorUnknownMethod,
                          fmt::format("unknown method \"{}\" (known here: hello, status)", request.method));
}

}  // namespace tarmac::agent
