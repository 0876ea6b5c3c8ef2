// Test PKI generated with the openssl command at test time: a CA, a server
// certificate for 127.0.0.1, client certificates (admin by CN, read-only by
// DNS SAN, a name not in any allow-list, the admin's CN next to a SAN, a
// revoked one), a second CA with a client certificate that copies the
// admin's name and a server certificate, and CRLs made with `openssl ca`.
#ifndef BALLAST_TESTS_LIB_TEST_PKI_H_
#define BALLAST_TESTS_LIB_TEST_PKI_H_

#include <string>

namespace ballast::testpki {

struct TestPki {
  std::string dir;
  std::string ca_crt;
  std::string server_crt, server_key;
  std::string admin_crt, admin_key;        // CN=ops-admin
  std::string reader_crt, reader_key;      // CN=reader, SAN DNS:reader.example
  std::string uri_crt, uri_key;            // CN=svc, SAN URI:spiffe://ballast/admin-bot
  std::string stranger_crt, stranger_key;  // CN=stranger (right CA, not allowed)
  std::string rogue_crt, rogue_key;        // CN=ops-admin signed by ANOTHER CA
  std::string mixed_crt, mixed_key;        // CN=ops-admin, SAN DNS:someone-else
  std::string ip_only_crt, ip_only_key;    // CN=ops-admin, SAN IP:192.0.2.1
  std::string revoked_crt, revoked_key;    // CN=ops-admin, revoked in ca_crl
  std::string other_ca_crt;                // the other CA
  std::string server2_crt, server2_key;    // server certificate from the other CA
  std::string ca_crl;                      // CA's CRL: revokes revoked_crt
  std::string expired_crl;                 // CA's CRL whose nextUpdate passed (2020)
  std::string other_ca_crl;                // the other CA's CRL (revokes nothing)
  std::string fake_ca_crl;                 // named as the CA, signed by another key
};

// Creates everything under `dir`; throws std::runtime_error with openssl's
// output if a step fails.
TestPki GeneratePki(const std::string& dir);

}  // namespace ballast::testpki

#endif  // BALLAST_TESTS_LIB_TEST_PKI_H_
