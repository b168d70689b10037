// SPDX-License-Identifier: Apache-2.0
//
// Reading the fields of a JSON object without exceptions: every reader of
// JSON that comes from outside (API requests and answers, the saved lease
// state, batch specs, status documents) goes through JsonFields. Each read
// checks the type; the first problem is kept ("lease.uid: expected an
// integer", naming the object and the key) and later reads do nothing, so a
// caller reads every field and then asks status() once. A reader made with
// kSkipWrongTypes (for documents of other versions, or files another user
// writes, read field by field) leaves a field of the wrong type as it is
// and goes on. Never throws.
//
// Thread safety: one thread at a time; the JSON must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace tarmac {

class JsonFields {
 public:
  enum WrongTypes { kFailOnWrongTypes, kSkipWrongTypes };
  // `what` names the object in messages ("lease", "gpus[3]").
  JsonFields(const nlohmann::json& j, std::string what, WrongTypes wrong_types = kFailOnWrongTypes);

  // A field that must be there and have T's type.
  template <typename T>
  void Get(const char* key, T* out) {
    if (const nlohmann::json* v = Find(key, /*required=*/true)) Read(*v, key, out);
  }
  // A field that may be absent or null (then *out is left as it is).
  template <typename T>
  void Optional(const char* key, T* out) {
    if (const nlohmann::json* v = Find(key, /*required=*/false)) Read(*v, key, out);
  }
  template <typename T>
  void Optional(const char* key, std::optional<T>* out) {
    const nlohmann::json* v = Find(key, /*required=*/false);
    if (v == nullptr) return;
    T value{};
    if (Read(*v, key, &value)) *out = std::move(value);
  }
  // The object at `key` (absent or null: an empty object), named
  // "what.key" in messages; a field of another type is a problem. Its
  // problems are this reader's too.
  JsonFields Object(const char* key);

  // Records a problem of the caller's about `key` ("expected one of ...").
  void Fail(const char* key, const std::string& what);
  bool ok() const { return error_ == nullptr || error_->empty(); }
  bool has(const char* key) const;
  // kInvalidArgument with the first problem; OK when there was none.
  Status status() const { return ok() ? Status::OK() : Status::InvalidArgument(*error_); }

 private:
  const nlohmann::json* Find(const char* key, bool required);
  bool Read(const nlohmann::json& v, const char* key, int64_t* out);
  bool Read(const nlohmann::json& v, const char* key, uint64_t* out);
  bool Read(const nlohmann::json& v, const char* key, int* out);
  bool Read(const nlohmann::json& v, const char* key, double* out);
  bool Read(const nlohmann::json& v, const char* key, bool* out);
  bool Read(const nlohmann::json& v, const char* key, std::string* out);
  // Each returns whether *out was set: false for a wrong type (a problem,
  // or skipped).
  template <typename T>
  bool Read(const nlohmann::json& v, const char* key, std::vector<T>* out) {
    if (!v.is_array()) return Mismatch(key, "expected an array");
    std::vector<T> items;
    for (const nlohmann::json& item : v) {
      T t{};
      if (!Read(item, key, &t)) return false;
      items.push_back(std::move(t));
    }
    *out = std::move(items);
    return true;
  }

  JsonFields(const nlohmann::json& j, std::string what, WrongTypes wrong_types,
             std::shared_ptr<std::string> error);
  // A field of the wrong type: a problem, or skipped (kSkipWrongTypes).
  // Returns false.
  bool Mismatch(const char* key, const char* expected);
  static const nlohmann::json& Empty();
  const nlohmann::json& j_;
  std::string what_;
  WrongTypes wrong_types_;
  // The first problem, shared with the objects read from it; made only
  // when there is one to record or to share (a one-field read allocates
  // nothing).
  std::shared_ptr<std::string> error_;
};

// The list at `key` of the object `answer`, each entry decoded by `decode`
// (Result<T>(const nlohmann::json&)): the one way an answer's list is read.
// kCorruption naming the list when it is absent or not one, or naming the
// first entry that does not decode ("events[3]: ...").
template <typename T, typename Decode>
Result<std::vector<T>> DecodeList(const nlohmann::json& answer, const char* key, Decode decode) {
  if (!answer.is_object() || !answer.contains(key) || !answer[key].is_array())
    return Status::Corruption(std::string("the answer has no list \"") + key + "\"");
  std::vector<T> out;
  for (const nlohmann::json& item : answer[key]) {
    Result<T> one = decode(item);
    if (!one.ok()) {
      return Status::Corruption(std::string(key) + "[" + std::to_string(out.size()) +
                                "]: " + one.status().message());
    }
    out.push_back(std::move(one).value());
  }
  return out;
}

}  // namespace tarmac
