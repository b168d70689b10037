// SPDX-License-Identifier: Apache-2.0
#include "prom/vector_answer.h"

#include <simdjson.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace tarmac::prom {
namespace {

namespace od = simdjson::ondemand;

// Deeper than this is refused before decoding (http/bounded_fetch.h); the
// parser's own bound is a second fence, not the limit users meet.
constexpr size_t kMaxDepth = 256;
static_assert(kVectorAnswerPadding >= simdjson::SIMDJSON_PADDING);

bool ValidText(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

// A string value, its escapes undone; false for anything else or a string
// the parse tree would refuse (an escape naming half a surrogate pair).
bool StringOf(od::value v, std::string_view* out) { return !v.get_string().get(*out) && ValidText(*out); }

// An object's field: its key (escapes undone, checked as UTF-8) and its
// value; false when either is malformed. Every key the decoder meets comes
// through here.
template <typename Field>
bool Open(Field field, std::string_view* key, od::value* value) {
  return !field.unescaped_key().get(*key) && ValidText(*key) && !field.value().get(*value);
}

// Reads a value the answer's shape does not use, to its last byte, so
// that the decoder accepts only what the parse tree accepts: on-demand
// parsing otherwise checks a skipped value's structure, not its atoms.
bool Walk(od::value v) {
  od::json_type type;
  if (v.type().get(type)) return false;
  switch (type) {
    case od::json_type::array:
      for (auto element : v.get_array()) {
        od::value e;
        if (element.get(e) || !Walk(e)) return false;
      }
      return true;
    case od::json_type::object:
      for (auto field : v.get_object()) {
        std::string_view key;
        od::value e;
        if (!Open(field, &key, &e) || !Walk(e)) return false;
      }
      return true;
    case od::json_type::number: {
      double d;
      return !v.get_double().get(d);
    }
    case od::json_type::string: {
      std::string_view s;
      return StringOf(v, &s);
    }
    case od::json_type::boolean: {
      bool b;
      return !v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      return !v.is_null().get(is_null) && is_null;
    }
  }
  return false;
}

// A string's text into `text` (true in *is_string); any other value is
// read to its end. False when either is malformed.
bool StringOrWalk(od::value v, std::string_view* text, bool* is_string) {
  od::json_type type;
  if (v.type().get(type)) return false;
  *is_string = type == od::json_type::string;
  return *is_string ? StringOf(v, text) : Walk(v);
}

// Whether `v` is JSON true; the value is read whole either way.
bool IsTrue(od::value v, bool* ok) {
  bool b = false;
  od::json_type type;
  if (v.type().get(type)) return *ok = false;
  if (type == od::json_type::boolean) {
    *ok = !v.get_bool().get(b);
    return b;
  }
  *ok = Walk(v);
  return false;
}

// A sample's [time, value]: two elements, each a number or a string
// ("NaN", "+Inf"); anything else is left to the parse tree.
bool ReadPoint(od::value v, Sample* s) {
  od::array point;
  if (v.get_array().get(point)) return false;
  double parts[2] = {0, 0};
  size_t n = 0;
  for (auto element : point) {
    od::value e;
    od::json_type type;
    if (element.get(e) || e.type().get(type) || n == 2) return false;
    if (type == od::json_type::number) {
      if (e.get_double().get(parts[n])) return false;
    } else if (type == od::json_type::string) {
      std::string_view text;
      if (!StringOf(e, &text)) return false;
      parts[n] = std::strtod(std::string(text).c_str(), nullptr);
    } else {
      return false;
    }
    ++n;
  }
  if (n != 2) return false;
  s->timestamp_seconds = parts[0];
  s->value = parts[1];
  return true;
}

// A series' labels: its string values (the parse tree drops the others);
// a "metric" that is not an object gives none.
bool ReadLabels(od::value v, Labels* labels) {
  labels->clear();
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type != od::json_type::object) return Walk(v);
  for (auto field : v.get_object()) {
    std::string_view key;
    od::value e;
    if (!Open(field, &key, &e)) return false;
    std::string name(key);
    std::string_view text;
    bool is_string = false;
    if (!StringOrWalk(e, &text, &is_string)) return false;
    if (is_string) labels->Set(std::move(name), std::string(text));
  }
  return true;
}

// One {metric, value} item; the last of a repeated key counts, as in the
// parse tree.
bool ReadSample(od::value v, Sample* s) {
  od::object item;
  if (v.get_object().get(item)) return false;
  bool has_value = false;
  for (auto field : item) {
    std::string_view key;
    od::value e;
    if (!Open(field, &key, &e)) return false;
    if (key == "metric") {
      if (!ReadLabels(e, &s->labels)) return false;
    } else if (key == "value") {
      has_value = ReadPoint(e, s);
      if (!has_value) return false;
    } else if (!Walk(e)) {
      return false;
    }
  }
  s->labels.Seal();
  return has_value;
}

// What "data" holds, by its last keys.
struct Data {
  bool is_vector = false;
  bool has_result = false;
  bool is_partial = false;
};

bool ReadResult(od::value v, std::vector<Sample>* samples, bool* is_array) {
  samples->clear();
  od::json_type type;
  if (v.type().get(type)) return false;
  *is_array = type == od::json_type::array;
  if (!*is_array) return Walk(v);
  for (auto element : v.get_array()) {
    od::value e;
    Sample s;
    if (element.get(e) || !ReadSample(e, &s)) return false;
    samples->push_back(std::move(s));
  }
  return true;
}

bool ReadData(od::value v, QueryResult* out, Data* data, bool* is_object) {
  od::json_type type;
  if (v.type().get(type)) return false;
  *data = Data();
  out->samples.clear();
  *is_object = type == od::json_type::object;
  if (!*is_object) return Walk(v);
  for (auto field : v.get_object()) {
    std::string_view key;
    od::value e;
    if (!Open(field, &key, &e)) return false;
    bool ok = true;
    if (key == "resultType") {
      std::string_view text;
      bool is_string = false;
      ok = StringOrWalk(e, &text, &is_string);
      data->is_vector = is_string && text == "vector";
    } else if (key == "result") {
      ok = ReadResult(e, &out->samples, &data->has_result);
    } else if (key == "isPartial") {
      data->is_partial = IsTrue(e, &ok);
    } else {
      ok = Walk(e);
    }
    if (!ok) return false;
  }
  return true;
}

bool ReadWarnings(od::value v, std::vector<std::string>* warnings) {
  warnings->clear();
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type != od::json_type::array) return Walk(v);
  for (auto element : v.get_array()) {
    od::value e;
    std::string_view text;
    bool is_string = false;
    if (element.get(e) || !StringOrWalk(e, &text, &is_string)) return false;
    if (is_string) warnings->emplace_back(text);
  }
  return true;
}

}  // namespace

std::optional<QueryResult> DecodeVectorAnswer(const std::string& body) {
  // The parser reads a few bytes past the text: the string's own spare
  // room when it has enough, else a padded copy.
  simdjson::padded_string copy;
  simdjson::padded_string_view text(body.data(), body.size(), body.capacity());
  if (body.capacity() < body.size() + kVectorAnswerPadding) {
    copy = simdjson::padded_string(body);
    text = copy;
  }
  od::parser parser(simdjson::SIMDJSON_MAXSIZE_BYTES);
  if (parser.allocate(body.size(), kMaxDepth)) return std::nullopt;
  od::document doc;
  od::object top;
  if (parser.iterate(text).get(doc) || doc.get_object().get(top)) return std::nullopt;
  QueryResult out;
  std::string status;
  Data data;
  bool data_is_object = false;
  bool partial[2] = {false, false};  // isPartial, partial_response.
  for (auto field : top) {
    std::string_view key;
    od::value e;
    if (!Open(field, &key, &e)) return std::nullopt;
    bool ok = true;
    if (key == "status") {
      std::string_view s;
      bool is_string = false;
      ok = StringOrWalk(e, &s, &is_string);
      status = is_string ? std::string(s) : std::string();
    } else if (key == "data") {
      ok = ReadData(e, &out, &data, &data_is_object);
    } else if (key == "warnings") {
      ok = ReadWarnings(e, &out.warnings);
    } else if (key == "isPartial") {
      partial[0] = IsTrue(e, &ok);
    } else if (key == "partial_response") {
      partial[1] = IsTrue(e, &ok);
    } else {
      ok = Walk(e);
    }
    if (!ok) return std::nullopt;
  }
  // Nothing may follow the answer: past its end there is no location.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return std::nullopt;
  if (status != "success" || !data_is_object || !data.is_vector || !data.has_result) return std::nullopt;
  out.is_partial = partial[0] || partial[1] || data.is_partial;
  return out;
}

}  // namespace tarmac::prom
