// Every probe kind against real servers on loopback: success and each
// failure mode, with the detail an operator reads.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <filesystem>

#include <google/protobuf/text_format.h>

#include "agent/probes/probe.h"
#include "agent/probes/tests/test_servers.h"

namespace ballast::probes {
namespace {

using testing::HttpServer;

v1::ProbeSpec Spec(const std::string& text) {
  v1::ProbeSpec s;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &s));
  return s;
}

Endpoint Local(int port) {
  Endpoint ep;
  ep.address = *IpAddress::Parse("127.0.0.1");
  ep.port = static_cast<uint16_t>(port);
  ep.description = DescribeDirect(ep.address, ep.port);
  return ep;
}

ProbeResult RunSpec(const std::string& spec, int port, int timeout_ms = 1000) {
  auto prober = MakeProber(Spec(spec));
  REQUIRE(prober.ok());
  return (*prober)->Run(Local(port), Clock::now() + std::chrono::milliseconds(timeout_ms));
}

const std::string kDesc = BALLAST_TESTBACKEND_DESC;

TEST_CASE("TCP: connect, refused, timeout") {
  HttpServer server("b1");
  auto ok = RunSpec("kind: TCP", server.port());
  CHECK(ok.ok);
  CHECK_THAT(ok.detail, Catch::StartsWith("TCP connect to 127.0.0.1:" +
                                          std::to_string(server.port()) + " (direct) in "));

  const int closed = testing::ClosedPort();
  auto refused = RunSpec("kind: TCP", closed);
  CHECK_FALSE(refused.ok);
  CHECK(refused.detail == "TCP connect to 127.0.0.1:" + std::to_string(closed) +
                              " (direct): connect: Connection refused");

  testing::FullListener full;
  const auto start = Clock::now();
  auto timeout = RunSpec("kind: TCP", full.port(), 300);
  CHECK_FALSE(timeout.ok);
  CHECK_THAT(timeout.detail, Catch::Contains("SYN not answered"));
  CHECK(Clock::now() - start < std::chrono::milliseconds(1000));
  CHECK(timeout.latency >= std::chrono::milliseconds(250));
}

// A UDP server on loopback for the UDP probe: answers each datagram with
// "<name> <datagram>", or stays silent.
class UdpEcho {
 public:
  UdpEcho(std::string name, bool answer) : name_(std::move(name)), answer_(answer) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~UdpEcho() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);  // wakes recvfrom
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int received() const { return received_; }

 private:
  void Serve() {
    char buf[2048];
    for (;;) {
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const ssize_t n = recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0 || stop_) return;  // (0 is an empty datagram)
      ++received_;
      if (!answer_) continue;
      const std::string reply = name_ + " " + std::string(buf, static_cast<size_t>(n));
      sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }
  std::string name_;
  bool answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> received_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_CASE("UDP: reply, body assertions, refused, silence") {
  UdpEcho echo("b1", true);
  auto ok = RunSpec(R"(kind: UDP udp_request: "ping\x00" body_contains: "b1 ping")", echo.port());
  CHECK(ok.ok);
  CHECK_THAT(ok.detail, Catch::StartsWith("UDP reply of 8 bytes from 127.0.0.1:" +
                                          std::to_string(echo.port()) + " (direct) in "));
  CHECK(echo.received() == 1);
  CHECK(RunSpec(R"(kind: UDP udp_request: "q" body_regex: "^b[0-9] q$")", echo.port()).ok);
  CHECK(RunSpec("kind: UDP", echo.port()).ok);  // an empty datagram, any reply

  auto wrong = RunSpec(R"(kind: UDP udp_request: "ping" body_contains: "b2")", echo.port());
  CHECK_FALSE(wrong.ok);
  CHECK_THAT(wrong.detail, Catch::Contains("reply does not contain \"b2\" (reply \"b1 ping\")"));
  auto unmatched = RunSpec(R"(kind: UDP udp_request: "ping" body_regex: "^pong")", echo.port());
  CHECK_FALSE(unmatched.ok);
  CHECK_THAT(unmatched.detail, Catch::Contains("does not match /^pong/"));

  // Nothing bound to the port: the kernel's ICMP port unreachable.
  UdpEcho* gone = new UdpEcho("b9", true);
  const int closed = gone->port();
  delete gone;
  auto refused = RunSpec(R"(kind: UDP udp_request: "ping")", closed);
  CHECK_FALSE(refused.ok);
  CHECK_THAT(refused.detail, Catch::Contains("refused (ICMP port unreachable"));

  UdpEcho silent("b2", false);
  const auto start = Clock::now();
  auto timeout = RunSpec(R"(kind: UDP udp_request: "ping")", silent.port(), 300);
  CHECK_FALSE(timeout.ok);
  CHECK_THAT(timeout.detail, Catch::Contains("no reply within"));
  CHECK(timeout.latency >= std::chrono::milliseconds(250));
  CHECK(Clock::now() - start < std::chrono::milliseconds(1000));
  CHECK(silent.received() == 1);
}

TEST_CASE("HTTP: status, body, regex, user agent, timeout") {
  HttpServer server("b1");
  const std::string where = "127.0.0.1:" + std::to_string(server.port()) + " (direct)";

  auto ok = RunSpec("kind: HTTP body_contains: \"from b1\" body_regex: \"^hello from b[0-9]$\"",
                    server.port());
  CHECK(ok.ok);
  CHECK_THAT(ok.detail, Catch::StartsWith("HTTP 200 from " + where + " in "));
  CHECK(server.last_user_agent() == "ballast-probe/1");

  auto status = RunSpec("kind: HTTP http_path: \"/status/503\"", server.port());
  CHECK_FALSE(status.ok);
  CHECK(status.detail == "HTTP 503 from " + where + " (want 200)");

  auto accepted = RunSpec("kind: HTTP http_path: \"/status/204\" http_status: 200 http_status: 204",
                          server.port());
  CHECK(accepted.ok);

  auto body = RunSpec("kind: HTTP body_contains: \"from b2\"", server.port());
  CHECK_FALSE(body.ok);
  CHECK(body.detail ==
        "HTTP 200 from " + where + ": body does not contain \"from b2\" (body \"hello from b1\")");

  auto regex = RunSpec("kind: HTTP body_regex: \"b[2-9]$\"", server.port());
  CHECK_FALSE(regex.ok);
  CHECK(regex.detail ==
        "HTTP 200 from " + where + ": body does not match /b[2-9]$/ (body \"hello from b1\")");

  auto slow = RunSpec("kind: HTTP http_path: \"/slow\"", server.port(), 300);
  CHECK_FALSE(slow.ok);
  CHECK_THAT(slow.detail,
             Catch::StartsWith("HTTP probe to " + where + ": no complete answer within"));

  const int closed = testing::ClosedPort();
  auto refused = RunSpec("kind: HTTP", closed);
  CHECK_FALSE(refused.ok);
  CHECK_THAT(refused.detail,
             Catch::Contains("Connection refused") || Catch::Contains("Couldn't connect"));
}

TEST_CASE("HTTPS and TLS: verified, insecure, wrong CA, wrong name") {
  testing::TempDir dir;
  const testing::Certs certs = testing::MakeCerts(dir.path());
  HttpServer server("b1", certs.cert, certs.key);
  const int port = server.port();
  const std::string where = "127.0.0.1:" + std::to_string(port) + " (direct)";

  auto ok = RunSpec("kind: HTTPS tls_ca_file: \"" + certs.ca +
                        "\" tls_server_name: \"probe.test\" body_contains: \"from b1\"",
                    port);
  CHECK(ok.ok);
  INFO(ok.detail);
  CHECK_THAT(ok.detail, Catch::StartsWith("HTTPS 200 from " + where));
  CHECK(server.last_user_agent() == "ballast-probe/1");

  // No server name: the certificate must name the address (it has IP:127.0.0.1).
  auto by_ip = RunSpec("kind: HTTPS tls_ca_file: \"" + certs.ca + "\"", port);
  INFO(by_ip.detail);
  CHECK(by_ip.ok);
  CHECK(RunSpec("kind: HTTPS tls_insecure: true", port).ok);

  // A server that requires a client certificate.
  HttpServer mtls("b9", certs.cert, certs.key, certs.ca);
  const std::string with_ca = "kind: HTTPS tls_ca_file: \"" + certs.ca + "\" ";
  auto with_cert = RunSpec(with_ca + "tls_cert_file: \"" + certs.client_cert +
                               "\" tls_key_file: \"" + certs.client_key + "\"",
                           mtls.port());
  INFO(with_cert.detail);
  CHECK(with_cert.ok);
  CHECK_FALSE(RunSpec(with_ca, mtls.port()).ok);

  auto wrong_ca = RunSpec("kind: HTTPS tls_ca_file: \"" + certs.other_ca + "\"", port);
  CHECK_FALSE(wrong_ca.ok);
  CHECK_THAT(wrong_ca.detail, Catch::StartsWith("HTTPS probe to " + where + ": "));
  CHECK_THAT(wrong_ca.detail, Catch::Contains("certificate"));

  auto wrong_name = RunSpec(
      "kind: HTTPS tls_ca_file: \"" + certs.ca + "\" tls_server_name: \"other.test\"", port);
  CHECK_FALSE(wrong_name.ok);

  auto tls =
      RunSpec("kind: TLS tls_ca_file: \"" + certs.ca + "\" tls_server_name: \"probe.test\"", port);
  CHECK(tls.ok);
  CHECK_THAT(tls.detail, Catch::StartsWith("TLSv1.3 handshake with " + where + " in "));
  CHECK_THAT(tls.detail, Catch::Contains("CN = probe.test") || Catch::Contains("CN=probe.test"));

  auto tls_bad = RunSpec("kind: TLS tls_ca_file: \"" + certs.other_ca + "\"", port);
  CHECK_FALSE(tls_bad.ok);
  CHECK(tls_bad.detail ==
        "TLS handshake with " + where +
            ": certificate verify failed: unable to get local issuer certificate");

  auto tls_name =
      RunSpec("kind: TLS tls_ca_file: \"" + certs.ca + "\" tls_server_name: \"other.test\"", port);
  CHECK_FALSE(tls_name.ok);
  CHECK(tls_name.detail ==
        "TLS handshake with " + where + ": certificate verify failed: hostname mismatch");

  HttpServer plain("b2");
  auto not_tls = RunSpec("kind: TLS tls_insecure: true", plain.port(), 500);
  CHECK_FALSE(not_tls.ok);
  CHECK_THAT(not_tls.detail, Catch::StartsWith("TLS handshake with 127.0.0.1:"));

  auto refused = RunSpec("kind: TLS tls_insecure: true", testing::ClosedPort());
  CHECK_FALSE(refused.ok);
  CHECK_THAT(refused.detail, Catch::EndsWith("connect: Connection refused"));
}

TEST_CASE("gRPC: a real method, assertions on the reply, user agent") {
  testing::GrpcBackend b1("b1", true);
  const std::string where = "127.0.0.1:" + std::to_string(b1.port()) + " (direct)";
  const std::string base =
      "kind: GRPC grpc_method: \"/ballast.testing.v1.TestBackend/Hello\" "
      "grpc_descriptor_set: \"" +
      kDesc + "\" grpc_request_text: \"from: 'probe'\" ";

  auto ok = RunSpec(base +
                        "grpc_expect: 'name == \"b1\"' grpc_expect: 'healthy == true' "
                        "grpc_expect: 'message == \"hello probe from b1\"'",
                    b1.port());
  INFO(ok.detail);
  CHECK(ok.ok);
  CHECK_THAT(ok.detail, Catch::StartsWith("gRPC /ballast.testing.v1.TestBackend/Hello on " + where +
                                          ": OK in "));
  CHECK_THAT(ok.detail, Catch::EndsWith(", 3 assertion(s) hold"));
  // grpc++ puts its own token first: "grpc-c++/1.51.1 ballast-probe/1 grpc-c/...".
  CHECK_THAT(b1.last_user_agent(), Catch::Contains(" ballast-probe/1 "));

  auto wrong =
      RunSpec(base + "grpc_expect: 'name == \"b2\"' grpc_expect: 'healthy == true'", b1.port());
  CHECK_FALSE(wrong.ok);
  CHECK(wrong.detail == "gRPC /ballast.testing.v1.TestBackend/Hello on " + where +
                            ": name is \"b1\" (want == \"b2\")");

  testing::GrpcBackend sick("b3", false);
  auto unhealthy = RunSpec(base + "grpc_expect: 'healthy == true'", sick.port());
  CHECK_FALSE(unhealthy.ok);
  CHECK_THAT(unhealthy.detail, Catch::EndsWith(": healthy is false (want == true)"));

  // A server that does not speak gRPC (HTTP/1.1).
  HttpServer http("h");
  auto not_grpc = RunSpec(base, http.port(), 500);
  CHECK_FALSE(not_grpc.ok);
  CHECK_THAT(not_grpc.detail, Catch::Contains("UNAVAILABLE") || Catch::Contains("DEADLINE") ||
                                  Catch::Contains("INTERNAL") || Catch::Contains("UNKNOWN"));

  auto refused = RunSpec(base, testing::ClosedPort());
  CHECK_FALSE(refused.ok);
  CHECK_THAT(refused.detail, Catch::EndsWith("connect: Connection refused"));

  testing::FullListener full;
  auto timeout = RunSpec(base, full.port(), 300);
  CHECK_FALSE(timeout.ok);
  CHECK_THAT(timeout.detail, Catch::Contains("SYN not answered"));
}

TEST_CASE("gRPC over TLS: CA, server name, client certificate") {
  testing::TempDir dir;
  const testing::Certs certs = testing::MakeCerts(dir.path());
  testing::GrpcBackend tls("b1", true, certs, /*require_client_cert=*/false);
  testing::GrpcBackend mtls("b2", true, certs, /*require_client_cert=*/true);
  const std::string base =
      "kind: GRPC grpc_method: \"/ballast.testing.v1.TestBackend/Hello\" "
      "grpc_descriptor_set: \"" +
      kDesc + "\" grpc_request_text: \"from: 'probe'\" grpc_tls: true ";
  const std::string ca = "tls_ca_file: \"" + certs.ca + "\" ";
  const std::string client =
      "tls_cert_file: \"" + certs.client_cert + "\" tls_key_file: \"" + certs.client_key + "\" ";

  auto ok = RunSpec(base + ca + "grpc_expect: 'name == \"b1\"'", tls.port());
  INFO(ok.detail);
  CHECK(ok.ok);
  CHECK_THAT(ok.detail, Catch::EndsWith(", 1 assertion(s) hold, over TLS"));
  CHECK_THAT(tls.last_user_agent(), Catch::Contains(" ballast-probe/1 "));

  auto by_name = RunSpec(base + ca + "tls_server_name: \"probe.test\"", tls.port());
  INFO(by_name.detail);
  CHECK(by_name.ok);

  auto wrong_ca = RunSpec(base + "tls_ca_file: \"" + certs.other_ca + "\"", tls.port());
  CHECK_FALSE(wrong_ca.ok);
  CHECK_THAT(wrong_ca.detail, Catch::Contains(": TLS handshake: certificate verify failed: "));
  auto wrong_name = RunSpec(base + ca + "tls_server_name: \"other.test\"", tls.port());
  CHECK_FALSE(wrong_name.ok);
  CHECK_THAT(wrong_name.detail, Catch::EndsWith("certificate verify failed: hostname mismatch"));
  auto insecure = RunSpec(base + "tls_insecure: true", tls.port());
  INFO(insecure.detail);
  CHECK(insecure.ok);
  CHECK_THAT(insecure.detail, Catch::EndsWith("over TLS, not verified (tls_insecure)"));

  // A backend that requires a client certificate.
  auto with_cert = RunSpec(base + ca + client + "grpc_expect: 'name == \"b2\"'", mtls.port());
  INFO(with_cert.detail);
  CHECK(with_cert.ok);
  auto without = RunSpec(base + ca, mtls.port(), 500);
  CHECK_FALSE(without.ok);
  INFO(without.detail);

  // Plaintext gRPC to a TLS backend, and TLS to a plaintext one, fail.
  testing::GrpcBackend plain("b3", true);
  auto tls_to_plain = RunSpec(base + ca, plain.port(), 500);
  CHECK_FALSE(tls_to_plain.ok);
  CHECK_THAT(tls_to_plain.detail, Catch::Contains("TLS handshake: "));
}

TEST_CASE("a probe whose descriptor set is missing fails saying why, and runs once it is there") {
  testing::GrpcBackend b1("b1", true);
  testing::TempDir dir;
  const std::string late = dir.path() + "/late.desc";
  auto prober =
      MakeProber(Spec("kind: GRPC grpc_method: \"/ballast.testing.v1.TestBackend/Hello\" "
                      "grpc_descriptor_set: \"" +
                      late + "\" grpc_expect: 'name == \"b1\"'"));
  REQUIRE(prober.ok());  // a missing file is a failing probe, not an invalid spec
  auto run = [&] {
    return (*prober)->Run(Local(b1.port()), Clock::now() + std::chrono::milliseconds(1000));
  };
  ProbeResult missing = run();
  CHECK_FALSE(missing.ok);
  CHECK_THAT(missing.detail, Catch::StartsWith("GRPC probe to 127.0.0.1:"));
  CHECK_THAT(missing.detail, Catch::Contains("cannot run: probe.grpc_descriptor_set: cannot read "
                                             "descriptor set " +
                                             late));
  std::filesystem::copy_file(kDesc, late);
  ProbeResult ok = run();
  INFO(ok.detail);
  CHECK(ok.ok);
  CHECK_THAT(ok.detail, Catch::EndsWith(", 1 assertion(s) hold"));
}

}  // namespace
}  // namespace ballast::probes
