// The observer quorum (quorum.h): a majority of the live observers, at least
// two when there are two or more, takes a backend out; a minority changes
// nothing and is a split view.
#include <vector>

#include <catch2/catch.hpp>

#include "agent/health/quorum.h"

namespace ballast::health {
namespace {

constexpr ObserverVote kIn = ObserverVote::kInService;
constexpr ObserverVote kOut = ObserverVote::kOut;
constexpr ObserverVote kAbsent = ObserverVote::kAbsent;

QuorumOutcome Outcome(std::vector<ObserverVote> votes) { return DecideQuorum(votes).outcome; }

TEST_CASE("quorum needed: a majority of the live observers, at least two from two on") {
  CHECK(QuorumNeeded(0) == 0);
  CHECK(QuorumNeeded(1) == 1);
  CHECK(QuorumNeeded(2) == 2);
  CHECK(QuorumNeeded(3) == 2);
  CHECK(QuorumNeeded(4) == 3);
  CHECK(QuorumNeeded(5) == 3);
  CHECK(QuorumNeeded(6) == 4);
  CHECK(QuorumNeeded(-1) == 0);
}

TEST_CASE("a single observer decides alone") {
  CHECK(Outcome({kOut}) == QuorumOutcome::kOut);
  CHECK(Outcome({kIn}) == QuorumOutcome::kInService);
  // Absent observers do not count as live.
  CHECK(Outcome({kOut, kAbsent, kAbsent}) == QuorumOutcome::kOut);
}

TEST_CASE("with two live observers one vote out is a split view, two take it out") {
  CHECK(Outcome({kOut, kIn}) == QuorumOutcome::kSplit);
  CHECK(Outcome({kIn, kOut}) == QuorumOutcome::kSplit);
  CHECK(Outcome({kOut, kOut}) == QuorumOutcome::kOut);
  CHECK(Outcome({kOut, kIn, kAbsent}) == QuorumOutcome::kSplit);
}

TEST_CASE("three observers: one blind observer cannot demote, two can") {
  const QuorumVerdict one = DecideQuorum(std::vector<ObserverVote>{kIn, kOut, kIn});
  CHECK(one.outcome == QuorumOutcome::kSplit);
  CHECK(one.live == 3);
  CHECK(one.out_votes == 1);
  CHECK(one.in_votes == 2);
  CHECK(one.needed == 2);
  CHECK(Outcome({kOut, kOut, kIn}) == QuorumOutcome::kOut);
  CHECK(Outcome({kIn, kIn, kIn}) == QuorumOutcome::kInService);
}

TEST_CASE("four observers need three; an even split changes nothing") {
  CHECK(Outcome({kOut, kOut, kIn, kIn}) == QuorumOutcome::kSplit);
  CHECK(Outcome({kOut, kOut, kOut, kIn}) == QuorumOutcome::kOut);
  // One observer down: three live, two suffice.
  CHECK(Outcome({kOut, kOut, kIn, kAbsent}) == QuorumOutcome::kOut);
}

TEST_CASE("no live observer is no verdict") {
  CHECK(Outcome({}) == QuorumOutcome::kNoObservers);
  CHECK(Outcome({kAbsent, kAbsent}) == QuorumOutcome::kNoObservers);
}

TEST_CASE("a split view or no verdict keeps whatever was applied") {
  const QuorumVerdict split = DecideQuorum(std::vector<ObserverVote>{kOut, kIn, kIn});
  CHECK(QuorumKeepsOut(false, split) == false);
  CHECK(QuorumKeepsOut(true, split) == true);
  const QuorumVerdict none = DecideQuorum(std::vector<ObserverVote>{kAbsent});
  CHECK(QuorumKeepsOut(false, none) == false);
  CHECK(QuorumKeepsOut(true, none) == true);
  CHECK(QuorumKeepsOut(false, DecideQuorum(std::vector<ObserverVote>{kOut, kOut, kIn})));
  CHECK_FALSE(QuorumKeepsOut(true, DecideQuorum(std::vector<ObserverVote>{kIn, kIn, kIn})));
}

TEST_CASE("order of the votes does not matter") {
  std::vector<ObserverVote> v = {kOut, kIn, kOut, kAbsent, kIn};
  const QuorumOutcome first = Outcome(v);
  std::vector<ObserverVote> r(v.rbegin(), v.rend());
  CHECK(Outcome(r) == first);
  CHECK(first == QuorumOutcome::kSplit);  // 2 of 4 live; 3 needed
}

TEST_CASE("outcome names are stable") {
  CHECK(QuorumOutcomeName(QuorumOutcome::kInService) == "in_service");
  CHECK(QuorumOutcomeName(QuorumOutcome::kOut) == "out");
  CHECK(QuorumOutcomeName(QuorumOutcome::kSplit) == "split");
  CHECK(QuorumOutcomeName(QuorumOutcome::kNoObservers) == "no_observers");
}

}  // namespace
}  // namespace ballast::health
