// bench_xdp's harness: the lab addresses, the data plane it benchmarks,
// the frame-restoring wrapper and the reference program, timed runs, and
// the new-connection case (xdp_newconn.cc). One benchmark thread; nothing
// here is thread-safe.
#ifndef BALLAST_TOOLS_BENCH_XDP_HARNESS_H_
#define BALLAST_TOOLS_BENCH_XDP_HARNESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "agent/dataplane/dataplane.h"
#include "bench_restore.skel.h"
#include "tests/lib/packet.h"
#include "tests/lib/xdp_run.h"
#include "xdp_reflect.skel.h"

namespace ballast::bench {

using dataplane::Dataplane;
using pktgen::Addr;
using pktgen::Bytes;
using pktgen::Mac;

// Lab addresses (198.18.0.0/15, 2001:db8::/32); nothing leaves the process.
inline const Addr kVip4 = Addr::Parse("198.18.0.10");
inline const Addr kVip6 = Addr::Parse("2001:db8::10");
inline const Addr kClient4 = Addr::Parse("198.18.100.1");
inline const Addr kClient6 = Addr::Parse("2001:db8:100::1");
inline const Mac kTorMac = Mac::Parse("02:00:00:00:00:aa");
inline const Mac kRouterMac = Mac::Parse("02:00:00:00:00:01");
inline constexpr int kBackends = 10;
inline constexpr uint32_t kVipId4 = 1, kVipId6 = 2;

struct Flags {
  uint32_t repeat = 1000000;
  int rounds = 5;
  int cpu = -1;  // -1: the last CPU we may run on
  bool json = false;
  std::string only;         // run only cases whose name contains this
  int second_chance = 0;    // --second-chance N: only the second-chance costs, N runs each
  std::string src4_prefix;  // --src4-prefix P: per-flow IPv4 outer sources from P
  bool parallel = false;    // --parallel: only the every-CPU-at-once cases (xdp_parallel.cc)
  bool gue = false;         // --gue: the VIPs encapsulate as GUE (IP in UDP)
};

[[noreturn]] void Die(const std::string& what);
void Check(const absl::Status& s, const std::string& what);
IpAddress ToIp(const Addr& a);
Addr Backend4(int i);
Addr Backend6(int i);
// Data-plane backend ids of Backend4(i) and Backend6(i).
uint32_t Id4(int i);
uint32_t Id6(int i);
// The backend id whose address is `a`, or 0 (BALLAST_INVALID_ID) for none.
uint32_t BackendIdAt(const Addr& a);

// A data plane loaded for benchmarking: nothing pinned, two VIPs with
// Maglev tables (M = 65537) over kBackends backends each, and next hops
// pre-filled on ifindex 1 (the test run's ingress device: XDP_TX), so the
// figures do not depend on this host's routes.
std::unique_ptr<Dataplane> OpenLb(uint32_t flow_capacity);
// Every later OpenLb() sets this per-flow IPv4 outer source prefix
// (Settings::src4_prefix; "" = none, the default).
void SetSourcePrefix(const std::string& prefix);
// Every later OpenLb() makes both VIPs GUE (VipOptions::gue) or not.
void SetGue(bool on);

// The restore wrapper and the reference program, loaded once.
struct Harness {
  xdp_reflect* reflect = nullptr;
  bench_restore* wrapper = nullptr;
  ~Harness() {
    if (wrapper) bench_restore__destroy(wrapper);
    if (reflect) xdp_reflect__destroy(reflect);
  }
  int reflect_fd() const { return bpf_program__fd(reflect->progs.xdp_reflect); }
  int wrapper_fd() const { return bpf_program__fd(wrapper->progs.bench_restore); }
};

// Mirrors struct bench_frame of bpf/bench_restore.bpf.c.
struct BenchFrame {
  uint32_t len, vary, port_off, addr_off, ip_csum_off, l4_csum_off, seq_off;
  uint8_t data[256];
};

// Installs `frame` as the wrapper's original and `target_fd` as its target.
void ArmWrapper(const Harness& h, const Bytes& frame, bool vary, int target_fd);
// Sets the wrapper's per-CPU 5-tuple counter back to 0 on every CPU, so the
// next varied run sends the same tuples as the last one from the start.
void ResetVaryCounter(const Harness& h);

struct Timed {
  double ns_per_pkt;
  pktgen::XdpResult result;
};

// CPU time of this thread, ns. Unlike wall-clock time it does not count
// the time other tasks ran on our CPU while the syscall was preempted.
double ThreadCpuNs();
Timed TimedRun(int prog_fd, const Bytes& frame, uint32_t repeat);

struct Result {
  std::string name;
  double lb_ns = 0, ref_ns = 0, restore_ns = 0, gross_ratio = 0, ratio = 0, target = 0;
  double ratio_median = 0;  // median over rounds of each round's own ratio
  bool wrapped = false;
  std::string error;  // non-empty: the case failed its checks
};

// The new-connection case (xdp_newconn.cc): the completing ACK alone, and
// SYN + ACK.
std::pair<Result, Result> RunNewConnection(const Harness& h, const Flags& f, const Bytes& syn,
                                           const Bytes& ack);

// --parallel (xdp_parallel.cc): the new-connection and table-full cases on
// every CPU of `cpus` at once, beside cpus[0] alone; prints the table.
int Parallel(const Harness& h, const Flags& f, const std::vector<int>& cpus, const Bytes& syn,
             const Bytes& ack);

}  // namespace ballast::bench

#endif  // BALLAST_TOOLS_BENCH_XDP_HARNESS_H_
