// SPDX-License-Identifier: Apache-2.0
#include "store/lease_event_kinds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace tarmac::store {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// docs/protocol.md's list of event kinds is this list, in its order.
TEST(LeaseEventKindsTest, TheProtocolDocumentListsEveryKind) {
  std::string doc = ReadFile(std::filesystem::path(TARMAC_SOURCE_DIR) / "docs/protocol.md");
  size_t begin = doc.find("Event kinds:");
  ASSERT_NE(begin, std::string::npos);
  std::string list = doc.substr(begin, doc.find("\n\n", begin) - begin);
  std::vector<std::string> documented;
  std::regex code("`([a-z_]+)`");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), code); it != std::sregex_iterator(); ++it) {
    std::string kind = (*it)[1];
    if (kind == "lease" || kind == "reason" ||
        std::find(documented.begin(), documented.end(), kind) != documented.end())
      continue;
    documented.push_back(kind);
  }
  EXPECT_EQ(documented, LeaseEventKinds());
}

// Every kind the lease service records by name (Event("kind", ...),
// EndLease(id, "kind", ...)) is in the list.
TEST(LeaseEventKindsTest, EveryKindRecordedByNameIsListed) {
  std::set<std::string> listed(LeaseEventKinds().begin(), LeaseEventKinds().end());
  std::regex recorded(R"re((?:\bEvent|EndLease)\(\s*(?:[a-z_]+,\s*)?"([a-z_]+)")re");
  int seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(TARMAC_SOURCE_DIR) / "src/leases")) {
    if (entry.path().extension() != ".cc" || entry.path().string().find("_test.cc") != std::string::npos)
      continue;
    std::string text = ReadFile(entry.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), recorded); it != std::sregex_iterator();
         ++it) {
      ++seen;
      EXPECT_EQ(listed.count((*it)[1]), 1u) << (*it)[1] << " in " << entry.path();
    }
  }
  EXPECT_GT(seen, 20);  // The scan finds them.
}

}  // namespace
}  // namespace tarmac::store
