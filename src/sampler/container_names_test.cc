// SPDX-License-Identifier: Apache-2.0
#include "sampler/container_names.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "testutil/testutil.h"

namespace tarmac::sampler {
namespace {

const std::string kContainerId(64, 'a');

TEST(ContainerNamesTest, ReadsContainerdAndCrioAnnotations) {
  node::KubernetesNames containerd = ParseOciAnnotations(R"({"ociVersion":"1.1.0","annotations":{
    "io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-name":"trainer-7f9c",
    "io.kubernetes.cri.sandbox-namespace":"ml-team","io.kubernetes.cri.container-name":"pytorch"}})");
  EXPECT_EQ(containerd.pod, "trainer-7f9c");
  EXPECT_EQ(containerd.pod_namespace, "ml-team");
  EXPECT_EQ(containerd.container, "pytorch");
  node::KubernetesNames crio = ParseOciAnnotations(R"({"annotations":{"io.kubernetes.pod.name":"infer-0",
    "io.kubernetes.pod.namespace":"serving","io.kubernetes.container.name":"vllm"}})");
  EXPECT_EQ(crio.pod, "infer-0");
  EXPECT_EQ(crio.pod_namespace, "serving");
  EXPECT_EQ(crio.container, "vllm");
}

TEST(ContainerNamesTest, AnythingElseGivesNoNames) {
  EXPECT_TRUE(ParseOciAnnotations("").empty());
  EXPECT_TRUE(ParseOciAnnotations("{not json").empty());
  EXPECT_TRUE(ParseOciAnnotations("[1,2]").empty());
  EXPECT_TRUE(ParseOciAnnotations(R"({"annotations":"x"})").empty());
  EXPECT_TRUE(ParseOciAnnotations(R"({"annotations":{"io.kubernetes.pod.name":42}})").empty());
  // A plain Docker container: annotations, none of them Kubernetes'.
  EXPECT_TRUE(ParseOciAnnotations(R"({"annotations":{"org.opencontainers.image.title":"x"}})").empty());
}

TEST(ContainerNamesTest, FindsBundlesOfBothLayoutsAndRefusesPathsForIds) {
  testing::TempDir containerd;
  testing::TempDir crio;
  ::mkdir((containerd.path() + "/" + kContainerId).c_str(), 0755);
  containerd.Write(
      kContainerId + "/config.json",
      R"({"annotations":{"io.kubernetes.cri.sandbox-name":"a","io.kubernetes.cri.sandbox-namespace":"n"}})");
  std::string other(64, 'b');
  ::mkdir((crio.path() + "/" + other).c_str(), 0755);
  ::mkdir((crio.path() + "/" + other + "/userdata").c_str(), 0755);
  crio.Write(other + "/userdata/config.json", R"({"annotations":{"io.kubernetes.pod.name":"b"}})");
  ContainerNames names({containerd.path(), crio.path()});
  EXPECT_EQ(names.Lookup(kContainerId).pod, "a");
  EXPECT_EQ(names.Lookup(kContainerId).pod_namespace, "n");
  EXPECT_EQ(names.Lookup(other).pod, "b");
  EXPECT_TRUE(names.Lookup(std::string(64, 'c')).empty());  // No bundle.
  EXPECT_TRUE(names.Lookup("../" + kContainerId).empty());  // Not an id: never a path.
}

}  // namespace
}  // namespace tarmac::sampler
