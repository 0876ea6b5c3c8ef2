// The backend's HTTP behaviour: GET, HEAD and POST on any path answer 200
// with the body "backend <name>\n" and the header "X-Backend: <name>";
// other methods get 405. The fault knobs of `engine` shape each answer:
//   delay      the answer (whatever it is) leaves after delay_ms (+ jitter);
//   error      503 "backend <name>: injected error", header X-Fault: error;
//   reset      no answer, the connection is closed with a TCP RST;
//   hang       no answer while hang stays set; the connection stays open
//              (when hang is cleared, the held request gets a fresh decision);
//   wrong_body 200 with a body that does not contain the name, X-Fault: wrong_body.
// A request whose User-Agent has a token starting with "ballast-probe" is a probe (see
// fault_engine.h); with real_only set, probes get the normal answer.
#ifndef BALLAST_TOOLS_TESTBACKEND_BACKEND_HTTP_H_
#define BALLAST_TOOLS_TESTBACKEND_BACKEND_HTTP_H_

#include <string>
#include "absl/strings/string_view.h"

#include "tools/testbackend/fault_engine.h"
#include "tools/testbackend/http_server.h"

namespace ballast::testbackend {

// The wrong_body body for `name`: never contains `name` (non-empty).
std::string WrongBody(absl::string_view name);

// The handler; `engine` must outlive it. Thread-safe.
HttpHandler MakeBackendHttpHandler(std::string name, FaultEngine* engine);

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_BACKEND_HTTP_H_
