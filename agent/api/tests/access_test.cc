// The method table and the access rules, without any transport.
#include <catch2/catch.hpp>
#include <google/protobuf/descriptor.h>

#include <set>

#include "agent/api/access.h"
#include "ballast/v1/api.pb.h"

namespace ballast::api {
namespace {

v1::AdminAccess Admin() {
  v1::AdminAccess a;
  a.add_identities()->set_name("ops-admin");
  v1::Identity* ro = a.add_identities();
  ro->set_name("reader.example");
  ro->set_read_only(true);
  return a;
}

// A verified TLS peer whose certificate has subject CN `cn` and the DNS/URI
// subject alternative names `sans` (none: no SAN extension).
PeerInfo Tls(std::string cn, std::vector<std::string> sans = {}) {
  PeerInfo p;
  p.transport = PeerInfo::Transport::kTls;
  p.verified = true;
  p.common_name = std::move(cn);
  p.has_san = !sans.empty();
  p.san_names = std::move(sans);
  p.address = "ipv4:127.0.0.1:5000";
  return p;
}

TEST_CASE("the method table lists exactly the RPCs of ballast.v1", "[access]") {
  const google::protobuf::FileDescriptor* file =
      google::protobuf::DescriptorPool::generated_pool()->FindFileByName("ballast/v1/api.proto");
  REQUIRE(file != nullptr);
  std::set<std::string> in_proto;
  for (int s = 0; s < file->service_count(); ++s) {
    const google::protobuf::ServiceDescriptor* svc = file->service(s);
    for (int m = 0; m < svc->method_count(); ++m) {
      in_proto.insert("/" + svc->full_name() + "/" + svc->method(m)->name());
    }
  }
  std::set<std::string> in_table;
  for (const MethodInfo& m : AllMethods()) in_table.insert(std::string(m.name));
  CHECK(in_table == in_proto);
  CHECK(in_table.size() == AllMethods().size());  // no duplicates
}

TEST_CASE("read methods are exactly List*, Get*, WatchEvents, QueryAudit, ConfigDiff", "[access]") {
  for (const MethodInfo& m : AllMethods()) {
    const std::string name(m.name.substr(m.name.rfind('/') + 1));
    INFO(name);
    const bool read = name.rfind("List", 0) == 0 || name.rfind("Get", 0) == 0 ||
                      name == "WatchEvents" || name == "QueryAudit" || name == "ConfigDiff";
    if (name == "ApplyConfig") {
      CHECK(m.access == Access::kWriteUnlessDry);
    } else {
      CHECK((m.access == Access::kRead) == read);
    }
  }
}

TEST_CASE("unix socket callers are trusted and named by uid", "[access]") {
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(Admin());
  REQUIRE(policy.ok());
  PeerInfo unix;
  unix.transport = PeerInfo::Transport::kUnix;
  unix.uid = 1000;
  absl::StatusOr<Caller> c = policy->Authorize(unix, Method::kTeardown);
  REQUIRE(c.ok());
  CHECK(c->actor == "operator:unix:uid=1000");
  CHECK_FALSE(c->read_only);
  unix.uid.reset();
  CHECK(policy->Authorize(unix, Method::kSetWeight)->actor == "operator:unix");
}

TEST_CASE("TLS identities: admin, read-only, unknown, unverified", "[access]") {
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(Admin());
  REQUIRE(policy.ok());

  SECTION("admin may write") {
    absl::StatusOr<Caller> c = policy->Authorize(Tls("ops-admin"), Method::kSetWeight);
    REQUIRE(c.ok());
    CHECK(c->actor == "operator:tls:ops-admin");
  }
  SECTION("read-only may read, not write") {
    for (const MethodInfo& m : AllMethods()) {
      INFO(m.name);
      absl::StatusOr<Caller> c = policy->Authorize(Tls("reader", {"reader.example"}), m.method);
      if (m.access == Access::kRead) {
        REQUIRE(c.ok());
        CHECK(c->actor == "operator:tls:reader.example");
        CHECK(c->read_only);
      } else {
        REQUIRE_FALSE(c.ok());
        CHECK(c.status().code() == absl::StatusCode::kPermissionDenied);
        CHECK_THAT(std::string(c.status().message()), Catch::Contains("read-only"));
      }
    }
  }
  SECTION("read-only may dry-run a config, not apply it") {
    CHECK(policy->Authorize(Tls("", {"reader.example"}), Method::kApplyConfig, true).ok());
    absl::StatusOr<Caller> c = policy->Authorize(Tls("", {"reader.example"}), Method::kApplyConfig);
    CHECK(c.status().code() == absl::StatusCode::kPermissionDenied);
    CHECK_THAT(std::string(c.status().message()),
               Catch::Contains("ConfigService/ApplyConfig (without dry_run)"));
  }
  SECTION("a certificate matching both an admin and a read-only entry is read-only") {
    absl::StatusOr<Caller> c =
        policy->Authorize(Tls("", {"ops-admin", "reader.example"}), Method::kDrain);
    CHECK(c.status().code() == absl::StatusCode::kPermissionDenied);
  }
  SECTION("names not in the allow-list are denied and listed") {
    absl::StatusOr<Caller> c =
        policy->Authorize(Tls("", {"stranger", "x.example"}), Method::kListVips);
    CHECK(c.status().code() == absl::StatusCode::kPermissionDenied);
    CHECK_THAT(std::string(c.status().message()), Catch::Contains("[stranger, x.example]"));
  }
  SECTION("matching is exact") {
    CHECK_FALSE(policy->Authorize(Tls("OPS-ADMIN"), Method::kListVips).ok());
    CHECK_FALSE(policy->Authorize(Tls("ops-admin2"), Method::kListVips).ok());
  }
  SECTION("no verified certificate is unauthenticated") {
    PeerInfo p = Tls("ops-admin");
    p.verified = false;
    CHECK(policy->Authorize(p, Method::kListVips).status().code() ==
          absl::StatusCode::kUnauthenticated);
    CHECK(policy->Authorize(Tls(""), Method::kListVips).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
  SECTION("an unknown transport is refused") {
    PeerInfo p;
    p.address = "ipv4:10.0.0.1:1";
    CHECK(policy->Authorize(p, Method::kListVips).status().code() ==
          absl::StatusCode::kUnauthenticated);
  }
}

TEST_CASE("the CN counts only when the certificate has no SAN", "[access]") {
  absl::StatusOr<AccessPolicy> policy = AccessPolicy::Create(Admin());
  REQUIRE(policy.ok());

  CHECK(IdentityNames(Tls("ops-admin")) == std::vector<std::string>{"ops-admin"});
  CHECK(IdentityNames(Tls("ops-admin", {"a.example", "spiffe://x/y"})) ==
        std::vector<std::string>{"a.example", "spiffe://x/y"});
  CHECK(IdentityNames(Tls("")).empty());

  // No SAN: identified by its CN.
  absl::StatusOr<Caller> cn_only = policy->Authorize(Tls("ops-admin"), Method::kSetWeight);
  REQUIRE(cn_only.ok());
  CHECK(cn_only->actor == "operator:tls:ops-admin");

  // A DNS SAN: the CN no longer counts, and the refusal says so.
  absl::StatusOr<Caller> mixed =
      policy->Authorize(Tls("ops-admin", {"someone-else"}), Method::kListVips);
  CHECK(mixed.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(mixed.status().message()),
             Catch::Contains("names [someone-else] match no entry of admin.identities (its CN "
                             "'ops-admin' does not count: the certificate has subject "
                             "alternative names)"));

  // Only an IP (or email) SAN: still a SAN, so no name is left to match.
  PeerInfo ip_only = Tls("ops-admin");
  ip_only.has_san = true;
  absl::StatusOr<Caller> ip = policy->Authorize(ip_only, Method::kListVips);
  CHECK(ip.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(ip.status().message()),
             Catch::Contains("no DNS or URI subject alternative name (its CN 'ops-admin' does "
                             "not count"));
}

TEST_CASE("identity list is validated", "[access]") {
  v1::AdminAccess a;
  a.add_identities()->set_name("x");
  a.add_identities()->set_name("x");
  absl::StatusOr<AccessPolicy> p = AccessPolicy::Create(a);
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(p.status().message()), Catch::Contains("admin.identities[1].name"));
  v1::AdminAccess b;
  b.add_identities();
  CHECK(AccessPolicy::Create(b).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ballast::api
