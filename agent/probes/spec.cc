#include "agent/probes/spec.h"

#include <unistd.h>

#include <algorithm>
#include <memory>

#include <re2/re2.h>

#include "agent/base/strcat.h"
#include "agent/probes/grpc_schema.h"

namespace ballast::probes {
namespace {

using base::AV;
using base::Cat;

class Where {
 public:
  explicit Where(std::string_view path) : path_(path) {}
  absl::Status Invalid(std::string_view field, std::string_view problem) const {
    return absl::InvalidArgumentError(path_.empty() ? Cat(field, ": ", problem)
                                                    : Cat(path_, ".", field, ": ", problem));
  }

 private:
  std::string_view path_;
};

bool IsToken(const std::string& s) {
  return !s.empty() && s.size() <= 32 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
  });
}

bool Printable(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
}

}  // namespace

v1::ProbeSpec::Kind KindOf(const v1::ProbeSpec& spec) {
  return spec.kind() == v1::ProbeSpec::KIND_UNSPECIFIED ? v1::ProbeSpec::TCP : spec.kind();
}

std::string HttpMethodOf(const v1::ProbeSpec& spec) {
  return spec.http_method().empty() ? "GET" : spec.http_method();
}

std::string HttpPathOf(const v1::ProbeSpec& spec) {
  return spec.http_path().empty() ? "/" : spec.http_path();
}

std::vector<uint32_t> HttpStatusesOf(const v1::ProbeSpec& spec) {
  if (spec.http_status().empty()) return {200};
  return {spec.http_status().begin(), spec.http_status().end()};
}

std::string TlsServerNameOf(const v1::ProbeSpec& spec) {
  return spec.tls_server_name().empty() ? spec.http_host() : spec.tls_server_name();
}

uint32_t IntervalMsOf(const v1::ProbeSpec& spec) {
  return spec.interval_ms() ? spec.interval_ms() : 1000;
}

uint32_t TimeoutMsOf(const v1::ProbeSpec& spec) {
  if (spec.timeout_ms() != 0) return spec.timeout_ms();
  return std::min<uint32_t>(500, IntervalMsOf(spec));
}

const char* KindName(v1::ProbeSpec::Kind kind) {
  switch (kind) {
    case v1::ProbeSpec::KIND_UNSPECIFIED:
    case v1::ProbeSpec::TCP:
      return "TCP";
    case v1::ProbeSpec::HTTP:
      return "HTTP";
    case v1::ProbeSpec::HTTPS:
      return "HTTPS";
    case v1::ProbeSpec::GRPC:
      return "GRPC";
    case v1::ProbeSpec::TLS:
      return "TLS";
    case v1::ProbeSpec::UDP:
      return "UDP";
    default:
      return "unknown";
  }
}

absl::Status ValidateProbeSpec(const v1::ProbeSpec& spec, std::string_view field_path) {
  const Where at(field_path);
  if (!v1::ProbeSpec::Kind_IsValid(spec.kind())) {
    return at.Invalid("kind", Cat(static_cast<int>(spec.kind()),
                                  " is not a probe kind (TCP, HTTP, HTTPS, GRPC, TLS, UDP)"));
  }
  const v1::ProbeSpec::Kind kind = KindOf(spec);
  const bool http = kind == v1::ProbeSpec::HTTP || kind == v1::ProbeSpec::HTTPS;
  const bool grpc = kind == v1::ProbeSpec::GRPC;
  const bool tls =
      kind == v1::ProbeSpec::HTTPS || kind == v1::ProbeSpec::TLS || (grpc && spec.grpc_tls());
  const bool udp = kind == v1::ProbeSpec::UDP;
  const std::string kind_name = KindName(kind);

  // Fields of other kinds are refused, so a typo in `kind` cannot silently
  // turn an HTTP check into a TCP connect.
  auto only = [&](bool used, std::string_view field, std::string_view kinds) -> absl::Status {
    if (used) return absl::OkStatus();
    return at.Invalid(field,
                      Cat("is only used by ", kinds, " probes (this probe is ", kind_name, ")"));
  };
  absl::Status s;
  if (!spec.http_path().empty()) s.Update(only(http, "http_path", "HTTP and HTTPS"));
  if (!spec.http_host().empty()) s.Update(only(http, "http_host", "HTTP and HTTPS"));
  if (!spec.http_status().empty()) s.Update(only(http, "http_status", "HTTP and HTTPS"));
  if (!spec.http_method().empty()) s.Update(only(http, "http_method", "HTTP and HTTPS"));
  if (!spec.body_contains().empty()) {
    s.Update(only(http || udp, "body_contains", "HTTP, HTTPS and UDP"));
  }
  if (!spec.body_regex().empty()) s.Update(only(http || udp, "body_regex", "HTTP, HTTPS and UDP"));
  if (!spec.udp_request().empty()) s.Update(only(udp, "udp_request", "UDP"));
  constexpr std::string_view kTlsKinds = "HTTPS, TLS and GRPC with grpc_tls";
  if (!spec.tls_ca_file().empty()) s.Update(only(tls, "tls_ca_file", kTlsKinds));
  if (spec.tls_insecure()) s.Update(only(tls, "tls_insecure", kTlsKinds));
  if (!spec.tls_server_name().empty()) s.Update(only(tls, "tls_server_name", kTlsKinds));
  if (!spec.tls_cert_file().empty()) s.Update(only(tls, "tls_cert_file", kTlsKinds));
  if (!spec.tls_key_file().empty()) s.Update(only(tls, "tls_key_file", kTlsKinds));
  if (spec.grpc_tls()) s.Update(only(grpc, "grpc_tls", "GRPC"));
  if (!spec.grpc_method().empty()) s.Update(only(grpc, "grpc_method", "GRPC"));
  if (!spec.grpc_descriptor_set().empty()) s.Update(only(grpc, "grpc_descriptor_set", "GRPC"));
  if (!spec.grpc_request_text().empty()) s.Update(only(grpc, "grpc_request_text", "GRPC"));
  if (!spec.grpc_expect().empty()) s.Update(only(grpc, "grpc_expect", "GRPC"));
  if (!s.ok()) return s;

  if (spec.udp_request().size() > kMaxUdpRequest) {
    return at.Invalid("udp_request", Cat("is ", spec.udp_request().size(), " bytes, at most ",
                                         kMaxUdpRequest, " (one datagram within any path MTU)"));
  }
  if (!spec.http_method().empty() && !IsToken(spec.http_method())) {
    return at.Invalid("http_method", Cat("\"", spec.http_method(),
                                         "\" is not an upper-case HTTP method (GET, HEAD, ...)"));
  }
  if (!spec.body_regex().empty()) {
    if (spec.body_regex().size() > 4096) {
      return at.Invalid("body_regex", Cat("is ", spec.body_regex().size(), " bytes, at most 4096"));
    }
    RE2::Options opts;
    opts.set_log_errors(false);
    RE2 re(spec.body_regex(), opts);
    if (!re.ok()) {
      return at.Invalid("body_regex",
                        Cat("\"", spec.body_regex(), "\" does not compile (RE2): ", re.error()));
    }
  }
  if (!spec.tls_ca_file().empty() && spec.tls_ca_file().front() != '/') {
    return at.Invalid("tls_ca_file", Cat("\"", spec.tls_ca_file(), "\" is not an absolute path"));
  }
  for (const auto& [field, path] :
       {std::pair<std::string_view, const std::string*>{"tls_cert_file", &spec.tls_cert_file()},
        {"tls_key_file", &spec.tls_key_file()}}) {
    if (!path->empty() && path->front() != '/') {
      return at.Invalid(field, Cat("\"", *path, "\" is not an absolute path"));
    }
  }
  if (spec.tls_cert_file().empty() != spec.tls_key_file().empty()) {
    return at.Invalid(spec.tls_cert_file().empty() ? "tls_cert_file" : "tls_key_file",
                      "and its pair go together (the client certificate and its key)");
  }
  if (spec.tls_insecure() && !spec.tls_ca_file().empty()) {
    return at.Invalid("tls_insecure",
                      "and tls_ca_file exclude each other (insecure skips the "
                      "verification the CA file is for)");
  }
  if (!spec.tls_server_name().empty() &&
      (spec.tls_server_name().size() > 255 || !Printable(spec.tls_server_name()) ||
       spec.tls_server_name().find_first_of(" /") != std::string::npos)) {
    return at.Invalid("tls_server_name",
                      Cat("\"", spec.tls_server_name(), "\" is not a host name"));
  }

  if (grpc) {
    if (spec.grpc_method().empty()) {
      return at.Invalid("grpc_method", "required for GRPC probes (\"/pkg.Service/Method\")");
    }
    if (spec.grpc_descriptor_set().empty()) {
      return at.Invalid("grpc_descriptor_set",
                        "required for GRPC probes: a descriptor set file defining " +
                            spec.grpc_method() +
                            " (protoc --include_imports --descriptor_set_out)");
    }
    if (spec.grpc_descriptor_set().front() != '/') {
      return at.Invalid("grpc_descriptor_set",
                        Cat("\"", spec.grpc_descriptor_set(), "\" is not an absolute path"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckProbeFiles(const v1::ProbeSpec& spec, std::string_view field_path) {
  const Where at(field_path);
  for (const auto& [field, path] :
       {std::pair<std::string_view, const std::string*>{"tls_ca_file", &spec.tls_ca_file()},
        {"tls_cert_file", &spec.tls_cert_file()},
        {"tls_key_file", &spec.tls_key_file()}}) {
    if (!path->empty() && access(path->c_str(), R_OK) != 0) {
      return at.Invalid(field, Cat("cannot read ", *path, ": ", std::strerror(errno)));
    }
  }
  if (KindOf(spec) == v1::ProbeSpec::GRPC) {
    auto schema = GrpcSchema::Load(spec.grpc_descriptor_set(), spec.grpc_method());
    if (!schema.ok()) {
      const bool file_problem =
          schema.status().message().find(spec.grpc_descriptor_set()) != absl::string_view::npos;
      return at.Invalid(file_problem ? "grpc_descriptor_set" : "grpc_method",
                        std::string(schema.status().message()));
    }
    if (auto req = (*schema)->ParseRequest(spec.grpc_request_text()); !req.ok()) {
      return at.Invalid("grpc_request_text", std::string(req.status().message()));
    }
    for (int i = 0; i < spec.grpc_expect_size(); ++i) {
      auto e = Expectation::Parse(spec.grpc_expect(i), (*schema)->method()->output_type());
      if (!e.ok())
        return at.Invalid(Cat("grpc_expect[", i, "]"), std::string(e.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace ballast::probes
