// The neighbour hand-off (bpf/tc_neigh.bpf.c): a tc ingress program beside
// the lb program on each of its devices, which sends the frames the lb
// program could not (next hop unresolved) with bpf_redirect_neigh().
//
// Its one map is the lb program's `neigh_handoff` (the hand-off where XDP
// programs may not write metadata), whose fd Open() takes. It keeps no
// state of its own, so it is not pinned: a
// restarted agent loads it again and swaps it in over the old one
// (BPF_TC_F_REPLACE on a fixed handle and priority). Attach() creates the
// device's clsact qdisc if needed; Detach() removes only this filter (the
// qdisc stays: other programs may use it).
//
// Thread-safety: none (one owner thread). Devices are looked up in the
// calling thread's network namespace.
#ifndef BALLAST_AGENT_DATAPLANE_TC_NEIGH_H_
#define BALLAST_AGENT_DATAPLANE_TC_NEIGH_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct tc_neigh;  // generated skeleton (tc_neigh.skel.h)

namespace ballast::dataplane {

class NeighHandoff {
 public:
  // `handoff_map_fd`: the lb program's `neigh_handoff` map.
  static absl::StatusOr<std::unique_ptr<NeighHandoff>> Open(int handoff_map_fd);
  ~NeighHandoff();
  NeighHandoff(const NeighHandoff&) = delete;
  NeighHandoff& operator=(const NeighHandoff&) = delete;

  // Installs (or replaces) the filter on the device's ingress hook.
  absl::Status Attach(int ifindex, std::string_view ifname);
  // Removes ballast's filter from the device's ingress hook, whichever
  // build installed it. OK when there is none.
  static absl::Status Detach(int ifindex, std::string_view ifname);
  // Whether the device's ingress hook has ballast's filter.
  static bool Attached(int ifindex);

  int prog_fd() const;

 private:
  NeighHandoff() = default;
  tc_neigh* skel_ = nullptr;
};

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_TC_NEIGH_H_
