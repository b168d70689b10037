// SPDX-License-Identifier: Apache-2.0
#include "common/status.h"

namespace tarmac {
namespace {

std::string Join(std::string_view msg, std::string_view detail) {
  std::string out(msg);
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

}  // namespace

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

#define TARMAC_STATUS_FACTORY(Name)                                    \
  Status Status::Name(std::string_view msg, std::string_view detail) { \
    return Status(StatusCode::k##Name, Join(msg, detail));             \
  }
TARMAC_STATUS_FACTORY(InvalidArgument)
TARMAC_STATUS_FACTORY(NotFound)
TARMAC_STATUS_FACTORY(FailedPrecondition)
TARMAC_STATUS_FACTORY(ResourceExhausted)
TARMAC_STATUS_FACTORY(Unavailable)
TARMAC_STATUS_FACTORY(DeadlineExceeded)
TARMAC_STATUS_FACTORY(PermissionDenied)
TARMAC_STATUS_FACTORY(Corruption)
TARMAC_STATUS_FACTORY(IOError)
TARMAC_STATUS_FACTORY(Internal)
TARMAC_STATUS_FACTORY(Cancelled)
#undef TARMAC_STATUS_FACTORY

Status Status::FromCode(StatusCode code, std::string_view msg) {
  if (code == StatusCode::kOk) return Status();
  return Status(code, std::string(msg));
}

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kResourceExhausted:
      return "resource exhausted";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline exceeded";
    case StatusCode::kPermissionDenied:
      return "permission denied";
    case StatusCode::kCorruption:
      return "corruption";
    case StatusCode::kIOError:
      return "io error";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

}  // namespace tarmac
