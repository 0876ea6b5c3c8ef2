// ClusterNode::Create reads the etcd credentials named in the config: a
// missing password file or CA file refuses the start with the field named;
// contacts nobody.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "agent/coord/cluster.h"

namespace ballast::coord {
namespace {

TEST_CASE("ClusterNode::Create reads the etcd credentials and names what is missing",
          "[cluster_create]") {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("ballast-cluster-create-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ClusterOptions o;
  o.cache_file = dir + "/cache.pb";
  o.config.add_endpoints("https://198.18.200.1:2379");
  o.config.set_node("r1");
  o.config.set_etcd_username("ballast");
  o.config.set_etcd_password_file(dir + "/missing");
  auto n = ClusterNode::Create(o);
  REQUIRE_FALSE(n.ok());
  INFO(n.status().ToString());
  CHECK(absl::StrContains(n.status().message(), "cluster.etcd_password_file"));

  std::ofstream(dir + "/empty").flush();
  o.config.set_etcd_password_file(dir + "/empty");
  CHECK_FALSE(ClusterNode::Create(o).ok());

  std::ofstream(dir + "/password") << "s3cret\n";
  o.config.set_etcd_password_file(dir + "/password");
  CHECK(ClusterNode::Create(o).ok());

  o.config.set_etcd_ca_file(dir + "/no-ca.pem");
  n = ClusterNode::Create(o);
  REQUIRE_FALSE(n.ok());
  CHECK(absl::StrContains(n.status().message(), "ca_file"));
  CHECK(absl::StrContains(n.status().message(), "no-ca.pem"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ballast::coord
