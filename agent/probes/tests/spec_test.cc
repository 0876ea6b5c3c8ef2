// ValidateProbeSpec and the gRPC schema/assertion machinery (grpc_schema.h)
// against the test backend's real descriptor set.
#include <catch2/catch.hpp>

#include <google/protobuf/text_format.h>

#include "agent/probes/grpc_schema.h"
#include "agent/probes/spec.h"

namespace ballast::probes {
namespace {

v1::ProbeSpec Spec(const std::string& text) {
  v1::ProbeSpec s;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &s));
  return s;
}

std::string Error(const std::string& text) {
  absl::Status s = ValidateProbeSpec(Spec(text), "vips[0].backends[1].probe");
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

// The error of a spec that validates but whose files do not check out.
std::string FilesError(const std::string& text) {
  REQUIRE(ValidateProbeSpec(Spec(text), "vips[0].backends[1].probe").ok());  // reads no file
  absl::Status s = CheckProbeFiles(Spec(text), "vips[0].backends[1].probe");
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

const std::string kDesc = BALLAST_TESTBACKEND_DESC;
const std::string kHello = "/ballast.testing.v1.TestBackend/Hello";

std::string Grpc(const std::string& extra) {
  return "kind: GRPC grpc_method: \"" + kHello + "\" grpc_descriptor_set: \"" + kDesc + "\" " +
         extra;
}

TEST_CASE("valid specs of every kind pass") {
  CHECK(ValidateProbeSpec(Spec(""), "p").ok());
  CHECK(ValidateProbeSpec(Spec("kind: TCP interval_ms: 200"), "p").ok());
  CHECK(ValidateProbeSpec(Spec("kind: HTTP http_path: \"/healthz\" http_host: \"web\" "
                               "http_status: 200 http_status: 204 http_method: \"HEAD\" "
                               "body_contains: \"ok\" body_regex: \"^hello (b[0-9]+)$\""),
                          "p")
            .ok());
  CHECK(ValidateProbeSpec(Spec("kind: HTTPS tls_insecure: true tls_server_name: \"web.test\""), "p")
            .ok());
  CHECK(ValidateProbeSpec(Spec("kind: TLS tls_ca_file: \"/dev/null\""), "p").ok());
  CHECK(ValidateProbeSpec(Spec("kind: UDP udp_request: \"\\x00\\x01ping\" body_contains: \"pong\" "
                               "body_regex: \"^pong [0-9]+$\""),
                          "p")
            .ok());
  CHECK(ValidateProbeSpec(Spec(Grpc("grpc_request_text: \"from: 'probe'\" "
                                    "grpc_expect: 'name == \"b1\"' grpc_expect: 'healthy == true' "
                                    "grpc_expect: 'message contains \"from b1\"'")),
                          "p")
            .ok());
}

TEST_CASE("errors name the field and the problem") {
  CHECK(Error("kind: HTTP body_regex: \"(unclosed\"") ==
        "vips[0].backends[1].probe.body_regex: \"(unclosed\" does not compile (RE2): missing ): "
        "(unclosed");
  CHECK(Error("kind: HTTP http_method: \"get me\"") ==
        "vips[0].backends[1].probe.http_method: \"get me\" is not an upper-case HTTP method "
        "(GET, HEAD, ...)");
  CHECK(Error("kind: TCP body_regex: \"x\"") ==
        "vips[0].backends[1].probe.body_regex: is only used by HTTP, HTTPS and UDP probes (this "
        "probe is TCP)");
  CHECK(Error("kind: HTTP udp_request: \"x\"") ==
        "vips[0].backends[1].probe.udp_request: is only used by UDP probes (this probe is HTTP)");
  CHECK(Error("kind: UDP udp_request: \"" + std::string(1025, 'x') + "\"") ==
        "vips[0].backends[1].probe.udp_request: is 1025 bytes, at most 1024 (one datagram within "
        "any path MTU)");
  CHECK(Error("kind: UDP http_path: \"/\"") ==
        "vips[0].backends[1].probe.http_path: is only used by HTTP and HTTPS probes (this probe "
        "is UDP)");
  CHECK(Error("kind: HTTP tls_insecure: true") ==
        "vips[0].backends[1].probe.tls_insecure: is only used by HTTPS, TLS and GRPC with "
        "grpc_tls probes (this probe is HTTP)");
  const std::string grpc = "kind: GRPC grpc_method: \"/a.B/C\" grpc_descriptor_set: \"/x.desc\" ";
  CHECK(Error(grpc + "tls_ca_file: \"/ca.pem\"") ==
        "vips[0].backends[1].probe.tls_ca_file: is only used by HTTPS, TLS and GRPC with "
        "grpc_tls probes (this probe is GRPC)");
  CHECK(ValidateProbeSpec(Spec(grpc + "grpc_tls: true tls_ca_file: \"/ca.pem\""), "p").ok());
  CHECK(Error("kind: HTTP grpc_tls: true") ==
        "vips[0].backends[1].probe.grpc_tls: is only used by GRPC probes (this probe is HTTP)");
  CHECK(Error("kind: HTTPS tls_cert_file: \"/c.pem\"") ==
        "vips[0].backends[1].probe.tls_key_file: and its pair go together (the client "
        "certificate and its key)");
  CHECK(Error("kind: TLS tls_cert_file: \"c.pem\" tls_key_file: \"/c.key\"") ==
        "vips[0].backends[1].probe.tls_cert_file: \"c.pem\" is not an absolute path");
  CHECK(FilesError("kind: TLS tls_cert_file: \"/nonexistent/c.pem\" tls_key_file: "
                   "\"/nonexistent/c.key\"") ==
        "vips[0].backends[1].probe.tls_cert_file: cannot read /nonexistent/c.pem: No such file or "
        "directory");
  CHECK(FilesError("kind: TLS tls_ca_file: \"/nonexistent/ca.pem\"") ==
        "vips[0].backends[1].probe.tls_ca_file: cannot read /nonexistent/ca.pem: No such file or "
        "directory");
  CHECK(Error("kind: HTTPS tls_ca_file: \"/dev/null\" tls_insecure: true")
            .starts_with("vips[0].backends[1].probe.tls_insecure: and tls_ca_file exclude"));
  CHECK(Error("kind: GRPC grpc_method: \"/a.B/C\"")
            .starts_with("vips[0].backends[1].probe.grpc_descriptor_set: required for GRPC"));
  CHECK(
      Error("kind: GRPC grpc_descriptor_set: \"/x\"") ==
      "vips[0].backends[1].probe.grpc_method: required for GRPC probes (\"/pkg.Service/Method\")");
  CHECK(Error("kind: TLS tls_ca_file: \"ca.pem\"") ==
        "vips[0].backends[1].probe.tls_ca_file: \"ca.pem\" is not an absolute path");
  CHECK(Error("kind: GRPC grpc_method: \"/a.B/C\" grpc_descriptor_set: \"x.desc\"") ==
        "vips[0].backends[1].probe.grpc_descriptor_set: \"x.desc\" is not an absolute path");
  CHECK(Error("kind: HTTP grpc_expect: \"a == 1\"")
            .starts_with("vips[0].backends[1].probe.grpc_expect: is only used by GRPC"));
}

TEST_CASE("gRPC specs are checked against the descriptor set") {
  CHECK(
      FilesError("kind: GRPC grpc_method: \"/x.Y/Z\" grpc_descriptor_set: \"/nonexistent.desc\"") ==
      "vips[0].backends[1].probe.grpc_descriptor_set: cannot read descriptor set "
      "/nonexistent.desc: No such file or directory");
  CHECK(FilesError("kind: GRPC grpc_method: \"/x.Y/Z\" grpc_descriptor_set: \"/etc/hostname\"") ==
        "vips[0].backends[1].probe.grpc_descriptor_set: /etc/hostname is not a FileDescriptorSet "
        "(make it with protoc --include_imports --descriptor_set_out)");
  CHECK(FilesError(
            "kind: GRPC grpc_method: \"/ballast.testing.v1.Nope/Hello\" grpc_descriptor_set: \"" +
            kDesc + "\"") ==
        "vips[0].backends[1].probe.grpc_descriptor_set: descriptor set " + kDesc +
            " has no service ballast.testing.v1.Nope (it has: ballast.testing.v1.TestBackend)");
  CHECK(FilesError("kind: GRPC grpc_method: \"/ballast.testing.v1.TestBackend/Bye\" "
                   "grpc_descriptor_set: \"" +
                   kDesc + "\"") ==
        "vips[0].backends[1].probe.grpc_method: service ballast.testing.v1.TestBackend has no "
        "method Bye (it has: Hello)");
  CHECK(FilesError(Grpc("grpc_request_text: \"frm: 'x'\"")) ==
        "vips[0].backends[1].probe.grpc_request_text: not a ballast.testing.v1.HelloRequest in "
        "text format: 1:4: Message type \"ballast.testing.v1.HelloRequest\" has no field named "
        "\"frm\".");
  CHECK(FilesError(Grpc("grpc_expect: 'name == \"b1\"' grpc_expect: 'nmae == \"b1\"'")) ==
        "vips[0].backends[1].probe.grpc_expect[1]: \"nmae == \"b1\"\": "
        "ballast.testing.v1.HelloReply has no field nmae (fields: name, message, healthy)");
}

TEST_CASE("assertion syntax: operators and literals are checked against field types") {
  auto schema = GrpcSchema::Load(kDesc, kHello);
  REQUIRE(schema.ok());
  const auto* reply = (*schema)->method()->output_type();
  auto err = [&](const std::string& text) {
    auto e = Expectation::Parse(text, reply);
    REQUIRE_FALSE(e.ok());
    return std::string(e.status().message());
  };
  CHECK(err("healthy == 1") ==
        "\"healthy == 1\": healthy is bool, so the literal must be true or false (got 1)");
  CHECK(err("name == b1") ==
        "\"name == b1\": name is string, so the literal must be a \"quoted string\" (got b1)");
  CHECK(err("name < \"x\"") == "\"name < \"x\"\": operator < does not apply to name (string)");
  CHECK(err("healthy contains \"t\"") ==
        "\"healthy contains \"t\"\": operator contains does not apply to healthy (bool)");
  CHECK(err("name") ==
        "\"name\": after name an operator is expected (==, !=, <, <=, >, >=, contains)");
  CHECK(err("name ==") == "\"name ==\": no literal");
  CHECK(err("== \"x\"").starts_with("\"== \"x\"\" does not start with a field path"));
  CHECK(err("name.first == \"x\"") ==
        "\"name.first == \"x\"\": name is a string, it has no field first");
}

TEST_CASE("assertions evaluate against a reply built dynamically") {
  auto schema = GrpcSchema::Load(kDesc, kHello);
  REQUIRE(schema.ok());
  auto reply = (*schema)->NewReply();
  REQUIRE(google::protobuf::TextFormat::ParseFromString(
      "name: \"b2\" message: \"hello probe from b2\" healthy: true", reply.get()));
  const auto* type = (*schema)->method()->output_type();
  auto check = [&](const std::string& text) {
    auto e = Expectation::Parse(text, type);
    REQUIRE(e.ok());
    return e->Check(*reply);
  };
  CHECK(check("name == \"b2\"").empty());
  CHECK(check("name != \"b1\"").empty());
  CHECK(check("healthy == true").empty());
  CHECK(check("message contains \"from b2\"").empty());
  CHECK(check("name == \"b1\"") == "name is \"b2\" (want == \"b1\")");
  CHECK(check("healthy == false") == "healthy is true (want == false)");
  CHECK(check("message contains \"b1\"") ==
        "message is \"hello probe from b2\" (want contains \"b1\")");

  auto req = (*schema)->ParseRequest("from: \"probe\"");
  REQUIRE(req.ok());
  CHECK((*req)->ShortDebugString() == "from: \"probe\"");
  auto empty = (*schema)->ParseRequest("");
  REQUIRE(empty.ok());
  CHECK((*empty)->ByteSizeLong() == 0);
}

}  // namespace
}  // namespace ballast::probes
