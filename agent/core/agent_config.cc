#include "agent/core/agent_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/flow_hash_seed.h"
#include "agent/core/validate.h"
#include "ballast_abi.h"
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

class Collector final : public google::protobuf::io::ErrorCollector {
 public:
  explicit Collector(absl::string_view name) : name_(name) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message));
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::string name_;
  std::vector<std::string> errors_;
};

}  // namespace

absl::StatusOr<v1::AgentConfig> ParseAgentConfig(absl::string_view text, absl::string_view name) {
  v1::AgentConfig config;
  Collector collector(name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  if (!parser.ParseFromString(std::string(text), &config)) {
    if (collector.errors().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": not a valid AgentConfig"));
    }
    return absl::InvalidArgumentError(absl::StrJoin(collector.errors(), "\n"));
  }
  if (auto s = ValidateAgentConfig(config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
  }
  return config;
}

namespace {

absl::StatusOr<std::string> ReadText(const std::string& path, absl::string_view what) {
  std::ifstream f(path);
  if (!f) {
    const int err = errno;
    return absl::Status(
        err == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kPermissionDenied,
        absl::StrCat("cannot read ", what, " ", path, ": ", strerror(err)));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<v1::AgentConfig> LoadAgentConfig(const std::string& path) {
  auto text = ReadText(path, "config file");
  if (!text.ok()) return text.status();
  return ParseAgentConfig(*text, path);
}

absl::StatusOr<std::optional<dataplane::FlowHashSeed>> FixedFlowHashSeed(
    const v1::AgentConfig& config) {
  if (config.has_cluster()) return std::nullopt;
  if (config.flow_hash_seed_file().empty()) {
    if (config.has_bgp()) return dataplane::FlowHashSeed{};  // the public seed
    return std::nullopt;
  }
  const std::string& path = config.flow_hash_seed_file();
  auto text = ReadText(path, "flow_hash_seed_file");
  if (!text.ok()) return text.status();
  auto seed = ParseFlowHashSeedFile(*text);
  if (!seed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flow_hash_seed_file ", path, ": ", seed.status().message()));
  }
  return *seed;
}

v1::AgentConfig WithDefaults(const v1::AgentConfig& in) {
  v1::AgentConfig c = in;
  if (c.admin().socket_path().empty()) c.mutable_admin()->set_socket_path(kDefaultSocketPath);
  if (c.admin().socket_group().empty()) c.mutable_admin()->set_socket_group("root");
  if (c.state_file().empty()) c.set_state_file(kDefaultStateFile);
  if (c.audit_log().empty()) c.set_audit_log(kDefaultAuditLog);
  if (c.audit_max_mb() == 0) c.set_audit_max_mb(64);
  if (c.audit_retention_days() == 0) c.set_audit_retention_days(90);
  if (c.pin_dir().empty()) c.set_pin_dir(BALLAST_PIN_DIR);
  if (c.attach_mode().empty()) c.set_attach_mode("auto");
  if (c.flow_capacity() == 0) c.set_flow_capacity(BALLAST_DEFAULT_FLOWS);
  return c;
}

}  // namespace ballast::core
