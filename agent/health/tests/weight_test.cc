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

TEST_CASE("the weight score moves only when the score leaves a one-step dead band") {
  Params p;  // step 5
  // A score jittering around a rounding edge (72.5) keeps one weight.
  int applied = NextWeightScore(100, 72, p);
  CHECK(applied == 70);
  int changes = 0;
  for (int score : {73, 72, 74, 71, 73, 72, 70, 74}) {
    const int next = NextWeightScore(applied, score, p);
    changes += next != applied;
    applied = next;
  }
  CHECK(changes == 0);
  CHECK(applied == 70);
  // Rounding alone would have switched weights at every crossing of 72.5.
  int rounded_changes = 0, rounded = 70;
  for (int score : {73, 72, 74, 71, 73, 72, 70, 74}) {
    rounded_changes += WeightScore(score, p) != rounded;
    rounded = WeightScore(score, p);
  }
  CHECK(rounded_changes == 7);
  // A whole step away moves it, in either direction, at once.
  CHECK(NextWeightScore(70, 75, p) == 75);
  CHECK(NextWeightScore(70, 65, p) == 65);
  CHECK(NextWeightScore(70, 40, p) == 40);
  CHECK(NextWeightScore(70, 0, p) == 0);
  // Full health is never held back; a small dip from 100 is.
  CHECK(NextWeightScore(95, 98, p) == 100);
  CHECK(NextWeightScore(100, 96, p) == 100);
  CHECK(NextWeightScore(100, 95, p) == 95);
  // Step 1: no rounding and no dead band.
  p.weight_score_step = 1;
  CHECK(NextWeightScore(70, 71, p) == 71);
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
