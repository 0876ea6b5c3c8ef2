// Effective weight: nominal x ramp x health, rounding, and precedence.
#include <catch2/catch.hpp>

#include "agent/health/weight.h"

namespace ballast::health {
namespace {

TEST_CASE("the weight score rounds to the nearest weight_score_step") {
  Params p;  // step 5
  CHECK(WeightScore(100, p) == 100);
  CHECK(WeightScore(98, p) == 100);
  CHECK(WeightScore(97, p) == 95);
  CHECK(WeightScore(62, p) == 60);
  CHECK(WeightScore(63, p) == 65);
  CHECK(WeightScore(0, p) == 0);
  p.weight_score_step = 1;
  CHECK(WeightScore(62, p) == 62);
}

TEST_CASE("effective weight is nominal x ramp x health, rounded half up") {
  CHECK(EffectiveWeight(OperatorState::kActive, 100, true, 100, 100) == 100);
  CHECK(EffectiveWeight(OperatorState::kActive, 100, true, 100, 60) == 60);
  CHECK(EffectiveWeight(OperatorState::kActive, 100, true, 50, 60) == 30);
  CHECK(EffectiveWeight(OperatorState::kActive, 10, true, 5, 100) == 1);  // 0.5 -> 1
  CHECK(EffectiveWeight(OperatorState::kActive, 30, true, 5, 100) == 2);  // 1.5 -> 2
  CHECK(EffectiveWeight(OperatorState::kActive, 1000, true, 20, 95) == 190);
}

TEST_CASE("a backend in service with a positive nominal never rounds to 0") {
  CHECK(EffectiveWeight(OperatorState::kActive, 1, true, 5, 100) == 1);
  CHECK(EffectiveWeight(OperatorState::kActive, 100, true, 100, 0) == 1);
}

TEST_CASE("precedence: operator drain/evict, then manual weight 0, then health") {
  CHECK(EffectiveWeight(OperatorState::kDraining, 100, true, 100, 100) == 0);
  CHECK(EffectiveWeight(OperatorState::kEvicted, 100, true, 100, 100) == 0);
  CHECK(EffectiveWeight(OperatorState::kActive, 0, true, 100, 100) == 0);
  CHECK(EffectiveWeight(OperatorState::kActive, 100, false, 100, 100) == 0);
  CHECK(OperatorStateName(OperatorState::kDraining) == "draining");
}

}  // namespace
}  // namespace ballast::health
