// Observer quorum: whether a backend leaves service when several routers
// judge it.
//
// In a cluster every router probes every backend and runs the health logic
// (machine.h) on what it sees; each router's verdict for a backend is a vote.
// The leader applies a demotion only when a quorum of the live observers
// votes for it:
//
//   live    = observers that voted (an observer that is down, partitioned
//             from the store or has not evaluated the backend yet is absent)
//   needed  = live / 2 + 1 (a strict majority), and at least 2 when live >= 2,
//             so one observer never takes a backend out of a multi-node
//             cluster on its own; with a single live observer, 1.
//
//   out votes >= needed                  -> kOut
//   no out vote (and live >= 1)          -> kInService
//   some out votes, fewer than needed    -> kSplit: nothing changes; the
//                                           observers see different things
//                                           (a split view), which is alerted
//   no live observer                     -> kNoObservers: nothing changes
//
// Promotion is the mirror image: a backend that is out comes back only when
// no live observer votes it out any more (kInService); while some still do,
// the verdict is kSplit or kOut and the backend stays out.
//
// Pure functions; thread-safe.
#ifndef BALLAST_AGENT_HEALTH_QUORUM_H_
#define BALLAST_AGENT_HEALTH_QUORUM_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace ballast::health {

enum class ObserverVote : uint8_t {
  kAbsent = 0,  // no opinion: observer not live, or it has not judged the backend
  kInService,   // its health logic keeps the backend in service
  kOut,         // its health logic has the backend down or pinned
};

enum class QuorumOutcome : uint8_t { kInService = 0, kOut, kSplit, kNoObservers };
// "in_service", "out", "split", "no_observers".
std::string_view QuorumOutcomeName(QuorumOutcome o);

struct QuorumVerdict {
  QuorumOutcome outcome = QuorumOutcome::kNoObservers;
  int live = 0;
  int out_votes = 0;
  int in_votes = 0;
  int needed = 0;  // QuorumNeeded(live)
};

// Out votes needed among `live` observers (see the file comment); 0 when
// live <= 0.
int QuorumNeeded(int live);

// The verdict for one backend from every observer's vote (order irrelevant).
QuorumVerdict DecideQuorum(std::span<const ObserverVote> votes);

// Whether the backend is out of service after this verdict, given whether it
// was out before: kOut -> true, kInService -> false, kSplit and kNoObservers
// -> was_out (disagreement changes nothing).
bool QuorumKeepsOut(bool was_out, const QuorumVerdict& v);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_QUORUM_H_
