// ProbeScheduler: runs the probes of registered targets, each at its
// interval ± jitter with its timeout, on a bounded pool of worker threads,
// and hands every result to a callback with the target's identity.
//
// A target is one (VIP, port, backend) with its ProbeSpec, registered under
// an id the caller chooses (e.g. "198.18.0.10:80/tcp 198.18.1.2"). Its
// probe goes:
//   - via the VIP (default): to VIP:port with SO_MARK = mark_base |
//     backend_id, which a ProbeForwarder (forwarder.h) programmed for the
//     backend turns into the data plane's encapsulation to that backend;
//   - direct (spec.direct): to the backend's own address, no mark.
// spec.port, when set, replaces the VIP's port.
//
// Timing: the first probe of a target starts at a random point of its first
// interval (spread_start) or at once; each later one starts interval ±
// uniform(jitter) after the previous start. A target never has two probes in
// flight: if one is still running when the next is due, the next starts as
// soon as it ends. Each probe's deadline is start + timeout_ms. When every
// worker is busy, due probes wait in order of due time. Rounds that fell due
// while this process was paused (watch_pauses) are skipped, not run on
// waking: each target keeps its phase, so a pause does not line up every
// probe of the agent.
//
// Thread-safety: every public method is thread-safe. The callback runs on a
// worker thread, never two at once for the same target, without any
// scheduler lock held; it may call Add/Update/Remove (also for its own
// target) but not Shutdown() or the destructor. After Remove(id) or
// Update(id) returns, no result of the removed/replaced probe is delivered
// (a result being delivered at that moment is waited for, except from the
// callback itself).
//
// Lifetime: Shutdown() (also run by the destructor) stops dispatching, waits
// for running probes to end (each is bounded by its timeout) and joins the
// threads; results that finish after Shutdown() began are dropped.
//
// Pauses: a probe that overlaps a pause of this process (it was stopped or
// got no CPU for longer than PauseWatch's threshold) is delivered with
// `discarded` set and its detail saying so.
#ifndef BALLAST_AGENT_PROBES_SCHEDULER_H_
#define BALLAST_AGENT_PROBES_SCHEDULER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/base/ip_address.h"
#include "agent/probes/pause_watch.h"
#include "agent/probes/probe.h"
#include "ballast/v1/config.pb.h"
#include "ballast_probe_abi.h"

namespace ballast::probes {

struct ProbeTarget {
  IpAddress vip;
  uint16_t port = 0;  // the VIP's port (spec.port overrides it for the probe)
  IpAddress backend;
  uint32_t backend_id = 0;  // data-plane backend id: the mark's low bits
  uint16_t gue_port = 0;    // the VIP is mode GUE: forwarded in GUE to this port; 0 = IP-in-IP
  v1::ProbeSpec spec;
};

// Where a target's probe connects (see the file comment).
Endpoint EndpointOf(const ProbeTarget& target, uint32_t mark_base);

// The first start after `now` of a schedule every `interval` through `due`:
// the rounds missed are skipped, the phase is kept. Requires due <= now and
// interval > 0.
Clock::time_point NextStartAfter(Clock::time_point due, Clock::duration interval,
                                 Clock::time_point now);

class ProbeScheduler {
 public:
  using Callback =
      std::function<void(const std::string& id, const ProbeTarget& target, const ProbeResult&)>;

  struct Options {
    int workers = 4;  // 1..64 probes in flight at once
    uint32_t mark_base = BALLAST_PROBE_MARK_BASE;
    bool spread_start = true;  // first probe at a random point of the first interval
    // Results of probes that overlap a pause of this process are delivered
    // with `discarded` set (pause_watch.h).
    bool watch_pauses = true;
  };

  ProbeScheduler(Options options, Callback callback);
  ~ProbeScheduler();
  ProbeScheduler(const ProbeScheduler&) = delete;
  ProbeScheduler& operator=(const ProbeScheduler&) = delete;

  // Registers a target. InvalidArgument from ValidateProbeSpec (path
  // "probe"), AlreadyExists for a known id, FailedPrecondition after
  // Shutdown().
  absl::Status Add(const std::string& id, const ProbeTarget& target);
  // Replaces a target's definition (the schedule restarts). NotFound for an
  // unknown id.
  absl::Status Update(const std::string& id, const ProbeTarget& target);
  // Forgets a target. NotFound for an unknown id.
  absl::Status Remove(const std::string& id);
  std::vector<std::string> Ids() const;

  void Shutdown();

 private:
  struct Target {
    ProbeTarget def;
    std::shared_ptr<const Prober> prober;
    uint64_t generation = 0;
    Clock::time_point due;
    bool in_flight = false;             // queued or running
    uint64_t in_flight_generation = 0;  // generation of the job in flight
    bool delivering = false;            // callback running
    std::thread::id delivering_thread;
  };
  struct Job {
    std::string id;
    uint64_t generation;
    ProbeTarget def;
    std::shared_ptr<const Prober> prober;
  };

  void DispatchLoop();
  void WorkerLoop();
  Clock::duration NextGap(const v1::ProbeSpec& spec);   // interval ± jitter; mu_ held
  Clock::duration FirstGap(const v1::ProbeSpec& spec);  // mu_ held
  // The target fell due while this process was paused (PauseWatch): every
  // target that did is late at once, and running them all on waking would
  // put their probes side by side, then and (without jitter) ever after.
  bool FellDueInPause(const Target& t, Clock::time_point now) const;  // mu_ held
  void WaitNotDelivering(std::unique_lock<std::mutex>& lock, const std::string& id);

  const Options options_;
  const Callback callback_;
  std::unique_ptr<PauseWatch> pause_watch_;  // set when options_.watch_pauses

  mutable std::mutex mu_;
  std::condition_variable dispatch_cv_;  // targets changed, or stop
  std::condition_variable work_cv_;      // jobs queued, or stop
  std::condition_variable deliver_cv_;   // a delivery ended
  std::map<std::string, Target> targets_;
  std::deque<Job> jobs_;
  uint64_t next_generation_ = 1;
  bool stop_ = false;
  std::mt19937_64 rng_;
  std::thread dispatcher_;
  std::vector<std::thread> workers_;
};

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_SCHEDULER_H_
