// SPDX-License-Identifier: Apache-2.0
#include "prom/vector_answer.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tarmac::prom {
namespace {

using json = nlohmann::json;

// Walks the answer keeping the names of the containers it is in: "" for
// the top object, then each object's key ("data", "result", "metric",
// "value"), or "[]" for an array's element.
class VectorSax : public nlohmann::json_sax<json> {
 public:
  explicit VectorSax(QueryResult* out) : out_(out) {}

  bool is_vector_success() const {
    return status_ == "success" && result_type_ == "vector" && data_is_object_ && result_is_array_ &&
           shape_ok_;
  }

  bool null() override {
    Seen(Kind::kOther);
    return true;
  }
  bool boolean(bool b) override {
    Seen(Kind::kOther);
    // As the parse tree keeps it: the last of a repeated key.
    if (Path({"", "isPartial"})) partial_[0] = b;
    if (Path({"", "partial_response"})) partial_[1] = b;
    if (Path({"", "data", "isPartial"})) partial_[2] = b;
    out_->is_partial = partial_[0] || partial_[1] || partial_[2];
    return true;
  }
  bool number_integer(number_integer_t n) override { return Number(static_cast<double>(n)); }
  bool number_unsigned(number_unsigned_t n) override { return Number(static_cast<double>(n)); }
  bool number_float(number_float_t n, const string_t&) override { return Number(n); }
  bool binary(binary_t&) override { return Fail(); }
  bool string(string_t& s) override {
    Seen(Kind::kString);
    return Scalar(&s, true);
  }

  bool start_object(std::size_t) override {
    Seen(Kind::kObject);
    names_.push_back(Name());
    if (In({"", "data"})) {  // A repeated key replaces what came before, as in the parse tree.
      out_->samples.clear();
      result_type_.clear();
      partial_[2] = false;
    }
    if (In({"", "data", "result", "[]"})) {
      sample_ = Sample();
      value_index_ = 0;
    }
    if (In({"", "data", "result", "[]", "metric"})) sample_.labels.clear();
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    if (In({"", "data", "result", "[]"})) {
      if (value_index_ != 2) return Fail();
      sample_.labels.Seal();
      out_->samples.push_back(std::move(sample_));
    }
    names_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    Seen(Kind::kArray);
    names_.push_back(Name());
    in_array_.push_back(names_.size());
    if (In({"", "data", "result"})) out_->samples.clear();
    if (In({"", "data", "result", "[]", "value"})) value_index_ = 0;
    return true;
  }
  bool end_array() override {
    names_.pop_back();
    in_array_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  // The name the next value takes in the container it is in.
  std::string Name() const {
    if (names_.empty()) return "";
    return !in_array_.empty() && in_array_.back() == names_.size() ? "[]" : key_;
  }

  // Whether the next value's path (its containers and its own name) is
  // `path`.
  bool Path(std::initializer_list<const char*> path) const {
    if (path.size() != names_.size() + 1) return false;
    size_t i = 0;
    for (const char* name : path) {
      const std::string& have = i < names_.size() ? names_[i] : Name();
      if (have != name) return false;
      ++i;
    }
    return true;
  }

  // Whether the container the parser is in has the path `path`.
  bool In(std::initializer_list<const char*> path) const {
    if (path.size() != names_.size()) return false;
    size_t i = 0;
    for (const char* name : path) {
      if (names_[i++] != name) return false;
    }
    return true;
  }

  enum class Kind { kString, kObject, kArray, kOther };

  // What a value of a repeated key undoes, as the parse tree keeps only
  // the last: called before each value with its kind.
  void Seen(Kind kind) {
    if (Path({"", "status"}) && kind != Kind::kString) status_.clear();
    if (Path({"", "data", "resultType"}) && kind != Kind::kString) result_type_.clear();
    if (Path({"", "data"})) data_is_object_ = kind == Kind::kObject;
    if (Path({"", "data", "result"})) result_is_array_ = kind == Kind::kArray;
    if (Path({"", "warnings"})) out_->warnings.clear();
    if (Path({"", "data", "result", "[]", "metric"}) && kind != Kind::kObject) sample_.labels.clear();
  }

  bool Number(double n) {
    Seen(Kind::kOther);
    if (Path({"", "data", "result", "[]", "value", "[]"})) return Value(n);
    return true;
  }

  bool Scalar(const std::string* s, bool is_string) {
    if (is_string && s != nullptr) {
      if (Path({"", "status"})) status_ = *s;
      if (Path({"", "data", "resultType"})) result_type_ = *s;
      if (Path({"", "warnings", "[]"})) out_->warnings.push_back(*s);
      if (names_.size() == 5 && Path({"", "data", "result", "[]", "metric", key_.c_str()})) {
        sample_.labels.Set(key_, *s);
      }
      if (Path({"", "data", "result", "[]", "value", "[]"})) return Value(std::strtod(s->c_str(), nullptr));
    }
    return true;
  }

  // The time, then the value, of a sample's [time, "value"].
  bool Value(double v) {
    if (value_index_ == 0) sample_.timestamp_seconds = v;
    if (value_index_ == 1) sample_.value = v;
    if (++value_index_ > 2) return Fail();
    return true;
  }

  bool Fail() {
    shape_ok_ = false;
    return false;
  }

  QueryResult* out_;
  std::vector<std::string> names_;
  std::vector<size_t> in_array_;  // Depths (names_ sizes) that are arrays.
  std::string key_;
  std::string status_;
  std::string result_type_;
  bool shape_ok_ = true;
  Sample sample_;
  int value_index_ = 0;
  bool partial_[3] = {false, false, false};  // isPartial, partial_response, data.isPartial.
  bool data_is_object_ = false;
  bool result_is_array_ = false;
};

}  // namespace

std::optional<QueryResult> DecodeVectorAnswer(std::string_view body) {
  QueryResult out;
  VectorSax sax(&out);
  bool parsed = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::json, true);
  if (!parsed || !sax.is_vector_success()) return std::nullopt;
  return out;
}

}  // namespace tarmac::prom
