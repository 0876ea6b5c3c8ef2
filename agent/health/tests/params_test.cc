// ValidateParams: the defaults are valid and each error names the field and
// the allowed range.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "agent/health/params.h"

namespace ballast::health {
namespace {

std::string ErrorOf(const std::function<void(Params&)>& change) {
  Params p;
  change(p);
  absl::Status s = ValidateParams(p);
  REQUIRE(s.code() == absl::StatusCode::kInvalidArgument);
  return std::string(s.message());
}

TEST_CASE("the default params are valid and are the issue's numbers") {
  Params p;
  CHECK(ValidateParams(p).ok());
  CHECK(p.demote_after == 3);
  CHECK(p.promote_after == 12);
  CHECK(p.ramp_percents == std::vector<int>{5, 20, 50, 100});
  CHECK(p.max_cooldown == absl::Hours(1));
  CHECK(p.pin_flaps == 3);
  CHECK(p.pin_window == absl::Minutes(10));
  CHECK(p.fleet_guard_percent == 50);
}

TEST_CASE("integer fields out of range name the field, value and range") {
  CHECK(ErrorOf([](Params& p) { p.demote_after = 0; }) ==
        "health params: demote_after 0 is out of range 1..1000");
  CHECK(ErrorOf([](Params& p) { p.promote_after = 1001; }) ==
        "health params: promote_after 1001 is out of range 1..1000");
  CHECK(ErrorOf([](Params& p) { p.fleet_guard_percent = 0; }) ==
        "health params: fleet_guard_percent 0 is out of range 1..100");
  CHECK(ErrorOf([](Params& p) { p.pin_flaps = 1; }) ==
        "health params: pin_flaps 1 is out of range 2..100");
  CHECK(ErrorOf([](Params& p) { p.ramp_hold = 0; }) ==
        "health params: ramp_hold 0 is out of range 1..10000");
  CHECK(ErrorOf([](Params& p) { p.weight_score_step = 51; }) ==
        "health params: weight_score_step 51 is out of range 1..50");
}

TEST_CASE("bad_score must be below good_score") {
  CHECK(ErrorOf([](Params& p) { p.bad_score = 80; }) ==
        "health params: bad_score 80 must be below good_score 80");
}

TEST_CASE("ramp percents must increase and end at 100") {
  CHECK(ErrorOf([](Params& p) {
          p.ramp_percents = {5, 20, 50};
        }) == "health params: ramp_percents [5, 20, 50] must end at 100");
  CHECK(ErrorOf([](Params& p) {
          p.ramp_percents = {20, 5, 100};
        }) == "health params: ramp_percents [20, 5, 100] must be strictly increasing");
  CHECK(ErrorOf([](Params& p) {
          p.ramp_percents = {0, 100};
        }) == "health params: ramp_percents [0, 100] steps must be 1..100");
  CHECK(ErrorOf([](Params& p) { p.ramp_percents = {}; }) ==
        "health params: ramp_percents [] must have 1..10 steps");
  Params single;
  single.ramp_percents = {100};
  CHECK(ValidateParams(single).ok());
}

TEST_CASE("durations out of range name the field and range") {
  CHECK(ErrorOf([](Params& p) { p.max_cooldown = absl::Hours(25); }) ==
        "health params: max_cooldown 25h is out of range 1s..24h");
  CHECK(ErrorOf([](Params& p) { p.cooldown_base = absl::Hours(2); }) ==
        "health params: cooldown_base 2h is out of range 1s..1h");
  CHECK(ErrorOf([](Params& p) { p.pin_window = absl::Hours(2); }) ==
        "health params: pin_window 2h is out of range 1s..1h");
  CHECK(ErrorOf([](Params& p) { p.disagreement_alert_after = absl::Seconds(-1); }) ==
        "health params: disagreement_alert_after -1s is out of range 0..24h");
}

TEST_CASE("fractions out of range name the field and range") {
  CHECK(ErrorOf([](Params& p) { p.baseline_alpha = 0; }) ==
        "health params: baseline_alpha 0 is out of range >0..1");
  CHECK(ErrorOf([](Params& p) { p.baseline_alpha_anomalous = 0.1; }) ==
        "health params: baseline_alpha_anomalous 0.1 is out of range 0..0.05");
  CHECK(ErrorOf([](Params& p) { p.slowdown_tolerance = 0.9; }) ==
        "health params: slowdown_tolerance 0.9 is out of range 1..10");
  CHECK(ErrorOf([](Params& p) { p.latency_floor_ms = 0; }) ==
        "health params: latency_floor_ms 0 is out of range >0..1000");
}

TEST_CASE("score bands must run from 100 down to 0") {
  CHECK(ErrorOf([](Params& p) {
          p.score_bands = {100, 50, 50, 0};
        }) == "health params: score_bands [100, 50, 50, 0] must be strictly decreasing");
  CHECK(ErrorOf([](Params& p) {
          p.score_bands = {90, 50, 0};
        }) == "health params: score_bands [90, 50, 0] must start at 100 and end at 0");
}

}  // namespace
}  // namespace ballast::health
