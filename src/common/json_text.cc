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
  bool is_placed = false;
  auto place = [&] {
    AppendJson(out, json(key));
    *out += ':';
    append_value(out);
    is_placed = true;
  };
  *out += '{';
  bool is_first = true;
  // An object's members iterate in dump()'s order (its map's).
  for (auto member = object.begin(); member != object.end(); ++member) {
    if (!is_placed && std::string_view(member.key()) > key) {
      if (!is_first) *out += ',';
      place();
      is_first = false;
    }
    if (!is_first) *out += ',';
    is_first = false;
    AppendJson(out, json(member.key()));
    *out += ':';
    AppendJson(out, member.value());
  }
  if (!is_placed) {
    if (!is_first) *out += ',';
    place();
  }
  *out += '}';
}

}  // namespace tarmac
