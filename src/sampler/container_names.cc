// SPDX-License-Identifier: Apache-2.0
#include "sampler/container_names.h"

#include <nlohmann/json.hpp>

#include "common/proc_files.h"

namespace tarmac::sampler {
namespace {

// Bundles are a few KiB; anything far larger is not one.
constexpr size_t kMaxConfigBytes = 4 << 20;

std::string Annotation(const nlohmann::json& annotations, const char* key) {
  auto it = annotations.find(key);
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string FirstOf(const std::string& a, const std::string& b) { return a.empty() ? b : a; }

bool IsContainerId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

node::KubernetesNames ParseOciAnnotations(std::string_view config_json) {
  node::KubernetesNames names;
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return names;
  auto it = config.find("annotations");
  if (it == config.end() || !it->is_object()) return names;
  const nlohmann::json& a = *it;
  names.pod =
      FirstOf(Annotation(a, "io.kubernetes.cri.sandbox-name"), Annotation(a, "io.kubernetes.pod.name"));
  names.pod_namespace = FirstOf(Annotation(a, "io.kubernetes.cri.sandbox-namespace"),
                                Annotation(a, "io.kubernetes.pod.namespace"));
  names.container = FirstOf(Annotation(a, "io.kubernetes.cri.container-name"),
                            Annotation(a, "io.kubernetes.container.name"));
  return names;
}

std::vector<std::string> DefaultRuntimeStateDirs() {
  return {"/run/containerd/io.containerd.runtime.v2.task/k8s.io",
          "/run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io",
          "/var/snap/microk8s/common/run/containerd/io.containerd.runtime.v2.task/k8s.io",
          "/run/containers/storage/overlay-containers"};
}

const node::KubernetesNames& ContainerNames::Lookup(const std::string& id) {
  auto it = cache_.find(id);
  if (it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCached) cache_.clear();
  node::KubernetesNames names;
  if (IsContainerId(id)) {
    for (const std::string& dir : state_dirs_) {
      std::string text;
      if (ReadSmallFile(dir + "/" + id + "/config.json", &text, kMaxConfigBytes) ||
          ReadSmallFile(dir + "/" + id + "/userdata/config.json", &text, kMaxConfigBytes)) {
        names = ParseOciAnnotations(text);
        if (!names.empty()) break;
      }
    }
  }
  return cache_.emplace(id, std::move(names)).first->second;
}

}  // namespace tarmac::sampler
