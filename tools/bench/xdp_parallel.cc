// bench_xdp --parallel: the new-connection and table-full cases on every
// CPU at once (xdp_harness.h), beside the same cases on one CPU alone.
//
// One thread per CPU, each pinned to its CPU, start together (a barrier)
// and run BPF_PROG_TEST_RUN on the same programs and maps; the wrapper's
// per-CPU 5-tuple counter starts at a different 2^24 on each CPU, so the
// CPUs never send the same tuple. Each thread's figure is its own CPU time
// per packet, corrected like the one-CPU cases: (wrapper -> lb) -
// (wrapper -> reference) + reference, all three measured with every CPU
// busy. What it shows is what the CPUs cost each other: the shared LRU's
// locks and the cache lines of the maps both CPUs write.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sched.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ballast_abi.h"
#include "tools/bench/xdp_harness.h"

namespace ballast::bench {
namespace {

void PinThisThread(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0)
    Die(absl::StrCat("sched_setaffinity(", cpu, "): ", strerror(errno)));
}

// Sets CPU c's tuple counter to (base + c) << 24 for every possible CPU c.
void SpreadVaryCounter(const Harness& h, uint32_t base) {
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) Die("libbpf_num_possible_cpus failed");
  std::vector<uint64_t> v(static_cast<size_t>(ncpus));  // per-CPU values: 8-byte slots
  for (int c = 0; c < ncpus; ++c) v[static_cast<size_t>(c)] = (base + uint32_t(c)) << 24;
  const uint32_t key = 0;
  if (bpf_map_update_elem(bpf_map__fd(h.wrapper->maps.bench_counter), &key, v.data(), BPF_ANY) != 0)
    Die(absl::StrCat("bench_counter: ", strerror(errno)));
}

// `repeat` runs of `prog_fd` on each of `cpus` at once; one Timed per CPU.
std::vector<Timed> AtOnce(int prog_fd, const Bytes& frame, uint32_t repeat,
                          const std::vector<int>& cpus) {
  std::vector<Timed> out(cpus.size());
  std::barrier start(static_cast<std::ptrdiff_t>(cpus.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); ++i) {
    threads.emplace_back([&, i] {
      PinThisThread(cpus[i]);
      start.arrive_and_wait();
      out[i] = TimedRun(prog_fd, frame, repeat);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Timed& t : out)
    if (t.result.action != XDP_TX)
      Die(absl::StrCat("a concurrent run returned ", pktgen::XdpActionName(t.result.action)));
  return out;
}

uint64_t Handshakes(Dataplane& dp) {
  uint64_t n = 0;
  for (int i = 1; i <= kBackends; ++i) n += dp.BackendStats(Id4(i))->handshake_count;
  return n;
}

struct Row {
  std::string name;
  double one = 1e18;            // one CPU alone, best of the rounds
  std::vector<double> per_cpu;  // every CPU at once, best of the rounds, per CPU
};

// A new TCP connection (xdp_newconn.cc): kConns SYNs on each CPU at once,
// then their kConns completing ACKs at once. Returns per CPU SYN + ACK;
// adds to `lost` the ACKs that found no slot.
std::vector<double> NewConnections(const Harness& h, const Bytes& syn, const Bytes& ack,
                                   uint32_t repeat, const std::vector<int>& cpus, uint64_t* lost) {
  constexpr uint32_t kConns = 4096;
  std::unique_ptr<Dataplane> dp = OpenLb(BALLAST_DEFAULT_FLOWS);
  const std::vector<Timed> r = AtOnce(h.reflect_fd(), syn, repeat, cpus);
  ArmWrapper(h, syn, true, h.reflect_fd());
  SpreadVaryCounter(h, 1);
  const std::vector<Timed> wr = AtOnce(h.wrapper_fd(), syn, kConns, cpus);
  const uint64_t hs0 = Handshakes(*dp);
  ArmWrapper(h, syn, true, dp->prog_fd());
  SpreadVaryCounter(h, 1);
  const std::vector<Timed> s = AtOnce(h.wrapper_fd(), syn, kConns, cpus);
  ArmWrapper(h, ack, true, dp->prog_fd());
  SpreadVaryCounter(h, 1);
  const std::vector<Timed> a = AtOnce(h.wrapper_fd(), ack, kConns, cpus);
  // A set holds 4 handshakes: with every CPU's connections in flight at
  // once a few sets get a fifth and give up their oldest slot, whose ACK is
  // then adopted (forwarded all the same, to the table's pick). Counted;
  // many would be an error.
  const uint64_t want = uint64_t{kConns} * cpus.size(), got = Handshakes(*dp) - hs0;
  *lost += want - std::min(want, got);
  if (got * 100 < want * 99)
    Die(absl::StrCat(got, " of ", want, " concurrent ACKs completed a handshake (want 99%)"));
  std::vector<double> out;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const double fixed = wr[i].ns_per_pkt - r[i].ns_per_pkt;  // wrapper and a short run's cost
    out.push_back((s[i].ns_per_pkt - fixed) + (a[i].ns_per_pkt - fixed));
  }
  return out;
}

// A new 5-tuple on every packet with the flow table full: every packet (an
// ACK without a flow) inserts one and evicts one.
std::vector<double> TableFull(const Harness& h, const Bytes& ack, uint32_t repeat,
                              const std::vector<int>& cpus) {
  std::unique_ptr<Dataplane> dp = OpenLb(BALLAST_DEFAULT_FLOWS);
  ArmWrapper(h, ack, true, dp->prog_fd());
  SpreadVaryCounter(h, 0);
  auto fill = pktgen::RunXdp(h.wrapper_fd(), ack,
                             {.ingress_ifindex = 1, .repeat = BALLAST_DEFAULT_FLOWS + 4096});
  if (!fill.ok() || fill->action != XDP_TX) Die("filling the flow table failed");
  const std::vector<Timed> r = AtOnce(h.reflect_fd(), ack, repeat, cpus);
  ArmWrapper(h, ack, true, h.reflect_fd());
  SpreadVaryCounter(h, 16);
  const std::vector<Timed> wr = AtOnce(h.wrapper_fd(), ack, repeat, cpus);
  ArmWrapper(h, ack, true, dp->prog_fd());
  SpreadVaryCounter(h, 32);
  const std::vector<Timed> wl = AtOnce(h.wrapper_fd(), ack, repeat, cpus);
  std::vector<double> out;
  for (size_t i = 0; i < cpus.size(); ++i)
    out.push_back(wl[i].ns_per_pkt - (wr[i].ns_per_pkt - r[i].ns_per_pkt));
  return out;
}

}  // namespace

int Parallel(const Harness& h, const Flags& f, const std::vector<int>& cpus, const Bytes& syn,
             const Bytes& ack) {
  if (cpus.size() < 2) Die("--parallel needs at least two CPUs to run on");
  Row nc{"ipv4 new conn: syn + ack"}, tf{"ipv4 new 5-tuple, table full"};
  nc.per_cpu.assign(cpus.size(), 1e18);
  tf.per_cpu.assign(cpus.size(), 1e18);
  const uint32_t table_repeat = std::min<uint32_t>(f.repeat, 1'000'000);
  uint64_t lost_one = 0, lost_all = 0;
  for (int round = 0; round < f.rounds; ++round) {
    // Alternating: one CPU alone, then all of them, each round.
    nc.one = std::min(nc.one, NewConnections(h, syn, ack, f.repeat, {cpus[0]}, &lost_one)[0]);
    const std::vector<double> n = NewConnections(h, syn, ack, f.repeat, cpus, &lost_all);
    tf.one = std::min(tf.one, TableFull(h, ack, table_repeat, {cpus[0]})[0]);
    const std::vector<double> t = TableFull(h, ack, table_repeat, cpus);
    for (size_t i = 0; i < cpus.size(); ++i) {
      nc.per_cpu[i] = std::min(nc.per_cpu[i], n[i]);
      tf.per_cpu[i] = std::min(tf.per_cpu[i], t[i]);
    }
  }
  std::printf("bench_xdp --parallel: CPUs %s at once against CPU %d alone, best of %d rounds\n\n",
              absl::StrJoin(cpus, ",").c_str(), cpus[0], f.rounds);
  std::printf("%-32s %12s", "case", "one CPU");
  for (int c : cpus) std::printf(" %10s", absl::StrCat("CPU ", c).c_str());
  std::printf(" %8s %8s\n", "worst", "target");
  for (const Row* r : {&nc, &tf}) {
    std::printf("%-32s %9.1f ns", r->name.c_str(), r->one);
    double worst = 0;
    for (double v : r->per_cpu) {
      std::printf(" %7.1f ns", v);
      worst = std::max(worst, v);
    }
    const double ratio = worst / r->one;
    std::printf(" %7.2fx %8s %s\n", ratio, "<= 1.25", ratio <= 1.25 ? "ok" : "MISSED");
  }
  std::printf(
      "\nns/pkt per CPU = (wrapper -> lb) - (wrapper -> reference) + reference, each measured\n"
      "with every CPU running; new conn: 4,096 connections per CPU (SYNs, then their ACKs).\n");
  std::printf(
      "handshake slots lost (the ACK adopted instead): %lu of %lu alone, %lu of %lu at once\n",
      static_cast<unsigned long>(lost_one), 4096ul * static_cast<unsigned long>(f.rounds),
      static_cast<unsigned long>(lost_all),
      4096ul * cpus.size() * static_cast<unsigned long>(f.rounds));
  return 0;
}

}  // namespace ballast::bench
