// SPDX-License-Identifier: Apache-2.0
//
// The fleet as ReadCluster reads it from a Prometheus (a stand-in answering
// the queries it asks): a GPU the kubelet allocated to a pod carries the
// pod, in the view, the JSON and the holder column.
#include "cluster/cluster_read.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "cluster/cluster_render.h"

namespace tarmac::cluster {
namespace {

std::string Vector(const std::string& items) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)" + items + "]}}";
}

TEST(ClusterReadTest, AGpuAllocatedToAPodCarriesThePod) {
  httplib::Server server;
  server.Post("/api/v1/query", [](const httplib::Request& req, httplib::Response& res) {
    std::string q = req.get_param_value("query");
    std::string body = Vector("");
    if (q == "last_over_time(tarmac_gpu_info[1d])") {
      body = Vector(R"({"metric":{"instance":"n1:9477","hostname":"n1","gpu":"0","uuid":"GPU-1","model":"H100"},"value":[1,"1"]},
                      {"metric":{"instance":"n1:9477","hostname":"n1","gpu":"1","uuid":"GPU-2","model":"H100"},"value":[1,"1"]})");
    } else if (q == "up") {
      body = Vector(R"({"metric":{"instance":"n1:9477","job":"tarmac"},"value":[1,"1"]})");
    } else if (q.find("tarmac_gpu_pod_allocated") != std::string::npos) {
      body = Vector(R"({"metric":{"instance":"n1:9477","gpu":"1","namespace":"ml","pod":"train-0"},"value":[1,"1"]})");
    } else if (q == "time()") {
      body = R"({"status":"success","data":{"resultType":"scalar","result":[1796000000,"1796000000"]}})";
    }
    res.set_content(body, "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  prom::PromOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(port);
  Result<std::unique_ptr<prom::PromClient>> client = prom::PromClient::Make(options);
  ASSERT_TRUE(client.ok());
  Result<ClusterView> view = ReadCluster(client.value().get());
  server.stop();
  serving.join();
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ(view.value().nodes.size(), 1u);
  ASSERT_EQ(view.value().nodes[0].gpus.size(), 2u);
  EXPECT_EQ(view.value().nodes[0].gpus[0].pod, "");
  EXPECT_EQ(view.value().nodes[0].gpus[1].pod, "ml/train-0");
  EXPECT_EQ(HolderText(view.value().nodes[0].gpus[1]), "pod ml/train-0");
  EXPECT_EQ(HolderText(view.value().nodes[0].gpus[0]), "-");
}

}  // namespace
}  // namespace tarmac::cluster
