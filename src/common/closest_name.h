// SPDX-License-Identifier: Apache-2.0
//
// "Did you mean": the known name nearest to a misspelt one. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac {

// The name in `names` nearest to `word` by edit distance (insertions,
// deletions, substitutions and swaps of two neighbours each count one),
// when it is near enough to be a slip: at most 1 for words of up to 4
// characters, 2 up to 8, else 3. Empty when none is, or for an exact match.
std::optional<std::string> ClosestName(std::string_view word, const std::vector<std::string>& names);

// "; did you mean 'status'?" or "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& names);

}  // namespace tarmac
