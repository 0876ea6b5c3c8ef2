// ProbeVerdicts: what each evaluation sees of a target's probes, and how
// long a verdict stands when evaluations come faster than probes.
#include <catch2/catch.hpp>

#include "agent/core/probe_verdicts.h"

namespace ballast::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);
absl::Time At(int ms) { return kT0 + absl::Milliseconds(ms); }
const absl::Duration kStands = absl::Milliseconds(350);  // interval 200 + timeout 150

TEST_CASE("probe verdicts: the results since the last evaluation") {
  ProbeVerdicts v;
  CHECK_FALSE(v.Take("t", At(0), kStands).has_value());  // never probed
  v.Add("t", true, absl::Milliseconds(2), At(10));
  v.Add("t", false, absl::ZeroDuration(), At(60));
  auto s = v.Take("t", At(100), kStands);
  REQUIRE(s.has_value());
  CHECK(s->successes == 1);
  CHECK(s->failures == 1);
  CHECK(s->success_latency_sum == absl::Milliseconds(2));
  CHECK_FALSE(s->carried);
  v.Add("t", false, absl::ZeroDuration(), At(210));
  s = v.Take("t", At(300), kStands);
  REQUIRE(s.has_value());
  CHECK(s->successes == 0);  // a new interval: only what came since
  CHECK(s->failures == 1);
  CHECK_FALSE(s->carried);
}

TEST_CASE("probe verdicts: without a new result the last verdict stands until the next is due") {
  ProbeVerdicts v;
  v.Add("t", false, absl::ZeroDuration(), At(50));
  REQUIRE(v.Take("t", At(100), kStands).has_value());
  for (int at : {200, 300, 400}) {  // evaluations every 100 ms, the probe every 200 ms or later
    auto s = v.Take("t", At(at), kStands);
    REQUIRE(s.has_value());
    CHECK(s->carried);
    CHECK(s->failures == 1);
  }
  CHECK_FALSE(v.Take("t", At(401), kStands).has_value());  // 351 ms without a result: no opinion
  v.Add("t", true, absl::Milliseconds(3), At(450));
  auto s = v.Take("t", At(500), kStands);
  REQUIRE(s.has_value());
  CHECK_FALSE(s->carried);
  CHECK(s->successes == 1);
}

TEST_CASE("probe verdicts: a forgotten target has no verdict") {
  ProbeVerdicts v;
  v.Add("t", true, absl::Milliseconds(1), At(0));
  v.Add("u", true, absl::Milliseconds(1), At(0));
  v.Forget("t");
  CHECK_FALSE(v.Take("t", At(10), kStands).has_value());
  CHECK(v.Take("u", At(10), kStands).has_value());
  v.Clear();
  CHECK_FALSE(v.Take("u", At(20), kStands).has_value());
}

}  // namespace
}  // namespace ballast::core
