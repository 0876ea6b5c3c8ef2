// The control endpoint (HTTP, default 127.0.0.1:9000) and its client.
//
// Protocol (all answers are JSON objects with Content-Type application/json,
// errors are text/plain with status 400/404/405):
//   GET  /knobs         the current knobs
//   POST /set?k=v&k=v   set knobs (all or none); assignments may also come in
//                       the body, separated by '&', spaces or newlines;
//                       answers the knobs after the change
//   POST /clear         all knobs back to their defaults; answers the knobs
//   GET  /stats         counters: requests (http, grpc, probe, real), faults
//                       by kind, connections
//   POST /stats/reset   zero the counters; answers them
// Knobs: delay_ms delay_jitter_ms error_rate reset_rate hang wrong_body real_only.
#ifndef BALLAST_TOOLS_TESTBACKEND_CONTROL_H_
#define BALLAST_TOOLS_TESTBACKEND_CONTROL_H_

#include <cstdio>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "tools/testbackend/address.h"
#include "tools/testbackend/fault_engine.h"
#include "tools/testbackend/http_server.h"

namespace ballast::testbackend {

// Splits "a=1&b=2", "a=1 b=2" or one assignment per line into assignments.
std::vector<std::string> SplitAssignments(absl::string_view text);

// The control endpoint's handler; `engine` must outlive it. Knob changes are
// logged to stderr with `name`. Thread-safe.
HttpHandler MakeControlHandler(std::string name, FaultEngine* engine);

struct ControlResponse {
  int status = 0;
  std::string body;
};

// One request to a control endpoint (a fresh connection, Connection: close).
// Errors say which endpoint could not be reached and why.
absl::StatusOr<ControlResponse> ControlRequest(const SocketAddress& control,
                                               absl::string_view method, absl::string_view target,
                                               int timeout_ms);

// The `ctl` client mode: argv after "ctl". Prints answers to `out`,
// problems to `err`; returns the process exit code (0 ok, 1 the endpoint
// failed or refused, 2 usage).
int RunCtl(int argc, char** argv, FILE* out, FILE* err);

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_CONTROL_H_
