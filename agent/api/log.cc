#include "agent/api/log.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include <grpc/support/log.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/base/json.h"

namespace ballast::api {

std::string JsonLogLine(absl::string_view level, absl::string_view message, int64_t unix_ms) {
  std::string line = "{\"ts\":";
  base::JsonAppendQuoted(&line, base::Rfc3339Ms(unix_ms));
  line.append(",\"level\":");
  base::JsonAppendQuoted(&line, level);
  line.append(",\"component\":\"api\",\"msg\":");
  base::JsonAppendQuoted(&line, message);
  line.push_back('}');
  return line;
}

void StderrJsonLog(absl::string_view level, absl::string_view message) {
  std::string line = JsonLogLine(level, message, absl::ToUnixMillis(absl::Now()));
  line.push_back('\n');
  // One write per line keeps concurrent lines whole.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

namespace {

std::mutex grpc_log_mu;
LogFn* grpc_log = nullptr;  // leaked on purpose: gRPC may log until exit

void GrpcLogToSink(gpr_log_func_args* args) {
  LogFn* sink;
  {
    std::lock_guard<std::mutex> lock(grpc_log_mu);
    sink = grpc_log;
  }
  if (sink == nullptr) return;
  const char* level = args->severity == GPR_LOG_SEVERITY_ERROR ? "error" : "info";
  (*sink)(level, absl::StrCat("grpc: ", args->message, " (", args->file, ":", args->line, ")"));
}

}  // namespace

void RouteGrpcLogs(LogFn log) {
  {
    std::lock_guard<std::mutex> lock(grpc_log_mu);
    grpc_log = new LogFn(std::move(log));  // an earlier one is leaked, never freed under gRPC
  }
  gpr_set_log_function(GrpcLogToSink);
}

}  // namespace ballast::api
