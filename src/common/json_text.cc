// SPDX-License-Identifier: Apache-2.0
#include "common/json_text.h"

namespace tarmac {

using nlohmann::json;

void AppendJson(std::string* out, const json& value) {
  // dump()'s own writer, pointed at `out` (what dump() does with a string
  // of its own).
  nlohmann::detail::serializer<json> writer(nlohmann::detail::output_adapter<char>(*out), ' ');
  writer.dump(value, /*pretty_print=*/false, /*ensure_ascii=*/false, /*indent_step=*/0);
}

void AppendObjectWith(std::string* out, const json& object, std::string_view key,
                      const std::function<void(std::string*)>& append_value) {
  *out += '{';
  // A member's name after a comma, unless it is the first.
  auto name = [out](std::string_view member) {
    if (out->back() != '{') *out += ',';
    AppendJson(out, json(member));
    *out += ':';
  };
  bool is_placed = false;
  // An object's members iterate in dump()'s order (its map's).
  for (auto member = object.begin(); member != object.end(); ++member) {
    if (!is_placed && std::string_view(member.key()) > key) {
      name(key);
      append_value(out);
      is_placed = true;
    }
    name(member.key());
    AppendJson(out, member.value());
  }
  if (!is_placed) {
    name(key);
    append_value(out);
  }
  *out += '}';
}

}  // namespace tarmac
