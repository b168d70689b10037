// SPDX-License-Identifier: Apache-2.0
//
// The packed form of a run of samples (one GPU's or one process's minute):
// columns of optional integers against increasing times, stored column by
// column as deltas in variable-length integers, with runs of unchanged
// values collapsed. An idle GPU's minute of eight readings takes about
// twenty bytes; a busy one about one byte per reading. docs/store.md
// describes the layout byte by byte.
//
// DecodeBlock is a parser of stored bytes: it checks every length and
// bound and returns kCorruption on anything malformed (fuzz/store_block).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tarmac::store {

struct Block {
  std::vector<int64_t> times;  // Strictly increasing, each >= the base.
  // columns[c][i] is column c at times[i]; empty when not read.
  std::vector<std::vector<std::optional<int64_t>>> columns;
};

// Most rows and columns a block may hold (a minute at 100 ms, with room).
inline constexpr size_t kMaxBlockRows = 4096;
inline constexpr size_t kMaxBlockColumns = 64;

// REQUIRES: times strictly increasing and >= base; every column as long as
// times; at most kMaxBlockRows rows and kMaxBlockColumns columns.
std::string EncodeBlock(int64_t base, const Block& block);

Result<Block> DecodeBlock(int64_t base, std::string_view bytes);

// The variable-length integers blocks are made of, for other packed rows.
void PutVarint(uint64_t v, std::string* out);
uint64_t ZigZag(int64_t v);
int64_t UnZigZag(uint64_t v);

class VarintReader {
 public:
  explicit VarintReader(std::string_view bytes) : bytes_(bytes) {}
  // False when the bytes end first or the integer is longer than 64 bits.
  bool Next(uint64_t* v);
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace tarmac::store
