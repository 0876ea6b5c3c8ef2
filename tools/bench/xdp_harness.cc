#include "tools/bench/xdp_harness.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/maglev/maglev.h"
#include "ballast_abi.h"

namespace ballast::bench {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_xdp: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

IpAddress ToIp(const Addr& a) {
  return a.family == 4 ? IpAddress::V4(a.b.data()) : IpAddress::V6(a.b.data());
}

Addr Backend4(int i) { return Addr::Parse("198.18.1." + std::to_string(i)); }
Addr Backend6(int i) { return Addr::Parse("2001:db8:1::" + std::to_string(i)); }
uint32_t Id4(int i) { return static_cast<uint32_t>(i); }
uint32_t Id6(int i) { return static_cast<uint32_t>(100 + i); }

uint32_t BackendIdAt(const Addr& a) {
  for (int i = 1; i <= kBackends; ++i) {
    if (a == Backend4(i)) return Id4(i);
    if (a == Backend6(i)) return Id6(i);
  }
  return BALLAST_INVALID_ID;
}

namespace {
std::optional<IpPrefix> source_prefix;
bool gue = false;
}  // namespace

void SetGue(bool on) { gue = on; }

void SetSourcePrefix(const std::string& prefix) {
  if (prefix.empty()) {
    source_prefix.reset();
    return;
  }
  auto p = IpPrefix::Parse(prefix, /*strict=*/true);
  if (!p.ok()) Die("--src4-prefix: " + std::string(p.status().message()));
  source_prefix = *p;
}

std::unique_ptr<Dataplane> OpenLb(uint32_t flow_capacity) {
  dataplane::Options o;
  o.pin_dir = "";
  o.flow_capacity = flow_capacity;
  auto dp = Dataplane::Open(o);
  if (!dp.ok()) Die("loading the lb program (needs root): " + dp.status().ToString());
  dataplane::Settings s;
  s.src4 = ToIp(Addr::Parse("198.18.0.1"));
  s.src6 = ToIp(Addr::Parse("2001:db8::1"));
  s.src4_prefix = source_prefix;
  Check((*dp)->SetSettings(s), "settings");
  const int ncpu = libbpf_num_possible_cpus();
  std::vector<maglev::Backend> b4, b6;
  for (int i = 1; i <= kBackends; ++i) {
    const uint32_t id4 = Id4(i), id6 = Id6(i);
    Check((*dp)->SetBackend(id4, ToIp(Backend4(i)), BALLAST_BACKEND_ACTIVE), "backend");
    Check((*dp)->SetBackend(id6, ToIp(Backend6(i)), BALLAST_BACKEND_ACTIVE), "backend");
    b4.push_back({id4, Backend4(i).ToString(), 100});
    b6.push_back({id6, Backend6(i).ToString(), 100});
    for (uint32_t id : {id4, id6}) {
      ballast_nexthop nh;
      std::memset(&nh, 0, sizeof nh);
      const Mac sm = Mac::Parse("02:00:00:00:01:01"), dm = Mac::Parse("02:00:00:00:02:02");
      std::memcpy(nh.smac, sm.b.data(), 6);
      std::memcpy(nh.dmac, dm.b.data(), 6);
      nh.ifindex = 1;
      nh.mtu = 1500;
      nh.expires_ns = Dataplane::MonotonicNowNs() + 24ull * 3600 * 1000000000ull;
      std::vector<ballast_nexthop> v(static_cast<size_t>(ncpu), nh);
      if (bpf_map_update_elem((*dp)->map_fd("nexthops"), &id, v.data(), BPF_ANY) != 0)
        Die(absl::StrCat("writing nexthops[", id, "]: ", strerror(errno)));
    }
  }
  Check((*dp)->UpsertVip({ToIp(kVip4), 80, IPPROTO_TCP}, kVipId4, {.gue = gue}), "vip");
  Check((*dp)->UpsertVip({ToIp(kVip6), 80, IPPROTO_TCP}, kVipId6, {.gue = gue}), "vip");
  auto t4 = maglev::BuildTable(b4, BALLAST_DEFAULT_TABLE_SIZE);
  auto t6 = maglev::BuildTable(b6, BALLAST_DEFAULT_TABLE_SIZE);
  Check(t4.status(), "maglev");
  Check(t6.status(), "maglev");
  Check((*dp)->SetTable(kVipId4, *t4), "table");
  Check((*dp)->SetTable(kVipId6, *t6), "table");
  return *std::move(dp);
}

void ArmWrapper(const Harness& h, const Bytes& frame, bool vary, int target_fd) {
  BenchFrame bf;
  std::memset(&bf, 0, sizeof bf);
  if (frame.size() > sizeof bf.data) Die("bench frame larger than 256 bytes");
  bf.len = static_cast<uint32_t>(frame.size());
  bf.vary = vary ? 1 : 0;
  const bool v4 = pktgen::GetBe16(&frame[12]) == pktgen::kEthIp4;
  const uint32_t l4 = v4 ? 14 + 20 : 14 + 40;
  bf.port_off = l4;                      // TCP source port
  bf.addr_off = v4 ? 14 + 14 : 14 + 22;  // last 16 bits of the source address
  bf.ip_csum_off = v4 ? 14 + 10 : 0;     // IPv4 header checksum
  bf.l4_csum_off = l4 + 16;              // TCP checksum
  bf.seq_off = l4 + 4;                   // the high half of the TCP sequence number
  std::memcpy(bf.data, frame.data(), frame.size());
  const uint32_t zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(h.wrapper->maps.bench_frame), &zero, &bf, BPF_ANY) != 0)
    Die(absl::StrCat("bench_frame: ", strerror(errno)));
  if (bpf_map_update_elem(bpf_map__fd(h.wrapper->maps.bench_target), &zero, &target_fd, BPF_ANY) !=
      0)
    Die(absl::StrCat("bench_target: ", strerror(errno)));
}

void ResetVaryCounter(const Harness& h) {
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) Die("libbpf_num_possible_cpus failed");
  std::vector<uint64_t> zeros(static_cast<size_t>(ncpus), 0);  // per-CPU values: 8-byte slots
  const uint32_t key = 0;
  if (bpf_map_update_elem(bpf_map__fd(h.wrapper->maps.bench_counter), &key, zeros.data(),
                          BPF_ANY) != 0)
    Die(absl::StrCat("bench_counter: ", strerror(errno)));
}

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

Timed TimedRun(int prog_fd, const Bytes& frame, uint32_t repeat) {
  const double t0 = ThreadCpuNs();
  auto r = pktgen::RunXdp(prog_fd, frame, {.ingress_ifindex = 1, .repeat = repeat});
  const double t1 = ThreadCpuNs();
  if (!r.ok()) Die(r.status().ToString());
  if (getenv("BENCH_XDP_DEBUG"))
    std::fprintf(stderr, "prog %d: cpu %.2f ns/pkt, kernel %u ns/pkt\n", prog_fd,
                 (t1 - t0) / repeat, r->duration_ns);
  return {(t1 - t0) / repeat, *std::move(r)};
}

}  // namespace ballast::bench
