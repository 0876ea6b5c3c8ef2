#include "agent/health/quorum.h"

namespace ballast::health {

std::string_view QuorumOutcomeName(QuorumOutcome o) {
  switch (o) {
    case QuorumOutcome::kInService:
      return "in_service";
    case QuorumOutcome::kOut:
      return "out";
    case QuorumOutcome::kSplit:
      return "split";
    case QuorumOutcome::kNoObservers:
      return "no_observers";
  }
  return "unknown";
}

int QuorumNeeded(int live) {
  if (live <= 0) return 0;
  if (live == 1) return 1;
  const int majority = live / 2 + 1;
  return majority < 2 ? 2 : majority;
}

QuorumVerdict DecideQuorum(std::span<const ObserverVote> votes) {
  QuorumVerdict v;
  for (ObserverVote o : votes) {
    if (o == ObserverVote::kOut) {
      ++v.out_votes;
    } else if (o == ObserverVote::kInService) {
      ++v.in_votes;
    }
  }
  v.live = v.out_votes + v.in_votes;
  v.needed = QuorumNeeded(v.live);
  if (v.live == 0) {
    v.outcome = QuorumOutcome::kNoObservers;
  } else if (v.out_votes >= v.needed) {
    v.outcome = QuorumOutcome::kOut;
  } else if (v.out_votes == 0) {
    v.outcome = QuorumOutcome::kInService;
  } else {
    v.outcome = QuorumOutcome::kSplit;
  }
  return v;
}

bool QuorumKeepsOut(bool was_out, const QuorumVerdict& v) {
  switch (v.outcome) {
    case QuorumOutcome::kOut:
      return true;
    case QuorumOutcome::kInService:
      return false;
    case QuorumOutcome::kSplit:
    case QuorumOutcome::kNoObservers:
      break;
  }
  return was_out;
}

}  // namespace ballast::health
