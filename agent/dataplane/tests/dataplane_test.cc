// Tests of the data-plane library against the real kernel: loading, pinning
// and adoption, Maglev table swaps, XDP attach/detach on a veth pair in a
// network namespace the test creates. Needs root; without it every test
// fails with the reason. The decap program's tests are in decap_test.cc.
//
// Cleanup is RAII (it runs when a REQUIRE fails): the namespace (and with it
// the veths and their XDP programs) is deleted, private bpffs mounts are
// unmounted (which drops every pin in them).
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <string>
#include <vector>

#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/decap.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/verdict.h"
#include "agent/dataplane/xdp_attach.h"
#include "agent/dataplane/tests/test_util.h"
#include "tests/lib/netns.h"

using ballast::IpAddress;
using namespace ballast::dataplane;
using namespace ballast::dataplane::testing;

TEST_CASE("IpAddress parses and formats IPv4 and IPv6", "[dataplane][ip]") {
  const std::pair<const char*, const char*> round_trips[] = {
      {"198.18.0.1", "198.18.0.1"},
      {"0.0.0.0", "0.0.0.0"},
      {"2001:db8::1", "2001:db8::1"},
      {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
      {"[2001:db8::10]", "2001:db8::10"},
      {"::", "::"},
      {"::ffff:198.18.0.1", "::ffff:198.18.0.1"}};
  for (const auto& [in, want] : round_trips) {
    INFO(in);
    auto a = IpAddress::Parse(in);
    REQUIRE(a.ok());
    CHECK(a->ToString() == want);
    auto again = IpAddress::Parse(a->ToString());
    REQUIRE(again.ok());
    CHECK(*again == *a);
  }
  auto v4 = IpAddress::Parse("198.18.0.1");
  REQUIRE(v4.ok());
  CHECK(v4->family() == BALLAST_FAMILY_V4);
  CHECK(v4->bytes()[0] == 198);
  CHECK(v4->bytes()[3] == 1);
  for (size_t i = 4; i < 16; ++i) CHECK(v4->bytes()[i] == 0);
  auto v6 = IpAddress::Parse("2001:db8::1");
  REQUIRE(v6.ok());
  CHECK(v6->family() == BALLAST_FAMILY_V6);
  CHECK(v6->bytes()[0] == 0x20);
  CHECK(v6->bytes()[15] == 1);
  CHECK(*v4 < *v6);  // family orders first
  CHECK(IpAddress::Zero6().ToString() == "::");
  CHECK(IpAddress().ToString() == "0.0.0.0");

  // Classes: multicast, loopback, IPv4 written as IPv6 (which is neither:
  // callers refuse it first).
  struct Class {
    const char* text;
    bool multicast, loopback, v4_mapped;
  };
  for (const Class& c : std::initializer_list<Class>{{"224.0.0.5", true, false, false},
                                                     {"239.255.255.255", true, false, false},
                                                     {"ff02::1", true, false, false},
                                                     {"223.255.255.255", false, false, false},
                                                     {"fe80::1", false, false, false},
                                                     {"127.0.0.1", false, true, false},
                                                     {"127.255.0.9", false, true, false},
                                                     {"::1", false, true, false},
                                                     {"::2", false, false, false},
                                                     {"1::1", false, false, false},
                                                     {"::ffff:198.18.0.1", false, false, true},
                                                     {"::ffff:127.0.0.1", false, false, true},
                                                     {"198.18.0.1", false, false, false},
                                                     {"::fffe:198.18.0.1", false, false, false},
                                                     {"1::ffff:198.18.0.1", false, false, false}}) {
    INFO(c.text);
    auto a = IpAddress::Parse(c.text);
    REQUIRE(a.ok());
    CHECK(a->is_multicast() == c.multicast);
    CHECK(a->is_loopback() == c.loopback);
    CHECK(a->is_v4_mapped() == c.v4_mapped);
  }

  for (const char* bad : {"", "198.18.0", "198.18.0.256", "198.18.0.1 ", " 198.18.0.1",
                          "2001:db8:::1", "[198.18.0.1]", "fe80::1%eth0", "[2001:db8::1",
                          "2001:db8::1]", "198.18.0.1/24", "host.example"}) {
    INFO(bad);
    auto a = IpAddress::Parse(bad);
    CHECK(a.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string msg(a.status().message());
    CHECK((msg.find("not an IPv4 or IPv6") != std::string::npos ||
           msg.find("unbalanced") != std::string::npos));
  }
}

TEST_CASE("VIP keys parse and format", "[dataplane][ip]") {
  for (const char* text : {"198.18.0.10:80/tcp", "[2001:db8::10]:443/tcp", "198.18.0.10:0/udp",
                           "[2001:db8::10]:53/udp"}) {
    INFO(text);
    auto k = ParseVipKey(text);
    REQUIRE(k.ok());
    CHECK(VipKeyString(*k) == text);
  }
  auto k = ParseVipKey("198.18.0.10:8080/udp");
  REQUIRE(k.ok());
  CHECK(k->port == 8080);
  CHECK(k->proto == IPPROTO_UDP);
  for (const char* bad :
       {"198.18.0.10:80", "198.18.0.10/tcp", "2001:db8::10:443/tcp", "198.18.0.10:65536/tcp",
        "198.18.0.10:-1/tcp", "198.18.0.10:80/sctp", "0.0.0.0:80/tcp", "198.18.0.10:8x/tcp"}) {
    INFO(bad);
    CHECK(ParseVipKey(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("every verdict has a distinct snake_case name", "[dataplane]") {
  std::set<std::string> names;
  for (int v = 0; v < BALLAST_V_MAX; ++v) {
    const std::string n(VerdictName(static_cast<ballast_verdict>(v)));
    INFO(v << " -> " << n);
    CHECK(n != "unknown");
    CHECK(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos);
    names.insert(n);
  }
  CHECK(names.size() == BALLAST_V_MAX);
  CHECK(VerdictName(BALLAST_V_PASS_NOT_VIP) == "pass_not_vip");
  CHECK(VerdictName(BALLAST_V_MAX) == "unknown");
  for (int v = 0; v < BALLAST_DECAP_V_MAX; ++v) {
    CHECK(DecapVerdictName(static_cast<ballast_decap_verdict>(v)) != "unknown");
  }
}

// Calls the print function libbpf has now, as libbpf would.
int LibbpfPrint(const char* fmt, ...) {
  const libbpf_print_fn_t fn = libbpf_set_print(nullptr);
  libbpf_set_print(fn);
  va_list ap;
  va_start(ap, fmt);
  const int n = fn != nullptr ? fn(LIBBPF_WARN, fmt, ap) : -1;
  va_end(ap);
  return n;
}

TEST_CASE("a failed load names the verifier or the privileges and keeps the log's end",
          "[dataplane]") {
  // A verifier log reaches the print callback as one message of many
  // kilobytes; the reason is its last line.
  const std::string body(6000, 'x');
  std::string log;
  {
    CaptureLibLogs capture(&log);
    REQUIRE(LibbpfPrint("-- BEGIN PROG LOAD LOG --\n%s\nR3 pointer arithmetic prohibited\n-- END "
                        "PROG LOAD LOG --\n",
                        body.c_str()) > 6000);
  }
  REQUIRE(log.size() > 6000);
  CHECK_THAT(log, Catch::EndsWith("R3 pointer arithmetic prohibited\n-- END PROG LOAD LOG --\n"));

  const absl::Status rejected = LoadFailure(-EACCES, "loading the x program", log);
  CHECK(rejected.code() == absl::StatusCode::kPermissionDenied);
  const std::string m(rejected.message());
  CHECK_THAT(m, Catch::StartsWith("loading the x program: Permission denied; the verifier "
                                  "rejected the program (its log is below)\nlibbpf log:\n..."));
  CHECK_THAT(m, Catch::Contains("R3 pointer arithmetic prohibited"));
  CHECK(m.size() < 4200);  // the end of the log, not all of it
  CHECK_THAT(std::string(LoadFailure(-EPERM, "loading the x program", "").message()),
             Catch::Equals("loading the x program: Operation not permitted; loading BPF programs "
                           "needs root (CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON)"));
}

TEST_CASE("Open without pinning loads the program and its maps", "[dataplane][bpf]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  CHECK(dp->prog_fd() >= 0);
  CHECK_FALSE(dp->adopted());
  for (const char* m : kMaps) {
    INFO(m);
    CHECK(dp->map_fd(m) >= 0);
  }
  CHECK(dp->map_fd("no_such_map") == -1);
  for (const char* m : kFlowMaps) {
    INFO(m);
    auto flows_info = GetMapInfo(dp->map_fd(m));
    REQUIRE(flows_info.ok());
    // adopted_flows: 2,048 sets of BALLAST_ADOPTED_WAYS flows
    const bool sets = m == std::string_view(kAdoptedFlowsMap);
    CHECK(flows_info->max_entries == (sets ? 2048u : 4096u));
    CHECK(dp->MapCapacity(m).value_or(0) == (sets ? 8192u : 4096u));
  }
  CHECK(dp->adopted_sets() == 2048);

  // Settings: defaults round trip, validation.
  Settings s;
  s.src4 = Ip("198.18.0.1");
  s.src6 = Ip("2001:db8::1");
  REQUIRE(dp->SetSettings(s).ok());
  auto back = dp->GetSettings();
  REQUIRE(back.ok());
  CHECK(back->src4 == s.src4);
  CHECK(back->src6 == s.src6);
  CHECK(back->policy == BALLAST_POLICY_ICMP_TOO_BIG);
  CHECK(back->tcp_idle_ns == 300'000'000'000ull);
  CHECK(back->udp_idle_ns == 30'000'000'000ull);
  CHECK(back->linger_ns == 10'000'000'000ull);
  CHECK(back->syn_idle_ns == 5'000'000'000ull);
  CHECK(back->fib_ttl_ns == 1'000'000'000ull);
  Settings wrong = s;
  wrong.src4 = Ip("2001:db8::1");
  CHECK(dp->SetSettings(wrong).code() == absl::StatusCode::kInvalidArgument);
  wrong = s;
  wrong.tcp_idle_ns = 0;
  CHECK(dp->SetSettings(wrong).code() == absl::StatusCode::kInvalidArgument);

  // VIPs.
  auto vip = ParseVipKey("198.18.0.10:80/tcp");
  auto vip6 = ParseVipKey("[2001:db8::10]:443/tcp");
  REQUIRE(vip.ok());
  REQUIRE(vip6.ok());
  REQUIRE(dp->UpsertVip(*vip, 1).ok());
  REQUIRE(dp->UpsertVip(*vip6, 2, {.owner_deadline_if_new = 12345}).ok());
  REQUIRE(dp->UpsertVip(*vip, 1).ok());  // idempotent
  CHECK(dp->UpsertVip(*vip6, 1).code() == absl::StatusCode::kAlreadyExists);
  CHECK(dp->UpsertVip(*vip, 0).code() == absl::StatusCode::kInvalidArgument);
  CHECK(dp->UpsertVip(*vip, BALLAST_MAX_VIPS).code() == absl::StatusCode::kInvalidArgument);
  ballast_vip_key raw = {};
  raw.addr[0] = 198, raw.addr[1] = 18, raw.addr[2] = 0, raw.addr[3] = 10;
  raw.port = htons(80);
  raw.proto = IPPROTO_TCP;
  raw.family = BALLAST_FAMILY_V4;
  ballast_vip_meta meta = {};
  REQUIRE(bpf_map_lookup_elem(dp->map_fd("vips"), &raw, &meta) == 0);
  CHECK(meta.vip_id == 1);
  auto vips = dp->Vips();
  REQUIRE(vips.ok());
  CHECK(vips->size() == 2);
  const uint32_t table7[] = {1, 2, 1, 2, 1, 2, 0};
  REQUIRE(dp->SetTable(1, table7).ok());
  REQUIRE(dp->DeleteVip(*vip).ok());
  CHECK(dp->GetTable(1).status().code() == absl::StatusCode::kNotFound);
  CHECK(dp->DeleteVip(*vip).code() == absl::StatusCode::kNotFound);

  // Backends.
  REQUIRE(dp->SetBackend(7, Ip("198.18.1.7"), BALLAST_BACKEND_ACTIVE).ok());
  REQUIRE(dp->SetBackend(8, Ip("2001:db8:1::8"), BALLAST_BACKEND_DRAINING, 99).ok());
  CHECK(dp->SetBackend(9, Ip("198.18.1.9"), BALLAST_BACKEND_ACTIVE, 99).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(dp->SetBackend(0, Ip("198.18.1.9"), BALLAST_BACKEND_ACTIVE).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(dp->SetBackend(BALLAST_MAX_BACKENDS, Ip("198.18.1.9"), BALLAST_BACKEND_ACTIVE).code() ==
        absl::StatusCode::kInvalidArgument);
  auto backends = dp->Backends();
  REQUIRE(backends.ok());
  REQUIRE(backends->size() == 2);
  CHECK((*backends)[0].id == 7);
  CHECK((*backends)[0].addr == Ip("198.18.1.7"));
  CHECK((*backends)[1].state == BALLAST_BACKEND_DRAINING);
  CHECK((*backends)[1].drain_deadline_ns == 99);
  REQUIRE(dp->ClearBackend(8).ok());
  backends = dp->Backends();
  REQUIRE(backends.ok());
  CHECK(backends->size() == 1);

  // Counters start at zero; the flow table starts empty.
  auto verdicts = dp->Verdicts();
  REQUIRE(verdicts.ok());
  for (uint64_t v : *verdicts) CHECK(v == 0);
  auto bs = dp->BackendStats(7);
  REQUIRE(bs.ok());
  CHECK(bs->packets == 0);
  auto vs = dp->VipStats(2);
  REQUIRE(vs.ok());
  CHECK(vs->packets == 0);
  auto flows = dp->Flows(100);
  REQUIRE(flows.ok());
  CHECK(flows->empty());
  CHECK(Dataplane::MonotonicNowNs() > 0);
}

TEST_CASE("ForEachFlow and Flows read every entry of the connection table once, up to a limit",
          "[dataplane][bpf]") {
  RequireRoot();
  auto opened = OpenUnpinned(65536);
  Dataplane& dp = *opened;
  // 20,000 flows, several batches: client 198.18.x.y, port p, to one VIP.
  constexpr uint32_t kFlows = 20000;
  const int fd = dp.map_fd("flows");
  for (uint32_t i = 0; i < kFlows; ++i) {
    ballast_flow_key k = {};
    const uint32_t client = htonl(0xc6120000u | (i / 16));  // 198.18.0.0/16
    std::memcpy(k.src, &client, 4);
    const uint32_t vip = htonl(0xc613000au);  // 198.19.0.10
    std::memcpy(k.dst, &vip, 4);
    k.sport = htons(static_cast<uint16_t>(10000 + i % 16));
    k.dport = htons(80);
    k.proto = IPPROTO_TCP;
    k.family = BALLAST_FAMILY_V4;
    ballast_flow f = {};
    f.backend_id = 1 + i % 7;
    f.state = BALLAST_FLOW_ESTABLISHED;
    REQUIRE(bpf_map_update_elem(fd, &k, &f, BPF_NOEXIST) == 0);
  }
  std::set<std::pair<uint32_t, uint16_t>> seen_tuples;
  std::array<uint32_t, 8> per_backend = {};
  auto seen = dp.ForEachFlow(std::numeric_limits<size_t>::max(),
                             [&](const ballast_flow_key& k, const ballast_flow& f) {
                               uint32_t client = 0;
                               std::memcpy(&client, k.src, 4);
                               seen_tuples.emplace(ntohl(client), ntohs(k.sport));
                               if (f.backend_id < per_backend.size()) ++per_backend[f.backend_id];
                             });
  REQUIRE(seen.ok());
  CHECK(*seen == kFlows);
  CHECK(seen_tuples.size() == kFlows);  // each once
  for (uint32_t b = 1; b <= 7; ++b) {
    INFO("backend " << b);
    CHECK(per_backend[b] == kFlows / 7 + (b - 1 < kFlows % 7 ? 1 : 0));
  }

  // A limit stops the read there, mid-batch included.
  size_t calls = 0;
  seen = dp.ForEachFlow(1234, [&](const ballast_flow_key&, const ballast_flow&) { ++calls; });
  REQUIRE(seen.ok());
  CHECK(*seen == 1234);
  CHECK(calls == 1234);
  auto flows = dp.Flows(5000);
  REQUIRE(flows.ok());
  CHECK(flows->size() == 5000);
  flows = dp.Flows(std::numeric_limits<size_t>::max());
  REQUIRE(flows.ok());
  CHECK(flows->size() == kFlows);

  // One entry per system call to begin with: the first bucket holding two
  // flows (20,000 flows in 65,536 buckets: thousands of them) does not fit,
  // the kernel says ENOSPC, and the batch doubles until it does. Every flow is
  // still seen once.
  seen_tuples.clear();
  calls = 0;
  seen = dp.ForEachFlow(
      std::numeric_limits<size_t>::max(),
      [&](const ballast_flow_key& k, const ballast_flow&) {
        uint32_t client = 0;
        std::memcpy(&client, k.src, 4);
        seen_tuples.emplace(ntohl(client), ntohs(k.sport));
        ++calls;
      },
      /*batch=*/1);
  REQUIRE(seen.ok());
  CHECK(*seen == kFlows);
  CHECK(calls == kFlows);
  CHECK(seen_tuples.size() == kFlows);
}

TEST_CASE("SetTable swaps in a table of a new size, rewrites one of the same size in place",
          "[dataplane][bpf]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  const int outer = dp->map_fd("maglev_tables");
  CHECK(dp->GetTable(3).status().code() == absl::StatusCode::kNotFound);

  std::vector<uint32_t> t7 = {5, 6, 5, 6, 5, 6, 5};
  REQUIRE(dp->SetTable(3, t7).ok());
  auto got = dp->GetTable(3);
  REQUIRE(got.ok());
  CHECK(*got == t7);
  uint32_t id7 = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id7) == 0);

  // Same size: the same inner map, its slots rewritten.
  const std::vector<uint32_t> t7b = {5, 7, 5, 7, 6, 6, 5};
  REQUIRE(dp->SetTable(3, t7b).ok());
  got = dp->GetTable(3);
  REQUIRE(got.ok());
  CHECK(*got == t7b);
  uint32_t id7b = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id7b) == 0);
  CHECK(id7b == id7);
  // A backend cleared after an in-place write (the call waits for a grace
  // period first), and after the rewritten table went away.
  CHECK(dp->ClearBackend(7).ok());
  REQUIRE(dp->SetTable(3, t7).ok());
  REQUIRE(bpf_map_delete_elem(outer, (const uint32_t[]){3}) == 0);
  CHECK(dp->ClearBackend(7).ok());
  REQUIRE(dp->SetTable(3, t7).ok());
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id7) == 0);

  std::vector<uint32_t> big(65537);
  for (size_t i = 0; i < big.size(); ++i) big[i] = 1 + static_cast<uint32_t>(i % 97);
  REQUIRE(dp->SetTable(3, big).ok());
  got = dp->GetTable(3);
  REQUIRE(got.ok());
  CHECK(got->size() == 65537);
  CHECK(*got == big);
  uint32_t id_big = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id_big) == 0);
  CHECK(id_big != id7);  // a new inner map, swapped in
  // The inner map: M+1 entries, entry 0 = M.
  UniqueFd inner(bpf_map_get_fd_by_id(id_big));
  REQUIRE(inner);
  auto info = GetMapInfo(inner.get());
  REQUIRE(info.ok());
  CHECK(info->max_entries == 65538);
  CHECK((info->map_flags & BPF_F_INNER_MAP) != 0);
  uint32_t m = 0;
  REQUIRE(bpf_map_lookup_elem(inner.get(), (const uint32_t[]){0}, &m) == 0);
  CHECK(m == 65537);
  // The old inner map is gone once nothing references it.
  CHECK(bpf_map_get_fd_by_id(id7) < 0);

  // A table frozen against writes (as agents before in-place writes left
  // them) is replaced by a swap.
  REQUIRE(bpf_map_freeze(inner.get()) == 0);
  std::vector<uint32_t> big2 = big;
  big2[100] = 3;
  REQUIRE(dp->SetTable(3, big2).ok());
  got = dp->GetTable(3);
  REQUIRE(got.ok());
  CHECK(*got == big2);
  uint32_t id_big2 = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id_big2) == 0);
  CHECK(id_big2 != id_big);
  inner = UniqueFd();
  CHECK(bpf_map_get_fd_by_id(id_big) < 0);

  // Back to a small table.
  REQUIRE(dp->SetTable(3, t7).ok());
  got = dp->GetTable(3);
  REQUIRE(got.ok());
  CHECK(*got == t7);

  std::vector<uint32_t> t8(8, 1);
  CHECK(dp->SetTable(3, t8).code() == absl::StatusCode::kInvalidArgument);
  CHECK(dp->SetTable(3, std::vector<uint32_t>{}).code() == absl::StatusCode::kInvalidArgument);
  CHECK(dp->SetTable(0, t7).code() == absl::StatusCode::kInvalidArgument);
  CHECK(dp->SetTable(BALLAST_MAX_VIPS, t7).code() == absl::StatusCode::kInvalidArgument);
  std::vector<uint32_t> bad_id = t7;
  bad_id[2] = BALLAST_MAX_BACKENDS;
  CHECK(dp->SetTable(3, bad_id).code() == absl::StatusCode::kInvalidArgument);
  std::vector<uint32_t> too_big(BALLAST_MAX_TABLE_SIZE + 2, 1);  // 1048575, not checked as prime
  CHECK(dp->SetTable(3, too_big).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("SetHistory: swapped in, rewritten in place at the same size, deleted, checked",
          "[dataplane][bpf]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  const int outer = dp->map_fd("maglev_history");
  REQUIRE(outer >= 0);
  CHECK(dp->GetHistory(3).status().code() == absl::StatusCode::kNotFound);
  const std::vector<uint64_t> h7 = {0, 5, 5 | 6ull << 16, 0, 7, 7 | 5ull << 16 | 6ull << 32, 0};
  REQUIRE(dp->SetHistory(3, h7).ok());
  auto got = dp->GetHistory(3);
  REQUIRE(got.ok());
  CHECK(*got == h7);
  uint32_t id7 = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id7) == 0);
  // The same size: the same inner map, rewritten (no grace period).
  const std::vector<uint64_t> h7b = {6, 0, 5, 0, 7, 0, 6 | 7ull << 16};
  REQUIRE(dp->SetHistory(3, h7b).ok());
  got = dp->GetHistory(3);
  REQUIRE(got.ok());
  CHECK(*got == h7b);
  uint32_t id7b = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id7b) == 0);
  CHECK(id7b == id7);
  // Another size: a new inner map.
  REQUIRE(dp->SetHistory(3, std::vector<uint64_t>(11, 9)).ok());
  uint32_t id11 = 0;
  REQUIRE(bpf_map_lookup_elem(outer, (const uint32_t[]){3}, &id11) == 0);
  CHECK(id11 != id7);
  CHECK(dp->GetHistory(3)->size() == 11);
  // Refused: an id that is no backend id, bits above the three ids.
  CHECK(dp->SetHistory(3, std::vector<uint64_t>{BALLAST_MAX_BACKENDS}).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(dp->SetHistory(3, std::vector<uint64_t>{1ull << 48}).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(dp->GetHistory(3)->size() == 11);  // unchanged
  // Empty: removed.
  REQUIRE(dp->SetHistory(3, {}).ok());
  CHECK(dp->GetHistory(3).status().code() == absl::StatusCode::kNotFound);
  REQUIRE(dp->SetHistory(3, {}).ok());  // again: nothing to remove
}

TEST_CASE("pinned maps are reused by a second Open and removed by Teardown", "[dataplane][bpf]") {
  RequireRoot();
  TempBpffs fs;
  Options o;
  o.pin_dir = fs.dir() + "/ballast";
  o.flow_capacity = 8192;

  std::vector<uint32_t> ids;
  uint32_t prog_id = 0;
  {
    auto a = Dataplane::Open(o);
    INFO(a.status().ToString());
    REQUIRE(a.ok());
    CHECK_FALSE((*a)->adopted());
    for (const char* m : kMaps) ids.push_back(MapId((*a)->map_fd(m)));
    prog_id = ProgId((*a)->prog_fd());
    for (const char* m : kMaps) {
      INFO(m);
      CHECK(PathExists(o.pin_dir + "/" + m));
    }
    CHECK(PathExists(o.pin_dir + "/prog_xdp_lb"));
    REQUIRE((*a)->SetTable(5, std::vector<uint32_t>{4, 4, 4, 4, 4}).ok());
    REQUIRE((*a)->UpsertVip(*ParseVipKey("198.18.0.10:80/tcp"), 5).ok());
    REQUIRE((*a)->SetVipOwnerDeadline(*ParseVipKey("198.18.0.10:80/tcp"), 424242).ok());
  }  // the first "agent" exits

  auto b = Dataplane::Open(o);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  CHECK((*b)->adopted());
  CHECK(ProgId((*b)->prog_fd()) == prog_id);
  std::vector<uint32_t> ids_b;
  for (const char* m : kMaps) ids_b.push_back(MapId((*b)->map_fd(m)));
  CHECK(ids_b == ids);
  auto t = (*b)->GetTable(5);
  REQUIRE(t.ok());
  CHECK(*t == std::vector<uint32_t>{4, 4, 4, 4, 4});
  // The owner deadline lives in the pins: the next agent finds it unchanged
  // (it does not extend or clear it by adopting), in both copies.
  {
    auto owner = (*b)->GetVipOwner(*ParseVipKey("198.18.0.10:80/tcp"));
    REQUIRE(owner.ok());
    CHECK(owner->deadline_ns == 424242u);
    auto [meta, ref] = VipMetas(**b, *ParseVipKey("198.18.0.10:80/tcp"), 5);
    CHECK(ref.owner_deadline_ns == 424242u);
    CHECK(ref.flags == BALLAST_VIP_F_OWNED);
  }

  // Tools open the pins without loading anything.
  auto tool = Dataplane::OpenPinned(o.pin_dir);
  INFO(tool.status().ToString());
  REQUIRE(tool.ok());
  CHECK(ProgId((*tool)->prog_fd()) == prog_id);
  std::vector<uint32_t> ids_tool;
  for (const char* m : kMaps) ids_tool.push_back(MapId((*tool)->map_fd(m)));
  CHECK(ids_tool == ids);
  REQUIRE((*tool)->SetTable(5, std::vector<uint32_t>{3, 3, 3}).ok());
  t = (*b)->GetTable(5);
  REQUIRE(t.ok());
  CHECK(*t == std::vector<uint32_t>{3, 3, 3});
  tool->reset();
  CHECK(Dataplane::OpenPinned(fs.dir() + "/nothing").status().code() ==
        absl::StatusCode::kNotFound);

  // A different flow capacity does not match the pinned flow table.
  Options other = o;
  other.flow_capacity = 4096;
  auto c = Dataplane::Open(other);
  CHECK(c.status().code() == absl::StatusCode::kFailedPrecondition);
  INFO(c.status().message());
  CHECK(std::string(c.status().message())
            .find("adopted_flows has max_entries 4096 but this build "
                  "needs 2048") != std::string::npos);

  REQUIRE((*b)->Teardown().ok());
  CHECK_FALSE(PathExists(o.pin_dir));
}

TEST_CASE("adopted_flows' sets follow the flow capacity", "[dataplane]") {
  CHECK(AdoptedSetsFor(BALLAST_DEFAULT_FLOWS) == 131072);
  CHECK(AdoptedSetsFor(4096) == 2048);
  CHECK(AdoptedSetsFor(5000) == 4096);  // 2,500 rounded up to a power of two
  CHECK(AdoptedSetsFor(1) == 16);
}

TEST_CASE("more handshake slots, also when reopened from the pins; bad sizes refused",
          "[dataplane][bpf]") {
  RequireRoot();
  TempBpffs fs;
  Options o;
  o.pin_dir = fs.dir() + "/ballast";
  o.handshake_sets = 32768;
  auto a = Dataplane::Open(o);
  INFO(a.status().ToString());
  REQUIRE(a.ok());
  CHECK((*a)->handshake_sets() == 32768);
  CHECK(GetMapInfo((*a)->map_fd("handshakes"))->max_entries == 32768);
  REQUIRE((*a)->SetSettings(Settings{}).ok());  // syn_idle 5 s: the slot below is live
  // The last set holds a handshake under way (as the program would write it).
  ballast_handshake_set set = {};
  set.way[0] = ballast_handshake{.hash = 32767,
                                 .backend_id = 3,
                                 .isn = 1000,
                                 .syn_time = static_cast<uint32_t>(Dataplane::MonotonicNowNs() >>
                                                                   BALLAST_HANDSHAKE_TIME_SHIFT)};
  const uint32_t last = 32767;
  REQUIRE(bpf_map_update_elem((*a)->map_fd("handshakes"), &last, &set, BPF_ANY) == 0);

  // Reopened by the next agent (same capacity) and by a tool.
  auto b = Dataplane::Open(o);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  CHECK((*b)->handshake_sets() == 32768);
  auto tool = Dataplane::OpenPinned(o.pin_dir);
  INFO(tool.status().ToString());
  REQUIRE(tool.ok());
  CHECK((*tool)->handshake_sets() == 32768);
  auto hs = (*tool)->Handshakes();
  INFO(hs.status().ToString());
  REQUIRE(hs.ok());
  REQUIRE(hs->live.size() == 1);
  CHECK(hs->live[0].backend_id == 3);
  REQUIRE((*b)->Teardown().ok());

  for (uint32_t bad : {512u, 3000u, 1u << 25}) {
    Options wrong;
    wrong.pin_dir = "";
    wrong.handshake_sets = bad;
    auto d = Dataplane::Open(wrong);
    INFO(bad);
    CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(d.status().message()).find("power of two in 1024..16777216") !=
          std::string::npos);
  }
}

TEST_CASE("a pin dir outside bpffs is refused with the mount command", "[dataplane][bpf]") {
  RequireRoot();
  char tmpl[] = "/tmp/ballast-dpt-notbpf-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  Options o;
  o.pin_dir = std::string(tmpl) + "/ballast";
  auto dp = Dataplane::Open(o);
  rmdir(tmpl);
  CHECK(dp.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(dp.status().message()).find("mount -t bpf bpf /sys/fs/bpf") !=
        std::string::npos);
}

TEST_CASE("attach and detach on a veth in native and generic mode", "[dataplane][bpf][netns]") {
  RequireRoot();
  TestNetns ns;
  auto dp = OpenUnpinned();
  const uint32_t id = ProgId(dp->prog_fd());

  REQUIRE(dp->Attach("dpt0", AttachMode::kNative).ok());
  CHECK(AttachedId("dpt0") == id);
  auto st = QueryXdp(*IfIndex("dpt0"));
  REQUIRE(st.ok());
  CHECK(st->mode == AttachMode::kNative);  // the dispatcher fallback attached the program itself
  CHECK_FALSE(st->dispatcher);
  // libxdp made its directory for a dispatcher it did not pin; the attach
  // removed it again, so nothing is left in bpffs.
  CHECK_FALSE(PathExists(std::string(getenv("LIBXDP_BPFFS")) + "/xdp"));
  auto mode = dp->AttachedMode("dpt0");
  REQUIRE(mode.ok());
  CHECK(*mode == AttachMode::kNative);
  // Attaching again is a no-op (adoption), not an error.
  REQUIRE(dp->Attach("dpt0", AttachMode::kAuto).ok());
  CHECK(AttachedId("dpt0") == id);

  REQUIRE(dp->Attach("dpt1", AttachMode::kGeneric).ok());
  st = QueryXdp(*IfIndex("dpt1"));
  REQUIRE(st.ok());
  CHECK(st->prog_id == id);
  CHECK(st->mode == AttachMode::kGeneric);

  REQUIRE(dp->Detach("dpt0").ok());
  CHECK(AttachedId("dpt0") == 0);
  CHECK(dp->Detach("dpt0").code() == absl::StatusCode::kNotFound);
  CHECK(dp->Attach("nosuchdev", AttachMode::kAuto).code() == absl::StatusCode::kNotFound);

  // Someone else's program is neither replaced nor detached.
  auto decap = Decap::Load();
  REQUIRE(decap.ok());
  auto dm = (*decap)->Attach("dpt0", AttachMode::kNative);
  REQUIRE(dm.ok());
  auto refused = dp->Attach("dpt0", AttachMode::kAuto);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(AttachedId("dpt0") == ProgId((*decap)->prog_fd()));
  CHECK(dp->Detach("dpt0").code() == absl::StatusCode::kFailedPrecondition);

  REQUIRE(dp->Teardown().ok());  // detaches dpt1 only
  CHECK(AttachedId("dpt1") == 0);
  CHECK(AttachedId("dpt0") == ProgId((*decap)->prog_fd()));
  REQUIRE(Decap::DetachFrom("dpt0").ok());
  CHECK(AttachedId("dpt0") == 0);
}

TEST_CASE("auto mode falls back to generic where native XDP is unsupported",
          "[dataplane][bpf][netns]") {
  RequireRoot();
  TestNetns ns;  // its own loopback: lo has no native XDP support
  REQUIRE(Run("ip link set dev lo up").empty());
  auto dp = OpenUnpinned();
  CHECK(dp->Attach("lo", AttachMode::kNative).code() != absl::StatusCode::kOk);
  CHECK(AttachedId("lo") == 0);
  REQUIRE(dp->Attach("lo", AttachMode::kAuto).ok());  // warns on stderr
  auto st = QueryXdp(*IfIndex("lo"));
  REQUIRE(st.ok());
  CHECK(st->prog_id == ProgId(dp->prog_fd()));
  CHECK(st->mode == AttachMode::kGeneric);
  auto mode = dp->AttachedMode("lo");
  REQUIRE(mode.ok());
  CHECK(*mode == AttachMode::kGeneric);
  REQUIRE(dp->Detach("lo").ok());
  CHECK(AttachedId("lo") == 0);
}

TEST_CASE("a restarted agent adopts the attached program without re-attaching",
          "[dataplane][bpf][netns]") {
  RequireRoot();
  TestNetns ns;
  TempBpffs fs;
  Options o;
  o.pin_dir = fs.dir() + "/ballast";
  uint32_t id = 0;
  {
    auto a = Dataplane::Open(o);
    REQUIRE(a.ok());
    REQUIRE((*a)->Attach("dpt0", AttachMode::kNative).ok());
    id = ProgId((*a)->prog_fd());
  }
  CHECK(AttachedId("dpt0") == id);  // still attached after the owner is gone
  auto b = Dataplane::Open(o);
  REQUIRE(b.ok());
  CHECK((*b)->adopted());
  REQUIRE((*b)->Attach("dpt0", AttachMode::kNative).ok());
  CHECK(AttachedId("dpt0") == id);
  REQUIRE((*b)->Teardown().ok());
  CHECK(AttachedId("dpt0") == 0);
  CHECK_FALSE(PathExists(o.pin_dir));
}

TEST_CASE("a program of another build is replaced atomically on attach",
          "[dataplane][bpf][netns]") {
  RequireRoot();
  TestNetns ns;
  TempBpffs fs;
  Options o;
  o.pin_dir = fs.dir() + "/ballast";
  // Stand-in for "the previous build": another XDP program pinned under the
  // program's name and attached to dpt0.
  auto old = Decap::Load();
  REQUIRE(old.ok());
  REQUIRE(MakeDirs(o.pin_dir).ok());
  REQUIRE(PinAtomically((*old)->prog_fd(), o.pin_dir + "/prog_xdp_lb").ok());
  REQUIRE((*old)->Attach("dpt0", AttachMode::kNative).ok());

  auto dp = Dataplane::Open(o);
  REQUIRE(dp.ok());
  CHECK_FALSE((*dp)->adopted());
  REQUIRE((*dp)->Attach("dpt0", AttachMode::kAuto).ok());
  const uint32_t id = ProgId((*dp)->prog_fd());
  CHECK(AttachedId("dpt0") == id);
  auto st = QueryXdp(*IfIndex("dpt0"));
  REQUIRE(st.ok());
  CHECK(st->mode == AttachMode::kNative);
  UniqueFd pinned(bpf_obj_get((o.pin_dir + "/prog_xdp_lb").c_str()));
  REQUIRE(pinned);
  CHECK(ProgId(pinned.get()) == id);
  REQUIRE((*dp)->Teardown().ok());
  CHECK(AttachedId("dpt0") == 0);
}
