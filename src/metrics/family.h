// SPDX-License-Identifier: Apache-2.0
//
// A family of /metrics, declared with its help next to the code that
// renders it (render.cc, accounting_render.cc); NativeFamilies() lists
// them all for the docs. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "metrics/exposition.h"
#include "metrics/render.h"

namespace tarmac::metrics {

struct Family {
  std::string_view name;
  std::string_view type;
  std::string_view help;

  FamilyDoc Doc() const { return {std::string(name), std::string(type), std::string(help)}; }
};

// Starts family `f` in `out`.
inline void Head(Exposition* out, const Family& f) { out->Family(f.name, f.type, f.help); }

}  // namespace tarmac::metrics
