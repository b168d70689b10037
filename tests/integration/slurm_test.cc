// SPDX-License-Identifier: Apache-2.0
//
// tarmac under Slurm, through the commands Slurm's Prolog= and Epilog= call,
// with Slurm's environment, against a real agent over the fake NVML: the
// job's GPUs become a lease of kind slurm that `tarmac run` cannot take, the
// epilog ends it and terminates the process the job left behind, and both
// fail safe (exit 0, saying why) when the agent is down or the input is bad.
// gres-conf over the real NVML path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class SlurmTest : public LeaseFixture {
 protected:
  std::map<std::string, std::string> Job(const std::string& id, const std::string& gpus) {
    return {{"SLURM_JOB_ID", id},
            {"SLURM_JOB_UID", std::to_string(::getuid())},
            {"SLURM_JOB_USER", "erin"},
            {"SLURM_JOB_GPUS", gpus}};
  }
  RunResult Script(const std::string& name, const std::map<std::string, std::string>& env,
                   std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"slurm", name, "--socket", Socket()};
    args.insert(args.end(), more.begin(), more.end());
    return Tarmac(args, env);
  }
};

TEST_F(SlurmTest, PrologLeasesTheJobsGpusAndTheEpilogCleansUpAfterIt) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLeaseAgent();
  RunResult prolog = Script("prolog", Job("77", "1"));
  ASSERT_EQ(prolog.exit_code, 0) << prolog.err;
  EXPECT_NE(prolog.out.find("job 77 holds GPU 1 (lease"), std::string::npos) << prolog.out;
  json leases = Leases();
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "slurm");
  EXPECT_EQ(leases[0]["user"], "erin");
  EXPECT_EQ(leases[0]["slurm_job"], "77");
  // tarmac run cannot take the job's GPU.
  EXPECT_EQ(Call("lease.request", {{"uuids", {Uuid(1)}}, {"command", "x"}})["state"], "queued");

  // The job leaves a process on its GPU.
  Child* leftover = StartLoad("1", {"--memory", "1GiB", "--util", "0"});
  ASSERT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][1]["processes"].size() == 1; }));
  RunResult epilog = Script("epilog", {{"SLURM_JOB_ID", "77"}});
  ASSERT_EQ(epilog.exit_code, 0) << epilog.err;
  EXPECT_NE(epilog.out.find("tarmac: job 77: 1 GPU for"), std::string::npos) << epilog.out;
  EXPECT_NE(epilog.out.find("1 process left on its GPUs terminated"), std::string::npos) << epilog.out;
  EXPECT_TRUE(WaitFor([&] { return !IsRunning(leftover->pid()); }));
  // The waiting request gets the GPU once the job is over.
  EXPECT_TRUE(WaitFor([&] {
    json l = Leases();
    return l.size() == 1 && l[0]["kind"] == "run";
  })) << Leases().dump();
  bool audited = false;
  for (const json& e : Events()) audited |= e["kind"] == "slurm_job_ended";
  EXPECT_TRUE(audited);

  // An epilog for a job the agent never saw: said, not fatal, unless --strict.
  RunResult again = Script("epilog", {{"SLURM_JOB_ID", "77"}});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.err.find("no lease for Slurm job 77"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("the job goes on without tarmac"), std::string::npos) << again.err;
  EXPECT_EQ(Script("epilog", {{"SLURM_JOB_ID", "77"}}, {"--strict"}).exit_code, 1);
}

// Backfill on a job's GPU gives way with its grace: the prolog waits,
// saying for what, and the job holds the GPU once the backfill has gone.
TEST_F(SlurmTest, ThePrologWaitsForBackfillOnItsGpuToGiveWayThenHoldsIt) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartLeaseAgent("[backfill]\ngrace = \"2s\"\nidle_for = \"0s\"\n");
  std::string d = dir_.path();
  Child* backfill =
      StartRun({"--priority", "backfill"},
               {"sh", "-c",
                "trap 'touch " + d + "/told; exit 0' TERM; touch " + d + "/up; while :; do sleep 0.1; done"},
               {}, "backfill.err");
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 1 && std::filesystem::exists(d + "/up"); }));
  RunResult prolog = Script("prolog", Job("78", "0"));
  ASSERT_EQ(prolog.exit_code, 0) << prolog.err;
  EXPECT_NE(prolog.err.find("backfill lease 1 of"), std::string::npos) << prolog.err;
  EXPECT_NE(prolog.err.find("gives way first"), std::string::npos) << prolog.err;
  EXPECT_NE(prolog.out.find("job 78 holds GPU 0 (lease"), std::string::npos) << prolog.out;
  // The backfill heard of it, stopped within its grace, and its run said why.
  EXPECT_TRUE(std::filesystem::exists(d + "/told"));
  backfill->Wait();
  std::ifstream said_file(d + "/backfill.err");
  std::string said((std::istreambuf_iterator<char>(said_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("revoked for another scheduler's job"), std::string::npos) << said;
  json leases = Leases();
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "slurm");
  std::vector<std::string> kinds = EventKinds(1);
  EXPECT_TRUE(Has(kinds, "preempting")) << json(kinds).dump();
  EXPECT_TRUE(Has(kinds, "released") || Has(kinds, "preempted")) << json(kinds).dump();
  bool names_the_job = false;
  for (const json& e : Events()) {
    names_the_job |=
        e["kind"] == "preempting" && e["detail"].get<std::string>().find("Slurm job 78") != std::string::npos;
  }
  EXPECT_TRUE(names_the_job);
}

// Without GPUs in the environment, the job's cgroup (v1) names them.
TEST_F(SlurmTest, ThePrologReadsTheJobsGpusFromItsCgroupWhenTheEnvironmentHasNone) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLeaseAgent();
  std::string job_dir = "cgroup/devices/slurm/uid_" + std::to_string(::getuid()) + "/job_90";
  std::filesystem::create_directories(dir_.path() + "/" + job_dir);
  dir_.Write(job_dir + "/devices.list", "c 195:255 rw\nc 195:1 rw\nc 1:3 rwm\n");
  RunResult prolog = Script("prolog", Job("90", ""), {"--cgroup-root", dir_.path() + "/cgroup"});
  ASSERT_EQ(prolog.exit_code, 0) << prolog.err;
  json leases = Leases();
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["gpus"], json::array({1}));
  EXPECT_EQ(leases[0]["slurm_job"], "90");
}

TEST_F(SlurmTest, BadInputAndADownAgentNeverHoldUpAJob) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLeaseAgent();
  RunResult bad = Script("prolog", Job("78", "GPU-abc"));
  EXPECT_EQ(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("SLURM_JOB_GPUS='GPU-abc'"), std::string::npos) << bad.err;
  RunResult missing = Script("prolog", Job("79", "5"));
  EXPECT_EQ(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no GPU 5"), std::string::npos) << missing.err;
  RunResult none = Script("prolog", Job("80", ""));  // A job with no GPUs.
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_TRUE(Leases().empty());
  RunResult no_job = Script("prolog", {});
  EXPECT_EQ(no_job.exit_code, 0);
  EXPECT_NE(no_job.err.find("SLURM_JOB_ID is not set"), std::string::npos);

  agents_.back()->KillAndWait(SIGTERM);
  RunResult down = Script("prolog", Job("81", "0"));
  EXPECT_EQ(down.exit_code, 0);
  EXPECT_NE(down.err.find("the job goes on without tarmac"), std::string::npos) << down.err;
  EXPECT_EQ(Script("prolog", Job("81", "0"), {"--strict"}).exit_code, 1);
}

TEST_F(SlurmTest, GresConfComesFromWhatNvmlReports) {
  UseScenarioText("[[gpu]]\ncount = 2\nnvlink = \"all\"\nnvlink_links = 4\ncpus = \"0-15\"\n");
  RunResult r =
      Tarmac({"slurm", "gres-conf", "--backend", "nvml", "--nvml-library", FakeNvmlPath(), "--node", "n1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("NodeName=n1 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia0 Cores=0-15 Links=-1,1\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("File=/dev/nvidia1 Cores=0-15 Links=1,-1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Gres=gpu:nvidia_h100_80gb_hbm3:2"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tarmac::testing
