// Where the admin API layer reports what an operator should know about
// (access denials, listener failures). The agent passes its own structured
// logger; the default writes one JSON object per line to stderr.
//
// A LogFn may be called from any gRPC or listener thread concurrently and
// must not block for long.
#ifndef BALLAST_AGENT_API_LOG_H_
#define BALLAST_AGENT_API_LOG_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace ballast::api {

// level: "info" | "warning" | "error" (the names core::LogLevelName uses).
using LogFn = std::function<void(absl::string_view level, absl::string_view message)>;

// {"ts":"2024-05-01T10:00:00.123Z","level":"warning","component":"api","msg":"..."}
void StderrJsonLog(absl::string_view level, absl::string_view message);

// The JSON line StderrJsonLog writes, without the trailing newline.
std::string JsonLogLine(absl::string_view level, absl::string_view message, int64_t unix_ms);

// Sends gRPC's own log lines (e.g. "Handshake failed ... certificate verify
// failed" when a client without a valid certificate is refused) to `log`
// instead of gRPC's plain-text stderr format, so the agent's stderr stays
// one JSON object per line. Process-wide: call once at start-up, before
// starting servers, with a function that stays valid for the life of the
// process (it is copied and never released).
void RouteGrpcLogs(LogFn log);

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_LOG_H_
