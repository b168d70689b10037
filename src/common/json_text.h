// SPDX-License-Identifier: Apache-2.0
//
// JSON written straight into a string, exactly as nlohmann::json's dump()
// writes it (compact, object keys in its sorted order, UTF-8 as is), for
// the texts the agent encodes every sample: dump() grows a string of its
// own by doublings and returns it to be copied, and a whole document's
// tree must exist at once before it is written. Pure functions.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tarmac {

// Appends what value.dump() returns.
void AppendJson(std::string* out, const nlohmann::json& value);

// Appends the object `object` with one more member, `key`, whose value the
// caller appends (`append_value`, called once, in the member's place): the
// same text as dump() of `object` with that member set, without building
// the member's tree with the rest. REQUIRES: object.is_object(), and
// `key` is not one of its members.
void AppendObjectWith(std::string* out, const nlohmann::json& object, std::string_view key,
                      const std::function<void(std::string*)>& append_value);

}  // namespace tarmac
