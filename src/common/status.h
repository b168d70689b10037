// SPDX-License-Identifier: Apache-2.0
//
// Status is the result of an operation that can fail: OK, or a code plus a
// message for humans. Functions that can fail return Status or Result<T>
// (result.h); exceptions never cross module boundaries.
//
// Status is a value type: cheap to move, safe to read from many threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tarmac {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // Caller sent something malformed. Retrying won't help.
  kNotFound,            // Named GPU, lease, queue or series does not exist.
  kFailedPrecondition,  // Valid request, wrong state.
  kResourceExhausted,   // No free GPU matches, queue full.
  kUnavailable,         // Dependency absent or down (NVML, driver). May retry.
  kDeadlineExceeded,
  kPermissionDenied,
  kCorruption,  // Stored data failed validation.
  kIOError,
  kInternal,   // A bug or an unexpected vendor code.
  kCancelled,  // The caller gave up (an interrupt while waiting).
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK.

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string_view msg, std::string_view detail = {});
  static Status NotFound(std::string_view msg, std::string_view detail = {});
  static Status FailedPrecondition(std::string_view msg, std::string_view detail = {});
  static Status ResourceExhausted(std::string_view msg, std::string_view detail = {});
  static Status Unavailable(std::string_view msg, std::string_view detail = {});
  static Status DeadlineExceeded(std::string_view msg, std::string_view detail = {});
  static Status PermissionDenied(std::string_view msg, std::string_view detail = {});
  static Status Corruption(std::string_view msg, std::string_view detail = {});
  static Status IOError(std::string_view msg, std::string_view detail = {});
  static Status Internal(std::string_view msg, std::string_view detail = {});
  static Status Cancelled(std::string_view msg, std::string_view detail = {});
  static Status FromCode(StatusCode code, std::string_view msg);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: gpu: 7". Returns "OK" for success.
  std::string ToString() const;

  // Returns a copy whose message is "context: message". OK stays OK.
  Status WithContext(std::string_view context) const;

  // Explicitly discards a Status whose failure the caller has handled by
  // other means (for example a best-effort cleanup).
  void IgnoreError() const {}

 private:
  Status(StatusCode code, std::string message);

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Lower-case name of a code: "invalid argument", "unavailable".
std::string_view StatusCodeName(StatusCode code);

}  // namespace tarmac
