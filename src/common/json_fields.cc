// SPDX-License-Identifier: Apache-2.0
#include "common/json_fields.h"

#include <fmt/format.h>

namespace tarmac {

using nlohmann::json;

const json& JsonFields::Empty() {
  static const json* const kEmpty = new json(json::object());
  return *kEmpty;
}

JsonFields::JsonFields(const json& j, std::string what, WrongTypes wrong_types)
    : JsonFields(j, std::move(what), wrong_types, nullptr) {}

JsonFields::JsonFields(const json& j, std::string what, WrongTypes wrong_types,
                       std::shared_ptr<std::string> error)
    : j_(j.is_object() || wrong_types == kFailOnWrongTypes ? j : Empty()),
      what_(std::move(what)),
      wrong_types_(wrong_types),
      error_(std::move(error)) {
  if (!j_.is_object() && ok()) {
    if (error_ == nullptr) error_ = std::make_shared<std::string>();
    *error_ = fmt::format("{}: expected an object", what_);
  }
}

bool JsonFields::Mismatch(const char* key, const char* expected) {
  if (wrong_types_ == kFailOnWrongTypes) Fail(key, expected);
  return false;
}

void JsonFields::Fail(const char* key, const std::string& what) {
  if (!ok()) return;
  if (error_ == nullptr) error_ = std::make_shared<std::string>();
  *error_ = fmt::format("{}.{}: {}", what_, key, what);
}

bool JsonFields::has(const char* key) const {
  if (!j_.is_object()) return false;
  auto it = j_.find(key);
  return it != j_.end() && !it->is_null();
}

const json* JsonFields::Find(const char* key, bool required) {
  if (!ok()) return nullptr;
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) {
    if (required) Fail(key, "missing");
    return nullptr;
  }
  return &*it;
}

JsonFields JsonFields::Object(const char* key) {
  const json* v = Find(key, /*required=*/false);
  std::string what = fmt::format("{}.{}", what_, key);
  if (error_ == nullptr) error_ = std::make_shared<std::string>();  // Shared with the object read.
  if (v == nullptr) return JsonFields(Empty(), std::move(what), wrong_types_, error_);
  if (!v->is_object()) {
    Mismatch(key, "expected an object");
    return JsonFields(Empty(), std::move(what), wrong_types_, error_);
  }
  return JsonFields(*v, std::move(what), wrong_types_, error_);
}

bool JsonFields::Read(const json& v, const char* key, int64_t* out) {
  if (!v.is_number_integer()) return Mismatch(key, "expected an integer");
  *out = v.get<int64_t>();
  return true;
}

bool JsonFields::Read(const json& v, const char* key, uint64_t* out) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    return Mismatch(key, "expected an integer >= 0");
  }
  *out = v.get<uint64_t>();
  return true;
}

bool JsonFields::Read(const json& v, const char* key, int* out) {
  if (!v.is_number_integer() || v.get<int64_t>() < -(1LL << 30) || v.get<int64_t>() > (1LL << 30)) {
    return Mismatch(key, "expected an integer");
  }
  *out = static_cast<int>(v.get<int64_t>());
  return true;
}

bool JsonFields::Read(const json& v, const char* key, double* out) {
  if (!v.is_number()) return Mismatch(key, "expected a number");
  *out = v.get<double>();
  return true;
}

bool JsonFields::Read(const json& v, const char* key, bool* out) {
  if (!v.is_boolean()) return Mismatch(key, "expected true or false");
  *out = v.get<bool>();
  return true;
}

bool JsonFields::Read(const json& v, const char* key, std::string* out) {
  if (!v.is_string()) return Mismatch(key, "expected a string");
  *out = v.get<std::string>();
  return true;
}

}  // namespace tarmac
