// The agent's side of the router-churn model: one VIP's state, changed one
// commit at a time the way lbctl changes it, and what every router programs
// from it (its Maglev table, the slot history of established second chance,
// the backends' data-plane states).
//
// Nothing here is re-implemented: a commit runs the agent's own code on a
// v1::State, as RouterEngine::Commit does (agent/core/router_engine.cc):
// AssignIds, BuildImage, RecordTableChanges (the table history and its
// pruning: the last kTableVersions versions, plus the newest version in
// which each draining backend had weight), RefreshHistories; the table and
// the slot history are then BuildTableOf and BuildHistoryOf of the VIP's
// image (maglev::BuildTable, core::SlotHistory). Every router holds the same
// state, so one VipAgent stands for all of them.
//
// Backends are named by lbsim's index; backend i has the address
// 198.18.3<i+1>.2 for i < 9 (those of the ECMP lab's IPv4 VIP, so the
// tables are the lab's), else 198.20.<i/250>.<i%250+1>. The VIP is
// 198.18.0.10:80/tcp.
//
// Not thread-safe (one per run).
#ifndef BALLAST_TOOLS_LBSIM_CHURN_AGENT_H_
#define BALLAST_TOOLS_LBSIM_CHURN_AGENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/core/image.h"
#include "ballast/v1/agent.pb.h"
#include "ballast_abi.h"
#include "tools/lbsim/scenario.h"

namespace ballast::lbsim {

// A backend as the data plane sees it (`backends[id]`).
struct DataplaneBackend {
  bool configured = false;
  uint32_t id = 0;  // data-plane id (0: not configured)
  ballast_backend_state state = BALLAST_BACKEND_UNUSED;
  int64_t drain_deadline_unix_ms = 0;  // DRAINING only
  uint32_t nominal_weight = 0;

  // Whether the data plane may send a flow to it at `now_unix_ms`
  // (backend_usable: ACTIVE, or DRAINING before its deadline).
  bool Usable(int64_t now_unix_ms) const {
    if (!configured) return false;
    if (state == BALLAST_BACKEND_ACTIVE) return true;
    return state == BALLAST_BACKEND_DRAINING && now_unix_ms < drain_deadline_unix_ms;
  }
};

// What the routers program after a commit.
struct ProgrammedTable {
  std::vector<int32_t> table;     // backend index per slot, -1 = none
  std::vector<uint64_t> history;  // maglev_history words per slot (data-plane ids); empty = none
  std::vector<DataplaneBackend> backends;  // by index
  std::vector<int32_t> index_of_id;        // data-plane id -> backend index, -1
  int versions = 0;                        // table versions the state keeps for the VIP
  uint64_t slots_moved = 0;                // slots whose backend differs from the table before

  int IndexOfId(uint32_t id) const { return id < index_of_id.size() ? index_of_id[id] : -1; }
  // The i-th previous backend of `slot` (0 = the most recent), as an index, or -1.
  int HistoryAt(uint32_t slot, int i) const;
};

class VipAgent {
 public:
  // The state at time 0: backends 0..count-1 with `weight` each, except
  // those in `absent`, in one VIP of `table_size` slots. Error: the agent's
  // code refused it.
  static absl::StatusOr<VipAgent> Create(int count, uint32_t weight, const std::vector<int>& absent,
                                         uint32_t table_size, int64_t now_unix_ms);

  // One commit: `c` applied (as lbctl backend weight/add/del/drain/undrain
  // would), at `now_unix_ms`. Error: a change the agent would refuse (e.g.
  // adding a configured backend) or its code failed.
  absl::Status Apply(const TableChange& c, int64_t now_unix_ms);
  // The agent's drain expiry (engine_health.cc): a draining backend whose
  // deadline passed is marked evicted (a commit). Whether it was (false: not
  // draining, or its deadline is later).
  absl::StatusOr<bool> Evict(int backend, int64_t now_unix_ms);

  const ProgrammedTable& programmed() const { return programmed_; }
  const v1::State& state() const { return state_; }
  int count() const { return count_; }
  uint32_t default_weight() const { return weight_; }

  // The address of backend `i` (see above).
  static std::string AddressOf(int i);

 private:
  VipAgent(int count, uint32_t weight, uint32_t table_size);
  absl::Status Commit(v1::State next, int64_t now_unix_ms);
  v1::Vip* MutableVip(v1::State* st) const;

  int count_;
  uint32_t weight_;
  uint32_t table_size_;
  v1::VipKey key_;
  v1::State state_;
  core::Image image_;
  ProgrammedTable programmed_;
};

}  // namespace ballast::lbsim

#endif  // BALLAST_TOOLS_LBSIM_CHURN_AGENT_H_
