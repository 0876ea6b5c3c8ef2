// lbsim's simulation (sim.h's Run): one discrete-event run of a scenario,
// with traffic, faults, probes and the agent's own health logic, Maglev
// builder and quorum gate. Internal to tools/lbsim: sim.cc (set-up, probes,
// evaluations, the event loop), sim_traffic.cc (connections and SYNs) and
// sim_faults.cc (fault steps). Single-threaded.
#ifndef BALLAST_TOOLS_LBSIM_SIM_ENGINE_H_
#define BALLAST_TOOLS_LBSIM_SIM_ENGINE_H_

#include <cstdint>
#include <queue>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/health/action.h"
#include "agent/health/machine.h"
#include "tools/lbsim/rng.h"
#include "tools/lbsim/sim.h"

namespace ballast::lbsim::internal {

using health::ActionKind;

constexpr int64_t kNs = 1000000000;
// A handshake under way is forgotten this long after its latest SYN (the
// data plane's syn_idle default); a later SYN then counts as a new flow.
constexpr int64_t kSynIdleNs = 5 * kNs;
// Simulated time 0 as the health logic sees it (any fixed instant works).
inline const absl::Time kEpoch = absl::FromUnixSeconds(1800000000);

inline int64_t Ns(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return INT64_MAX / 4;
  return absl::ToInt64Nanoseconds(d);
}
inline int64_t SecondsToNs(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

enum class Ev : uint8_t {
  kArrival = 0,     // a new logical connection
  kSynRetransmit,   // a = conn, b = gen
  kConnectTimeout,  // a = conn, b = gen
  kResponse,        // a = conn, b = gen
  kRequestTimeout,  // a = conn, b = gen
  kClose,           // a = conn, b = gen
  kRetry,           // a = conn, b = gen
  kProbe,           // a = observer * backends + backend
  kProbeOk,         // a = as kProbe, b = latency in microseconds
  kProbeFail,       // a = as kProbe
  kEval,
  kFault,       // a = index into the fault schedule
  kHangCheck,   // a = backend, b = hang epoch
  kDrainCheck,  // a = backend, b = drain epoch
};

struct Event {
  int64_t t;
  uint64_t seq;
  uint32_t a;
  uint32_t b;
  Ev type;
};
struct Later {
  bool operator()(const Event& x, const Event& y) const {
    return x.t != y.t ? x.t > y.t : x.seq > y.seq;
  }
};

enum class ConnState : uint8_t { kFree = 0, kSynSent, kAwaitResponse, kOpen, kRetryWait };
enum class Failure : uint8_t { kNew = 0, kRequest };

struct Conn {
  FlowRng rng;  // this connection's own draws
  uint64_t hash = 0;
  int64_t logical_start = 0;
  int64_t first_syn = 0;
  int64_t flow_start = 0;
  int64_t last_syn = 0;
  int64_t req_start = 0;
  int32_t backend = -1;
  uint32_t gen = 0;
  uint32_t live_pos = 0;
  uint8_t cls = 0;
  uint8_t syn_count = 0;
  uint8_t retries_left = 0;
  uint8_t router = 0;
  ConnState state = ConnState::kFree;
  bool measured = false;
  bool waiting = false;     // its request is stuck on a hung server
  bool remapped = false;    // counted in RunResult::remapped
  bool hit_faulty = false;  // counted in RunResult::hit_faulty
  // Its backend counted it as a new flow (the data plane's
  // BALLAST_HANDSHAKE_F_COUNTED): at its first retransmitted SYN or at
  // the completing ACK, never for a SYN alone.
  bool counted = false;
};

// One step of the fault schedule.
struct FaultStep {
  int64_t t;
  int backend;
  int fault;  // index into Scenario::faults
  bool start;
};

struct BackendSim {
  std::string key;
  int crash_refuse = 0;
  int crash_blackhole = 0;
  int hang = 0;
  int draining = 0;
  int bad = 0;  // active faults of its own that should steer traffic away
  uint32_t hang_epoch = 0;
  uint32_t drain_epoch = 0;
  std::vector<std::pair<int, std::pair<double, double>>> slow;  // fault -> (factor, loss)
  double factor = 1.0;
  double loss = 0.0;
  std::vector<int> blind;      // per observer
  std::vector<uint32_t> live;  // connections past their handshake
  uint32_t weight = 0;         // in the current table
  bool out = false;            // quorum: out of service
  bool split = false;          // quorum: in a split-view episode
  bool onset_open = false;
  bool onset_counted = false;
  bool steered = false;
  int64_t onset_t = 0;
  uint32_t onset_weight = 0;
  int timeline = -1;  // index into RunResult::timelines, or -1
};

struct ProbeAccum {
  health::ProbeSummary summary;
  bool has = false;
};

class Simulation {
 public:
  explicit Simulation(const Scenario& sc)
      : sc_(sc),
        traffic_rng_(StreamSeed(sc.seed, 1)),
        probe_rng_(StreamSeed(sc.seed, 2)),
        end_(Ns(sc.duration)),
        warmup_(Ns(sc.warmup)),
        rtt_(Ns(sc.rtt)),
        nb_(sc.backends),
        no_(sc.observers) {}

  absl::StatusOr<RunResult> Run();

 private:
  void Push(int64_t t, Ev type, uint32_t a = 0, uint32_t b = 0) {
    events_.push(Event{t, seq_++, a, b, type});
  }
  bool Current(const Event& e) const {
    const Conn& c = conns_[e.a];
    return c.state != ConnState::kFree && c.gen == e.b;
  }

  // Setup.
  absl::Status BuildFaultSchedule();
  void SetUpTimelines();

  // Traffic.
  void OnArrival(int64_t t);
  void StartAttempt(uint32_t ci, int64_t t);
  void SendSyn(uint32_t ci, int64_t t, bool first);
  void SynLost(uint32_t ci, int64_t t);
  void OnResponse(uint32_t ci, int64_t t);
  void OnRequestTimeout(uint32_t ci, int64_t t);
  void OnClose(uint32_t ci);
  void AttemptFailed(uint32_t ci, int64_t t, Failure why);
  void Broken(uint32_t ci, bool drain);
  void Succeed(uint32_t ci);
  void Free(uint32_t ci);
  uint32_t NewConn();
  void AddLive(uint32_t ci, int b);
  void RemoveLive(uint32_t ci);
  int Pick(uint64_t hash) const { return table_.empty() ? -1 : table_[hash % sc_.table_size]; }
  // Where a SYN goes after `last` did not take it, `first` being the
  // table's pick (bpf/lib/conntrack.h maglev_next_choice): the second and
  // third choices are the first two other backends at the table's slots
  // ballast_choice_hash(hash, seed) for seeds 1..BALLAST_CHOICE_SEEDS (the
  // data plane's own function); after first the second, after the second
  // the third, else first.
  int NextChoice(uint64_t hash, int first, int last) const;
  int64_t ServiceTime(Conn& c, const BackendSim& b);

  // Faults.
  void OnFault(const FaultStep& s, int64_t t);
  void Recompute(BackendSim& b);
  void BreakAll(int bi, int64_t t, bool drain);
  void StartHang(int bi, int64_t t);
  void EndHang(int bi, int64_t t);
  void UpdateOnset(int bi, int64_t t, bool was_bad);

  // Health.
  void OnProbe(uint32_t slot, int64_t t);
  void OnEval(int64_t t);
  absl::Status Program(const std::vector<uint32_t>& weights, int64_t t);

  const Scenario& sc_;
  Rng traffic_rng_;
  Rng probe_rng_;
  const int64_t end_;
  const int64_t warmup_;
  const int64_t rtt_;
  const int nb_;
  const int no_;

  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t seq_ = 0;
  std::vector<Conn> conns_;
  std::vector<uint32_t> free_;
  std::vector<BackendSim> backends_;
  std::vector<FaultStep> schedule_;
  std::vector<int32_t> table_;  // backend index per slot, -1 = none
  std::vector<double> class_cdf_;

  // Per observer (router): counters and probes per backend; the machine.
  std::vector<std::vector<health::CounterSnapshot>> counters_;
  std::vector<std::vector<ProbeAccum>> probes_;
  std::vector<health::PoolState> states_;
  std::vector<health::BackendInput> input_template_;

  RunResult r_;
  absl::Status error_;
};

}  // namespace ballast::lbsim::internal

#endif  // BALLAST_TOOLS_LBSIM_SIM_ENGINE_H_
