// SPDX-License-Identifier: Apache-2.0
// The API's one table of methods against docs/protocol.md: every method the
// agent serves is documented, and every documented method is served.
#include "agent/api_methods.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "testutil/fake_clock.h"
#include "testutil/testutil.h"

namespace tarmac::agent {
namespace {

class NoProcesses : public leases::ProcessControl {
 public:
  std::optional<leases::ProcessIdentity> Identify(int64_t) override { return std::nullopt; }
  Status Signal(const sched::ProcessRef&, int64_t, int) override { return Status::NotFound("none"); }
  std::vector<leases::ProcessIdentity> LeaseProcesses(const std::string&, int64_t, int64_t) override {
    return {};
  }
};

// Method names the protocol documents: `### `name`` headings under
// "## Methods", and the first column of the tables under "## Lease methods"
// and "## Backfill methods".
std::set<std::string> DocumentedMethods() {
  std::ifstream in(testing::SourceDir() + "/docs/protocol.md");
  std::stringstream text;
  text << in.rdbuf();
  std::set<std::string> names;
  std::string section;
  std::string line;
  std::istringstream lines(text.str());
  std::regex heading(R"(^### `([a-z_.]+)`)");
  std::regex row(R"(^\| `([a-z_.]+)` \|)");
  while (std::getline(lines, line)) {
    if (line.rfind("## ", 0) == 0) section = line;
    std::smatch m;
    if (section == "## Methods" && std::regex_search(line, m, heading)) names.insert(m[1]);
    if ((section == "## Lease methods" || section == "## Backfill methods") &&
        std::regex_search(line, m, row)) {
      names.insert(m[1]);
    }
  }
  return names;
}

TEST(ApiMethodsTest, EveryServedMethodIsDocumentedAndEveryDocumentedOneServed) {
  NoProcesses processes;
  testing::FakeClock clock;
  Logger logger{LogLevel::kOff};
  leases::LeaseService leases(leases::LeasePolicy{}, nullptr, &processes, &clock, &logger);
  testing::TempDir dir;
  BackfillJobs backfill(
      {dir.path() + "/backfill", "tarmac-backfill-runner", dir.path() + "/sock", "tarmac-admin", nullptr},
      &processes, &clock, &logger);
  ipc::MethodTable table;
  ASSERT_TRUE(AddApiMethods(
                  &table, [](const ipc::Request&, const ipc::PeerCredentials&) { return std::string(); },
                  &leases, &backfill)
                  .ok());
  std::set<std::string> served;
  for (const ipc::Method& m : table.methods()) served.insert(m.name);
  EXPECT_EQ(served, DocumentedMethods());
  EXPECT_GE(served.size(), 12u);
  // A name twice is refused.
  EXPECT_EQ(table.Add("status", nullptr).code(), StatusCode::kInvalidArgument);
  // An unknown method is answered with every name in the table.
  ipc::Request unknown;
  unknown.method = "lease.steal";
  std::string answer = table.Dispatch(unknown, {}).value();
  EXPECT_NE(answer.find("unknown_method"), std::string::npos) << answer;
  for (const std::string& name : served) EXPECT_NE(answer.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace tarmac::agent
