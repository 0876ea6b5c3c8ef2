// The etcd client against a real etcd that requires TLS client certificates
// (--client-cert-auth) and has authentication enabled, with a role that may
// read and write /ballast/ only: user/password and certificate-CN
// authentication work; a wrong CA, no certificate, a certificate from
// another CA, a wrong password and a user without permission on the prefix
// are each refused with a message that says so, and change nothing. Also
// the plaintext rule (a non-loopback http:// endpoint is refused unless
// allowed) and a token refused after a member restart being fetched again.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/etcd/tests/etcd_harness.h"
#include "agent/etcd/tests/test_util.h"
#include "agent/etcd/watch.h"
#include "tests/lib/test_pki.h"

namespace ballast::etcd {
namespace {

using testing::EtcdCluster;
using testing::MakeClient;
using testing::WaitFor;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ballast-etcd-auth-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

// etcdctl (Debian etcd-client) as the administrator, before auth is on.
void Etcdctl(const EtcdCluster& etcd, const testpki::TestPki& pki, const std::string& args) {
  const std::string cmd = absl::StrCat("ETCDCTL_API=3 etcdctl --endpoints=", etcd.endpoint(0),
                                       " --cacert=", pki.ca_crt, " --cert=", pki.admin_crt,
                                       " --key=", pki.admin_key, " ", args, " >/dev/null 2>&1");
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

ClientOptions Opts(const testpki::TestPki& pki, const std::string& crt, const std::string& key) {
  ClientOptions o;
  o.tls.ca_file = pki.ca_crt;
  o.tls.cert_file = crt;
  o.tls.key_file = key;
  o.call_timeout = absl::Milliseconds(1500);
  o.attempt_timeout = absl::Milliseconds(800);
  o.connect_timeout = absl::Milliseconds(400);
  return o;
}

std::string ValueOf(Client& c, const std::string& key) {
  absl::StatusOr<RangeResult> r = c.Get(key);
  REQUIRE(r.ok());
  return r->kvs.empty() ? "<none>" : r->kvs[0].value;
}

TEST_CASE("TLS with client certificates and etcd authentication", "[auth]") {
  TempDir dir;
  const testpki::TestPki pki = testpki::GeneratePki(dir.path);
  auto etcd = EtcdCluster::StartTls(1, {pki.server_crt, pki.server_key, pki.ca_crt});
  // Users: root; "agent" (password) and "ops-admin" (the admin
  // certificate's CN) with read/write on /ballast/ only; "nobody" and
  // "stranger" (a certificate's CN) without any role.
  Etcdctl(*etcd, pki, "user add root:rootpw");
  Etcdctl(*etcd, pki, "user grant-role root root");
  Etcdctl(*etcd, pki, "role add ballast");
  Etcdctl(*etcd, pki, "role grant-permission ballast --prefix=true readwrite /ballast/");
  Etcdctl(*etcd, pki, "user add agent:agentpw");
  Etcdctl(*etcd, pki, "user grant-role agent ballast");
  Etcdctl(*etcd, pki, "user add ops-admin:unused");
  Etcdctl(*etcd, pki, "user grant-role ops-admin ballast");
  Etcdctl(*etcd, pki, "user add nobody:nobodypw");
  Etcdctl(*etcd, pki, "user add stranger:unused");
  Etcdctl(*etcd, pki, "auth enable");
  const std::vector<std::string> eps = etcd->endpoints();

  // user/password over TLS with a client certificate
  ClientOptions agent_opts = Opts(pki, pki.reader_crt, pki.reader_key);
  agent_opts.username = "agent";
  agent_opts.password = "agentpw";
  auto agent = MakeClient(eps, agent_opts);
  REQUIRE_OK(agent->Put("/ballast/state", "v1"));
  CHECK(ValueOf(*agent, "/ballast/state") == "v1");
  {
    absl::StatusOr<int64_t> r = agent->Put("/elsewhere", "x");
    REQUIRE_FALSE(r.ok());
    INFO(r.status().ToString());
    CHECK(absl::StrContains(r.status().message(), "permission denied"));
  }
  // the certificate's CN as the user (no password)
  auto by_cn = MakeClient(eps, Opts(pki, pki.admin_crt, pki.admin_key));
  REQUIRE_OK(by_cn->Put("/ballast/by-cn", "yes"));
  CHECK(ValueOf(*agent, "/ballast/by-cn") == "yes");

  // A watch carries the token too.
  std::atomic<int> seen{0};
  WatchSpec spec;
  spec.key = "/ballast/";
  spec.prefix = true;
  absl::StatusOr<std::unique_ptr<Watch>> w = agent->StartWatch(spec, [&](const WatchUpdate& u) {
    if (u.kind == WatchUpdate::Kind::kEvents) seen += static_cast<int>(u.events.size());
  });
  REQUIRE_OK(w);
  REQUIRE_OK(agent->Put("/ballast/watched", "1"));
  CHECK(WaitFor([&] { return seen.load() >= 1; }, std::chrono::seconds(5)));
  (*w)->Stop();

  struct Refused {
    const char* what;
    ClientOptions opts;
    const char* says;  // in the error message
  };
  ClientOptions wrong_pw = agent_opts;
  wrong_pw.password = "guess";
  ClientOptions no_perm = agent_opts;
  no_perm.username = "nobody";
  no_perm.password = "nobodypw";
  ClientOptions wrong_ca = agent_opts;
  wrong_ca.tls.ca_file = pki.other_ca_crt;
  ClientOptions no_cert = agent_opts;
  no_cert.tls.cert_file.clear();
  no_cert.tls.key_file.clear();
  for (const Refused& c : {
           Refused{"wrong password", wrong_pw, "authentication failed"},
           Refused{"user without permission on the prefix", no_perm, "permission denied"},
           Refused{"certificate CN without permission",
                   Opts(pki, pki.stranger_crt, pki.stranger_key), "permission denied"},
           Refused{"wrong CA", wrong_ca, "cannot connect"},
           Refused{"no client certificate", no_cert, "cannot connect"},
           Refused{"client certificate from another CA", Opts(pki, pki.rogue_crt, pki.rogue_key),
                   "cannot connect"},
       }) {
    INFO(c.what);
    auto client = MakeClient(eps, c.opts);
    absl::StatusOr<int64_t> r = client->Put("/ballast/state", "forged");
    REQUIRE_FALSE(r.ok());
    INFO(r.status().ToString());
    std::printf("refused (%s): %s\n", c.what, r.status().ToString().c_str());
    CHECK(absl::StrContains(r.status().message(), c.says));
    CHECK(ValueOf(*agent, "/ballast/state") == "v1");  // nothing changed
  }
  // A refused user or password is final: not retried on other members.
  {
    auto client = MakeClient(eps, wrong_pw);
    CHECK(client->Put("/ballast/state", "forged").status().code() ==
          absl::StatusCode::kPermissionDenied);
  }

  // A member restart invalidates the token: the client fetches a new one.
  etcd->Kill(0);
  etcd->Restart(0);
  REQUIRE(
      WaitFor([&] { return agent->Put("/ballast/state", "v2").ok(); }, std::chrono::seconds(10)));
  CHECK(ValueOf(*agent, "/ballast/state") == "v2");
}

TEST_CASE("plaintext endpoints off loopback are refused unless allowed", "[auth]") {
  ClientOptions o;
  o.endpoints = {"http://198.18.0.1:2379"};
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(o);
  REQUIRE_FALSE(c.ok());
  CHECK(absl::StrContains(c.status().message(), "plaintext"));
  o.endpoints = {"198.18.0.1:2379"};  // no scheme, no CA: plaintext
  CHECK_FALSE(Client::Create(o).ok());
  for (const char* ok :
       {"http://127.0.0.1:2379", "http://127.1.2.3:2379", "http://[::1]:2379", "localhost:2379"}) {
    o.endpoints = {ok};
    INFO(ok);
    CHECK(Client::Create(o).ok());
  }
  o.endpoints = {"https://198.18.0.1:2379"};
  CHECK(Client::Create(o).ok());  // system roots; nothing is read or sent yet
  o.endpoints = {"http://198.18.0.1:2379"};
  o.tls.allow_plaintext_remote = true;
  CHECK(Client::Create(o).ok());
  ClientOptions missing;
  missing.endpoints = {"https://127.0.0.1:2379"};
  missing.tls.ca_file = "/nonexistent/ca.pem";
  c = Client::Create(missing);
  REQUIRE_FALSE(c.ok());
  CHECK(absl::StrContains(c.status().message(), "ca_file"));
  ClientOptions half;
  half.endpoints = {"https://127.0.0.1:2379"};
  half.tls.cert_file = "/etc/hostname";
  CHECK(Client::Create(half).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ballast::etcd
