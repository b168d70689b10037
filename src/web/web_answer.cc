// SPDX-License-Identifier: Apache-2.0
#include "web/web_answer.h"

#include "common/time_spec.h"
#include "ipc/method_table.h"

namespace tarmac::web {

using nlohmann::json;

http::Response JsonAnswer(int status, const json& j) {
  return http::Response{status, "application/json", j.dump() + "\n"};
}

http::Response Refusal(int status, const std::string& code, const std::string& message) {
  return JsonAnswer(status, {{"error", {{"code", code}, {"message", message}}}});
}

http::Response StatusRefusal(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return Refusal(400, ipc::kErrorBadRequest, s.ToString());
    case StatusCode::kNotFound:
      return Refusal(404, ipc::kErrorNotFound, s.ToString());
    case StatusCode::kResourceExhausted:
      return Refusal(429, ipc::kErrorBusy, s.ToString());
    default:
      return Refusal(503, ipc::kErrorUnavailable, s.ToString());
  }
}

std::optional<std::string> ReportFormat(const http::Request& asked, http::Response* refusal) {
  std::string format = asked.Param("format", "json");
  if (format == "json" || format == "csv" || format == "html") return format;
  *refusal = Refusal(400, ipc::kErrorBadRequest, "format: expected json, csv or html");
  return std::nullopt;
}

http::Response ReportAnswer(const std::string& format, std::string body, const std::string& csv_name) {
  if (format == "csv") {
    http::Response r{200, "text/csv; charset=utf-8", std::move(body)};
    r.headers = {{"Content-Disposition", "attachment; filename=\"" + csv_name + "\""}};
    return r;
  }
  if (format == "html") {
    http::Response r{200, "text/html; charset=utf-8", std::move(body)};
    r.headers = {{"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:"}};
    return r;
  }
  return http::Response{200, "application/json", std::move(body)};
}

Result<std::pair<int64_t, int64_t>> RangeOf(const http::Request& asked, Clock* clock,
                                            const std::string& since) {
  int64_t now = UnixSeconds(clock->WallNow());
  Result<int64_t> from = ParseTimeSpec(asked.Param("since", since), now);
  if (!from.ok()) return from.status().WithContext("since");
  Result<int64_t> to = ParseTimeSpec(asked.Param("until", "now"), now);
  if (!to.ok()) return to.status().WithContext("until");
  if (from.value() >= to.value()) {
    return Status::InvalidArgument("since: must be before until", asked.Param("since", since));
  }
  return std::make_pair(from.value(), to.value() + 1);
}

}  // namespace tarmac::web
