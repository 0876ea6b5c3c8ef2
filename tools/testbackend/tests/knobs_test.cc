#include <catch2/catch.hpp>

#include "tools/testbackend/backend_http.h"
#include "tools/testbackend/control.h"
#include "tools/testbackend/fault_engine.h"
#include "tools/testbackend/knobs.h"

namespace ballast::testbackend {
namespace {

TEST_CASE("ApplyKnob sets each knob and rejects bad values without a change") {
  Knobs k;
  REQUIRE(ApplyKnob(&k, "delay_ms=250").ok());
  REQUIRE(ApplyKnob(&k, "delay_jitter_ms=10").ok());
  REQUIRE(ApplyKnob(&k, "error_rate=0.5").ok());
  REQUIRE(ApplyKnob(&k, "reset_rate=1").ok());
  REQUIRE(ApplyKnob(&k, "hang=on").ok());
  REQUIRE(ApplyKnob(&k, "wrong_body=true").ok());
  REQUIRE(ApplyKnob(&k, "real_only=1").ok());
  CHECK(k.delay_ms == 250);
  CHECK(k.delay_jitter_ms == 10);
  CHECK(k.error_rate == 0.5);
  CHECK(k.reset_rate == 1.0);
  CHECK(k.hang);
  CHECK(k.wrong_body);
  CHECK(k.real_only);
  const Knobs before = k;
  struct Bad {
    const char* text;
    const char* says;
  };
  for (Bad b : {Bad{"delay_ms=-1", "delay_ms"}, Bad{"delay_ms=3600001", "0..3600000"},
                Bad{"delay_ms=1.5", "delay_ms"}, Bad{"error_rate=1.01", "rate 0..1"},
                Bad{"reset_rate=nan", "reset_rate"}, Bad{"hang=maybe", "boolean"},
                Bad{"colour=red", "unknown knob 'colour'"}, Bad{"delay_ms", "key=value"}}) {
    INFO(b.text);
    absl::Status st = ApplyKnob(&k, b.text);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message().find(b.says) != std::string::npos);
    CHECK(k == before);
  }
}

TEST_CASE("KnobsJson lists every knob") {
  Knobs k;
  k.delay_ms = 7;
  k.error_rate = 0.25;
  k.hang = true;
  CHECK(KnobsJson(k) ==
        "{\"delay_ms\":7,\"delay_jitter_ms\":0,\"error_rate\":0.25,\"reset_rate\":0,"
        "\"hang\":true,\"wrong_body\":false,\"real_only\":false}");
}

TEST_CASE("Decide: no knob means a clean, unfaulted answer") {
  Plan p = Decide(Knobs{}, false, 0.0, 0.0, 0.0);
  CHECK(p.outcome == Outcome::kAnswer);
  CHECK(p.delay_ms == 0);
  CHECK_FALSE(p.faulted);
}

TEST_CASE("Decide: hang beats reset beats error beats wrong_body") {
  Knobs k;
  k.delay_ms = 100;
  k.wrong_body = true;
  CHECK(Decide(k, false, 0.5, 0.5, 0).outcome == Outcome::kWrongBody);
  k.error_rate = 1;
  CHECK(Decide(k, false, 0.5, 0.5, 0).outcome == Outcome::kError);
  k.reset_rate = 1;
  CHECK(Decide(k, false, 0.5, 0.5, 0).outcome == Outcome::kReset);
  CHECK(Decide(k, false, 0.5, 0.5, 0).delay_ms == 100);
  k.hang = true;
  Plan p = Decide(k, false, 0.5, 0.5, 0);
  CHECK(p.outcome == Outcome::kHang);
  CHECK(p.delay_ms == 0);
}

TEST_CASE("Decide: rates are probabilities against the draw") {
  Knobs k;
  k.error_rate = 0.3;
  CHECK(Decide(k, false, 0.9, 0.29, 0).outcome == Outcome::kError);
  CHECK(Decide(k, false, 0.9, 0.30, 0).outcome == Outcome::kAnswer);
  CHECK(Decide(k, false, 0.9, 0.30, 0).faulted);  // a knob applied, even if it did not fire
  k.error_rate = 0;
  k.reset_rate = 1;
  CHECK(Decide(k, false, 0.999999, 0, 0).outcome == Outcome::kReset);
  k.reset_rate = 0.5;
  CHECK(Decide(k, false, 0.5, 0, 0).outcome == Outcome::kAnswer);
}

TEST_CASE("Decide: jitter adds 0..jitter ms to the delay") {
  Knobs k;
  k.delay_ms = 100;
  k.delay_jitter_ms = 50;
  CHECK(Decide(k, false, 1, 1, 0.0).delay_ms == 100);
  CHECK(Decide(k, false, 1, 1, 0.5).delay_ms == 125);
  CHECK(Decide(k, false, 1, 1, 0.999999).delay_ms == 150);
}

TEST_CASE("Decide: real_only spares probes and only probes") {
  Knobs k;
  k.error_rate = 1;
  k.hang = true;
  k.real_only = true;
  Plan probe = Decide(k, true, 0, 0, 0);
  CHECK(probe.outcome == Outcome::kAnswer);
  CHECK_FALSE(probe.faulted);
  CHECK(Decide(k, false, 0, 0, 0).outcome == Outcome::kHang);
  k.real_only = false;
  CHECK(Decide(k, true, 0, 0, 0).outcome == Outcome::kHang);
}

TEST_CASE("probe user agents: a product token starts with ballast-probe") {
  CHECK(IsProbeUserAgent("ballast-probe"));
  CHECK(IsProbeUserAgent("ballast-probe/1 libcurl/7.88.1"));
  // What grpc++ 1.51 sends for a channel whose primary user agent is ours.
  CHECK(IsProbeUserAgent("grpc-c++/1.51.1 ballast-probe/1 grpc-c/29.0.0 (linux; chttp2)"));
  CHECK_FALSE(IsProbeUserAgent("curl/7.88.1"));
  CHECK_FALSE(IsProbeUserAgent("grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)"));
  CHECK_FALSE(IsProbeUserAgent("ballast-prob"));
  CHECK_FALSE(IsProbeUserAgent("not-ballast-probe/1"));
  CHECK_FALSE(IsProbeUserAgent(""));
}

TEST_CASE("FaultEngine sets all assignments or none, and counts by kind") {
  Stats stats;
  FaultEngine engine(&stats);
  REQUIRE_FALSE(engine.Set({"error_rate=1", "delay_ms=oops"}).ok());
  CHECK(engine.knobs() == Knobs{});
  REQUIRE(engine.Set({"error_rate=1", "real_only=true"}).ok());
  CHECK(engine.Decide(Protocol::kHttp, false).outcome == Outcome::kError);
  CHECK(engine.Decide(Protocol::kGrpc, true).outcome == Outcome::kAnswer);
  CHECK(stats.http_requests == 1);
  CHECK(stats.grpc_requests == 1);
  CHECK(stats.real_requests == 1);
  CHECK(stats.probe_requests == 1);
  CHECK(stats.errors == 1);
  CHECK(stats.faulted_real == 1);
  CHECK(stats.faulted_probe == 0);
  engine.Clear();
  CHECK(engine.knobs() == Knobs{});
  stats.Reset();
  CHECK(stats.Json().find("\"total\":0") != std::string::npos);
}

TEST_CASE("FaultEngine waits give up when abandoned or stopping") {
  Stats stats;
  FaultEngine engine(&stats);
  REQUIRE(engine.Set({"hang=true"}).ok());
  CHECK_FALSE(engine.WaitOutHang(false, [] { return true; }));
  CHECK(engine.Sleep(0, [] { return false; }));
  CHECK_FALSE(engine.Sleep(1000, [] { return true; }));
  engine.Stop();
  CHECK_FALSE(engine.WaitOutHang(false, [] { return false; }));
}

TEST_CASE("the wrong body never contains the name") {
  for (const char* name : {"b1", "wrong", "o", "body", "x"}) {
    CHECK(WrongBody(name).find(name) == std::string::npos);
  }
}

TEST_CASE("control assignments split on & and whitespace") {
  CHECK(SplitAssignments("a=1&b=2") == std::vector<std::string>{"a=1", "b=2"});
  CHECK(SplitAssignments(" a=1 \n b=2\r\n&&") == std::vector<std::string>{"a=1", "b=2"});
  CHECK(SplitAssignments("").empty());
}

}  // namespace
}  // namespace ballast::testbackend
