// ClientVerifier against certificates and CRLs made with openssl for this
// run: which CRL files are refused (and how the error names them), and
// which client certificates verify.
#include "agent/api/client_verifier.h"

#include <catch2/catch.hpp>

#include "agent/api/tests/test_util.h"
#include "tests/lib/test_pki.h"

namespace ballast::api {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;
using testpki::TestPki;

v1::AdminAccess Paths(const std::string& ca, const std::string& crl) {
  v1::AdminAccess a;
  a.set_tls_client_ca(ca);
  a.set_tls_crl(crl);
  return a;
}

absl::StatusOr<std::shared_ptr<const ClientVerifier>> Make(const std::string& ca_file,
                                                           const std::string& crl_file) {
  std::optional<std::string> crl;
  if (!crl_file.empty()) crl = ReadFileOrDie(crl_file);
  return ClientVerifier::Create(ReadFileOrDie(ca_file), crl, Paths(ca_file, crl_file));
}

TEST_CASE("client verifier: CRL files that do not fit the client CA are refused", "[verifier]") {
  TempDir dir;
  const TestPki pki = testpki::GeneratePki(dir.path());
  const std::string both_cas = dir.Join("both-cas.crt");
  testing::WriteFile(both_cas, ReadFileOrDie(pki.ca_crt) + ReadFileOrDie(pki.other_ca_crt));
  const std::string two_crls = dir.Join("two.crl");
  testing::WriteFile(two_crls, ReadFileOrDie(pki.ca_crl) + ReadFileOrDie(pki.ca_crl));
  const std::string empty = dir.Join("empty.crl");
  testing::WriteFile(empty, "");
  const std::string damaged = dir.Join("damaged.crl");
  testing::WriteFile(damaged, "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n");
  struct Case {
    const char* what;
    std::string ca, crl;
    const char* message;
  };
  const Case cases[] = {
      {"empty file", pki.ca_crt, empty, "contains no PEM CRL"},
      {"a certificate, not a CRL", pki.ca_crt, pki.admin_crt, "contains no PEM CRL"},
      {"damaged CRL", pki.ca_crt, damaged, "has a damaged PEM CRL"},
      {"CRL of another CA", pki.ca_crt, pki.other_ca_crl,
       "issued by 'CN=some other CA', which is not a CA in admin.tls_client_ca"},
      {"CRL named as the CA, signed by another key", pki.ca_crt, pki.fake_ca_crl,
       "not signed by that CA's key"},
      {"expired CRL", pki.ca_crt, pki.expired_crl, "expired at Jan  2 00:00:00 2020 GMT"},
      {"the same CA twice", pki.ca_crt, two_crls, "has two CRLs of 'CN=ballast test CA'"},
      {"a CA without CRL", both_cas, pki.ca_crl, "has no CRL of 'CN=some other CA'"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto v = Make(c.ca, c.crl);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string msg(v.status().message());
    CHECK_THAT(msg, Catch::StartsWith("admin.tls_crl: " + c.crl + " "));
    CHECK_THAT(msg, Catch::Contains(c.message));
  }
  {  // a bad CA bundle names admin.tls_client_ca
    auto v = Make(pki.admin_key, "");
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(std::string(v.status().message()),
               Catch::StartsWith("admin.tls_client_ca: " + pki.admin_key +
                                 " contains no PEM certificate"));
  }
  {  // one CRL per CA of a bundle is accepted
    const std::string both_crls = dir.Join("both.crl");
    testing::WriteFile(both_crls, ReadFileOrDie(pki.ca_crl) + ReadFileOrDie(pki.other_ca_crl));
    auto v = Make(both_cas, both_crls);
    REQUIRE(v.ok());
    CHECK((*v)->crl_count() == 2);
    CHECK((*v)->revoked_count() == 1);
  }
}

TEST_CASE("client verifier: chains and revocation", "[verifier]") {
  TempDir dir;
  const TestPki pki = testpki::GeneratePki(dir.path());
  auto verify = [&](const ClientVerifier& v, const std::string& cert) {
    return v.Verify(ReadFileOrDie(cert), "");
  };

  {  // without a CRL, every certificate of the CA verifies, others do not
    auto v = Make(pki.ca_crt, "");
    REQUIRE(v.ok());
    CHECK((*v)->crl_count() == 0);
    CHECK(verify(**v, pki.admin_crt).ok());
    CHECK(verify(**v, pki.revoked_crt).ok());
    absl::Status s = verify(**v, pki.rogue_crt);
    CHECK(s.code() == absl::StatusCode::kUnauthenticated);
    CHECK_THAT(std::string(s.message()),
               Catch::Contains("client certificate 'CN=ops-admin' (serial 0x"));
    CHECK_THAT(std::string(s.message()),
               Catch::Contains("does not verify against admin.tls_client_ca: unable to get local "
                               "issuer certificate"));
  }
  {  // with the CA's CRL, the revoked certificate is refused and the others verify
    auto v = Make(pki.ca_crt, pki.ca_crl);
    REQUIRE(v.ok());
    CHECK((*v)->crl_count() == 1);
    CHECK((*v)->revoked_count() == 1);
    CHECK(verify(**v, pki.admin_crt).ok());
    CHECK(verify(**v, pki.mixed_crt).ok());
    absl::Status s = verify(**v, pki.revoked_crt);
    CHECK(s.code() == absl::StatusCode::kUnauthenticated);
    CHECK_THAT(std::string(s.message()), Catch::EndsWith("is revoked by admin.tls_crl"));
  }
  {  // a server certificate is not a client certificate
    auto v = Make(pki.ca_crt, "");
    REQUIRE(v.ok());
    CHECK_THAT(std::string(verify(**v, pki.server_crt).message()),
               Catch::Contains("unsuitable certificate purpose"));
  }
  {  // no certificate at all
    auto v = Make(pki.ca_crt, "");
    REQUIRE(v.ok());
    CHECK((*v)->Verify("", "").code() == absl::StatusCode::kUnauthenticated);
  }
}

}  // namespace
}  // namespace ballast::api
