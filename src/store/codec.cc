// SPDX-License-Identifier: Apache-2.0
#include "store/codec.h"

#include "common/check.h"

namespace tarmac::store {
void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

bool VarintReader::Next(uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= bytes_.size()) return false;
    uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

namespace {

constexpr uint8_t kFormat = 1;

// A value as stored: 0 for "not read", else zigzag(v) + 1.
uint64_t Present(const std::optional<int64_t>& v) { return v ? ZigZag(*v) + 1 : 0; }

// Writes `values` as deltas; a zero delta is followed by how many more
// zero deltas come after it.
void PutColumn(const std::vector<uint64_t>& values, std::string* out) {
  uint64_t previous = 0;
  for (size_t i = 0; i < values.size();) {
    int64_t delta = static_cast<int64_t>(values[i] - previous);
    PutVarint(ZigZag(delta), out);
    previous = values[i];
    ++i;
    if (delta != 0) continue;
    uint64_t run = 0;
    while (i < values.size() && values[i] == previous) {
      ++run;
      ++i;
    }
    PutVarint(run, out);
  }
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : varints_(bytes) {}
  bool Varint(uint64_t* v) { return varints_.Next(v); }
  bool Column(size_t n, std::vector<uint64_t>* out) {
    out->clear();
    uint64_t previous = 0;
    while (out->size() < n) {
      uint64_t z = 0;
      if (!Varint(&z)) return false;
      int64_t delta = UnZigZag(z);
      previous += static_cast<uint64_t>(delta);
      out->push_back(previous);
      if (delta != 0) continue;
      uint64_t run = 0;
      if (!Varint(&run) || run > n - out->size()) return false;
      out->insert(out->end(), run, previous);
    }
    return true;
  }
  bool AtEnd() const { return varints_.AtEnd(); }

 private:
  VarintReader varints_;
};

}  // namespace

std::string EncodeBlock(int64_t base, const Block& block) {
  size_t n = block.times.size();
  TARMAC_CHECK(n <= kMaxBlockRows && block.columns.size() <= kMaxBlockColumns);
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  PutVarint(block.columns.size(), &out);
  PutVarint(n, &out);
  // Times as gaps minus one: a regular 1 s series is all zeros.
  std::vector<uint64_t> gaps;
  int64_t previous = base - 1;
  for (int64_t t : block.times) {
    TARMAC_CHECK(t > previous);
    gaps.push_back(static_cast<uint64_t>(t - previous - 1));
    previous = t;
  }
  PutColumn(gaps, &out);
  std::vector<uint64_t> values;
  for (const std::vector<std::optional<int64_t>>& column : block.columns) {
    TARMAC_CHECK(column.size() == n);
    values.clear();
    for (const std::optional<int64_t>& v : column) values.push_back(Present(v));
    PutColumn(values, &out);
  }
  return out;
}

Result<Block> DecodeBlock(int64_t base, std::string_view bytes) {
  auto corrupt = [](const char* what) { return Status::Corruption("store: packed samples", what); };
  if (bytes.empty() || static_cast<uint8_t>(bytes[0]) != kFormat) return corrupt("unknown format");
  Reader r(bytes.substr(1));
  uint64_t columns = 0;
  uint64_t n = 0;
  if (!r.Varint(&columns) || !r.Varint(&n)) return corrupt("truncated header");
  if (columns > kMaxBlockColumns || n > kMaxBlockRows) return corrupt("too many rows or columns");
  Block block;
  std::vector<uint64_t> values;
  if (!r.Column(n, &values)) return corrupt("truncated times");
  int64_t previous = base - 1;
  for (uint64_t gap : values) {
    if (gap > (uint64_t{1} << 40)) return corrupt("time out of range");
    previous += static_cast<int64_t>(gap) + 1;
    block.times.push_back(previous);
  }
  block.columns.resize(columns);
  for (uint64_t c = 0; c < columns; ++c) {
    if (!r.Column(n, &values)) return corrupt("truncated column");
    std::vector<std::optional<int64_t>>& column = block.columns[c];
    for (uint64_t v : values) {
      column.push_back(v == 0 ? std::nullopt : std::optional<int64_t>(UnZigZag(v - 1)));
    }
  }
  if (!r.AtEnd()) return corrupt("trailing bytes");
  return block;
}

}  // namespace tarmac::store
