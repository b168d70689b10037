// SPDX-License-Identifier: Apache-2.0
#include "slurm/job_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "common/split.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::slurm {
namespace {

using nlohmann::json;

std::string Get(const std::map<std::string, std::string>& env, std::string_view name) {
  auto it = env.find(std::string(name));
  return it == env.end() ? std::string() : it->second;
}

constexpr int64_t kMostUid = 4294967294;

}  // namespace

bool IsJobId(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::isdigit(static_cast<unsigned char>(id[0])) &&
         std::all_of(id.begin(), id.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '+';
         });
}

bool IsAccountName(const std::string& name) {
  return !name.empty() && name.size() <= 256 && std::all_of(name.begin(), name.end(), [](char ch) {
    return ch > ' ' && ch <= '~' && ch != '/' && ch != ':';
  });
}

json PrologRequestToJson(const PrologRequest& request) {
  json params = {{"job", request.job}, {"uid", request.uid}, {"user", request.user}, {"gpus", request.gpus}};
  if (request.partition) params["partition"] = *request.partition;
  return params;
}

Result<std::string> JobOfParams(const json& params) {
  auto job = params.find("job");
  if (job == params.end() || !job->is_string() || !IsJobId(job->get<std::string>())) {
    return Status::InvalidArgument("params.job: expected a Slurm job id (digits, as SLURM_JOB_ID)");
  }
  return job->get<std::string>();
}

Result<PrologRequest> PrologRequestFromJson(const json& params) {
  PrologRequest request;
  Result<std::string> job = JobOfParams(params);
  if (!job.ok()) return job.status();
  request.job = job.value();
  auto uid = params.find("uid");
  if (uid == params.end() || !uid->is_number_integer() || uid->get<int64_t>() < 0 ||
      uid->get<int64_t>() > kMostUid) {
    return Status::InvalidArgument("params.uid: expected the job's uid (SLURM_JOB_UID), 0 to 4294967294");
  }
  request.uid = uid->get<int64_t>();
  auto user = params.find("user");
  if (user == params.end() || !user->is_string() || !IsAccountName(user->get<std::string>())) {
    return Status::InvalidArgument(
        "params.user: expected the job's user (SLURM_JOB_USER): 1 to 256 printable ASCII characters, no '/' "
        "or ':'");
  }
  request.user = user->get<std::string>();
  if (auto partition = params.find("partition"); partition != params.end()) {
    if (!partition->is_string() || !IsAccountName(partition->get<std::string>())) {
      return Status::InvalidArgument("params.partition: 1 to 256 printable ASCII characters, no '/' or ':'");
    }
    request.partition = partition->get<std::string>();
  }
  auto gpus = params.find("gpus");
  if (gpus == params.end() || !gpus->is_array()) {
    return Status::InvalidArgument("params.gpus: expected the job's GPU indices (SLURM_JOB_GPUS)");
  }
  std::set<int> seen;
  for (const json& g : *gpus) {
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 9999) {
      return Status::InvalidArgument(fmt::format("params.gpus: {} is not a GPU index", g.dump()));
    }
    int index = static_cast<int>(g.get<int64_t>());
    if (!seen.insert(index).second)
      return Status::InvalidArgument(fmt::format("params.gpus: GPU {} named twice", index));
    request.gpus.push_back(index);
  }
  return request;
}

Result<PrologRequest> PrologRequestFromEnvironment(const std::map<std::string, std::string>& env,
                                                   const std::optional<std::string>& devices_list) {
  PrologRequest request;
  request.job = Get(env, "SLURM_JOB_ID");
  if (request.job.empty())
    return Status::InvalidArgument("SLURM_JOB_ID is not set (run by Slurm's Prolog= or Epilog=)");
  if (!IsJobId(request.job))
    return Status::InvalidArgument(fmt::format("SLURM_JOB_ID='{}' is not a job id", request.job));
  Result<std::vector<int>> gpus = JobGpus(env);
  if (!gpus.ok()) return gpus.status();
  request.gpus = gpus.value();
  if (request.gpus.empty() && devices_list) request.gpus = GpusOfDevicesList(*devices_list);
  const std::string uid = Get(env, "SLURM_JOB_UID");
  if (uid.empty() || uid.size() > 10 || uid.find_first_not_of("0123456789") != std::string::npos ||
      std::stoll(uid) > kMostUid) {
    return Status::InvalidArgument("SLURM_JOB_UID is not a uid");
  }
  request.uid = std::stoll(uid);
  request.user = Get(env, "SLURM_JOB_USER");
  if (request.user.empty()) return Status::InvalidArgument("SLURM_JOB_USER is not set");
  if (std::string partition = Get(env, "SLURM_JOB_PARTITION"); !partition.empty())
    request.partition = partition;
  return request;
}

Result<std::vector<int>> JobGpus(const std::map<std::string, std::string>& env) {
  std::string_view name = "SLURM_JOB_GPUS";
  std::string value = Get(env, name);
  if (value.empty()) {
    name = nvidia::kVisibleDevicesVariable;
    value = Get(env, name);
  }
  std::vector<int> out;
  if (value.empty() || value == "NoDevFiles") return out;
  for (const std::string& item : SplitCommas(value)) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}='{}': expected GPU indices such as 0,2", name, value));
    }
    out.push_back(std::stoi(item));
  }
  return out;
}

std::vector<int> GpusOfDevicesList(const std::string& devices_list) {
  std::vector<int> out;
  std::istringstream lines(devices_list);
  std::string line;
  while (std::getline(lines, line)) {
    // "c 195:3 rwm"
    const size_t prefix = nvidia::kDeviceRulePrefix.size();
    if (line.rfind(nvidia::kDeviceRulePrefix, 0) != 0) continue;
    size_t end = line.find(' ', prefix);
    std::string minor = line.substr(prefix, end == std::string::npos ? std::string::npos : end - prefix);
    if (minor.empty() || minor.size() > 3 || minor.find_first_not_of("0123456789") != std::string::npos)
      continue;
    int n = std::stoi(minor);
    if (n < nvidia::kModesetDeviceMinor && std::find(out.begin(), out.end(), n) == out.end())
      out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tarmac::slurm
