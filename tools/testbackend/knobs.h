// The test backend's fault knobs and the pure decision they drive.
//
// Knobs are plain values; FaultEngine (fault_engine.h) holds the live copy.
// Decide() is a pure function of the knobs, whether the request is a probe,
// and random draws passed in, so every rule is testable without timing.
#ifndef BALLAST_TOOLS_TESTBACKEND_KNOBS_H_
#define BALLAST_TOOLS_TESTBACKEND_KNOBS_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace ballast::testbackend {

// Upper bound of delay_ms and delay_jitter_ms (one hour).
inline constexpr int64_t kMaxDelayMs = 3'600'000;

struct Knobs {
  int64_t delay_ms = 0;         // added before answering (or resetting)
  int64_t delay_jitter_ms = 0;  // extra delay, uniform in [0, jitter]
  double error_rate = 0;        // 0..1: HTTP 503 / gRPC UNAVAILABLE
  double reset_rate = 0;        // 0..1: TCP RST / gRPC stream cancelled
  bool hang = false;            // read requests, never answer while set
  bool wrong_body = false;      // 200 without the name / gRPC name "wrong"
  bool real_only = false;       // faults spare probe requests

  // True when any knob other than real_only would change an answer.
  bool AnyFault() const;
  bool operator==(const Knobs&) const = default;
};

// Applies one "key=value" assignment. Keys are the field names above;
// booleans accept true/false/1/0/on/off/yes/no. On error *knobs is unchanged
// and the message names the key and the allowed range.
absl::Status ApplyKnob(Knobs* knobs, absl::string_view assignment);

// The knobs as one JSON object, keys in declaration order.
std::string KnobsJson(const Knobs& knobs);

// What happens to one request.
enum class Outcome {
  kAnswer,     // the normal answer
  kError,      // HTTP 503 / gRPC UNAVAILABLE
  kReset,      // HTTP: RST (SO_LINGER 0); gRPC: RST_STREAM (client sees CANCELLED)
  kHang,       // never answer while hang stays set
  kWrongBody,  // 200 whose body lacks the name / reply name "wrong"
};
absl::string_view OutcomeName(Outcome outcome);

struct Plan {
  Outcome outcome = Outcome::kAnswer;
  int64_t delay_ms = 0;  // to wait before acting on `outcome` (0 for kHang)
  bool faulted = false;  // a knob applied to this request (gRPC healthy=false)
};

// Pure decision. `u_reset`, `u_error`, `u_jitter` are independent uniform
// draws in [0, 1). Precedence: hang, then reset (u_reset < reset_rate), then
// error (u_error < error_rate), then wrong_body, else answer; the delay
// (delay_ms + floor(u_jitter * (jitter + 1))) applies to every outcome but
// hang. With real_only set, a probe request gets a clean plan.
Plan Decide(const Knobs& knobs, bool is_probe, double u_reset, double u_error, double u_jitter);

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_KNOBS_H_
