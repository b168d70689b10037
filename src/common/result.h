// SPDX-License-Identifier: Apache-2.0
//
// Result<T> holds either a T or a non-OK Status. It is shaped like C++23's
// std::expected (not available in our C++20 toolchains), so moving to it
// later is mechanical: ok() -> has_value(), status() -> error().
#pragma once

#include <optional>
#include <utility>

#include "common/check.h"
#include "common/status.h"

namespace tarmac {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    TARMAC_CHECK(!status_.ok());                        // An OK Result must carry a value.
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    TARMAC_CHECK(ok());
    return *value_;
  }
  const T& value() const& {
    TARMAC_CHECK(ok());
    return *value_;
  }
  T&& value() && {
    TARMAC_CHECK(ok());
    return std::move(*value_);
  }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tarmac
