#include "tests/bpf/lb_fixture.h"

#include <algorithm>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <arpa/inet.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "agent/dataplane/verdict.h"
#include "ballast_flow_hash.h"
#include "tests/bpf/tshark.h"
#include "tests/lib/checksum.h"

namespace ballast::bpftest {

ballast_flow_key FlowKey(const Addr& client, const Addr& vip, uint16_t sport, uint16_t dport,
                         uint8_t proto) {
  ballast_flow_key k;
  std::memset(&k, 0, sizeof k);
  std::memcpy(k.src, client.b.data(), 16);
  std::memcpy(k.dst, vip.b.data(), 16);
  k.sport = htons(sport);
  k.dport = htons(dport);
  k.proto = proto;
  k.family = client.family == 4 ? BALLAST_FAMILY_V4 : BALLAST_FAMILY_V6;
  return k;
}

IpAddress ToIpAddress(const Addr& a) {
  return a.family == 4 ? IpAddress::V4(a.b.data()) : IpAddress::V6(a.b.data());
}

LbFixture::LbFixture(uint32_t flow_capacity, uint32_t handshake_sets) {
  dataplane::Options o;
  o.pin_dir = "";
  o.flow_capacity = flow_capacity;
  o.handshake_sets = handshake_sets;
  auto dp = dataplane::Dataplane::Open(o);
  INFO("loading the lb program: " << dp.status().ToString());
  REQUIRE(dp.ok());
  dp_ = *std::move(dp);
  SetPolicy(BALLAST_POLICY_ICMP_TOO_BIG);
}

LbFixture::~LbFixture() = default;

void LbFixture::SetSettings(const dataplane::Settings& s) {
  dataplane::Settings with_seed = s;
  if (!with_seed.flow_hash_seed.current) with_seed.flow_hash_seed.current = kTestSeed;
  const absl::Status st = dp_->SetSettings(with_seed);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

void LbFixture::SetFlowHashSeed(const dataplane::FlowHashSeed& seed) {
  auto s = dp_->GetSettings();
  REQUIRE(s.ok());
  s->flow_hash_seed = seed;
  const absl::Status st = dp_->SetSettings(*s);  // as it is: no seed is no seed
  INFO(st.ToString());
  REQUIRE(st.ok());
}

uint32_t LbFixture::Hash(const ballast_flow_key& key) const {
  auto seed = dp_->CurrentHashSeed();
  REQUIRE(seed.ok());
  return ballast_flow_hash(&key, &*seed);
}

void LbFixture::SetPolicy(uint32_t policy) {
  dataplane::Settings s;
  s.src4 = ToIpAddress(Lab::Src4());
  s.src6 = ToIpAddress(Lab::Src6());
  s.policy = policy;
  SetSettings(s);
}

void LbFixture::AddVip(const Addr& addr, uint16_t port, uint8_t proto, uint32_t vip_id,
                       const dataplane::VipOptions& options) {
  dataplane::VipKey k;
  k.addr = ToIpAddress(addr);
  k.port = port;
  k.proto = proto;
  const absl::Status st = dp_->UpsertVip(k, vip_id, options);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

void LbFixture::SetOwnerDeadline(const Addr& addr, uint16_t port, uint8_t proto,
                                 std::optional<uint64_t> deadline_ns) {
  const absl::Status st = dp_->SetVipOwnerDeadline({ToIpAddress(addr), port, proto}, deadline_ns);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

void LbFixture::AddBackend(uint32_t id, const Addr& addr, ballast_backend_state state,
                           uint64_t drain_deadline_ns, uint32_t mtu) {
  const absl::Status st = dp_->SetBackend(id, ToIpAddress(addr), state, drain_deadline_ns);
  INFO(st.ToString());
  REQUIRE(st.ok());
  backend_addrs_[id] = addr;
  SetNexthop(id, mtu);
}

void LbFixture::SetBackendState(uint32_t id, ballast_backend_state state,
                                uint64_t drain_deadline_ns) {
  const absl::Status st =
      dp_->SetBackend(id, ToIpAddress(backend_addrs_.at(id)), state, drain_deadline_ns);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

void LbFixture::SetNexthop(uint32_t id, uint32_t mtu, uint32_t ifindex) {
  const int fd = dp_->map_fd("nexthops");
  REQUIRE(fd >= 0);
  const int ncpu = libbpf_num_possible_cpus();
  REQUIRE(ncpu > 0);
  ballast_nexthop nh;
  std::memset(&nh, 0, sizeof nh);
  const Mac s = Lab::NexthopSmac(), d = Lab::NexthopDmac();
  std::memcpy(nh.smac, s.b.data(), 6);
  std::memcpy(nh.dmac, d.b.data(), 6);
  nh.ifindex = ifindex;
  nh.mtu = mtu;
  nh.expires_ns = dataplane::Dataplane::MonotonicNowNs() + 3600ull * 1000000000ull;
  static_assert(sizeof(ballast_nexthop) % 8 == 0, "per-CPU values are 8-byte strided");
  std::vector<ballast_nexthop> values(static_cast<size_t>(ncpu), nh);
  const int rc = bpf_map_update_elem(fd, &id, values.data(), BPF_ANY);
  INFO("writing nexthops[" << id << "]: " << std::strerror(errno));
  REQUIRE(rc == 0);
}

void LbFixture::ClearNexthop(uint32_t id) {
  const int ncpu = libbpf_num_possible_cpus();
  REQUIRE(ncpu > 0);
  std::vector<ballast_nexthop> values(static_cast<size_t>(ncpu), ballast_nexthop{});
  REQUIRE(bpf_map_update_elem(dp_->map_fd("nexthops"), &id, values.data(), BPF_ANY) == 0);
}

void LbFixture::SetTable(uint32_t vip_id, const std::vector<uint32_t>& table) {
  const absl::Status st = dp_->SetTable(vip_id, table);
  INFO(st.ToString());
  REQUIRE(st.ok());
  tables_[vip_id] = table;
}

void LbFixture::SetUniformTable(uint32_t vip_id, uint32_t backend_id) {
  SetTable(vip_id, std::vector<uint32_t>(13, backend_id));
}

std::array<uint64_t, BALLAST_V_MAX> LbFixture::Verdicts() const {
  auto v = dp_->Verdicts();
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  return *v;
}

Outcome LbFixture::Run(const Bytes& frame, uint32_t ingress_ifindex) {
  const auto before = Verdicts();
  auto r = pktgen::RunXdp(dp_->prog_fd(), frame, {.ingress_ifindex = ingress_ifindex, .repeat = 1});
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  ++runs_;
  const auto after = Verdicts();
  Outcome o;
  o.action = r->action;
  o.out = std::move(r->out);
  o.meta = std::move(r->meta);
  int moved = 0;
  std::string deltas;
  for (int i = 0; i < BALLAST_V_MAX; ++i) {
    const uint64_t d = after[i] - before[i];
    if (d == 0) continue;
    ++moved;
    deltas += std::string(dataplane::VerdictName(static_cast<ballast_verdict>(i))) + "+" +
              std::to_string(d) + " ";
    if (d == 1) o.verdict = static_cast<ballast_verdict>(i);
  }
  INFO("verdict counters moved: " << (deltas.empty() ? "none" : deltas) << "\ninput:\n"
                                  << pktgen::HexDump(frame));
  REQUIRE(moved == 1);
  REQUIRE(o.verdict != BALLAST_V_MAX);
  return o;
}

uint32_t LbFixture::PredictNext(uint32_t vip_id, const ballast_flow_key& key, uint32_t first,
                                uint32_t last, const std::set<uint32_t>& unusable) const {
  const auto& t = tables_.at(vip_id);
  const uint32_t hash = Hash(key);
  std::vector<uint32_t> next;  // the second and third choices
  for (uint32_t seed = 1; seed <= BALLAST_CHOICE_SEEDS && next.size() < 2; ++seed) {
    const uint32_t id = t[ballast_choice_hash(hash, seed) % t.size()];
    if (id == BALLAST_INVALID_ID || id == first || unusable.count(id)) continue;
    if (std::find(next.begin(), next.end(), id) == next.end()) next.push_back(id);
  }
  if (last == first) return next.empty() ? first : next[0];
  if (!next.empty() && last == next[0]) return next.size() > 1 ? next[1] : first;
  return first;
}

uint32_t LbFixture::Predict(uint32_t vip_id, const ballast_flow_key& key) const {
  const auto& t = tables_.at(vip_id);
  return t[Hash(key) % t.size()];
}

uint32_t LbFixture::BackendAt(const Addr& outer_dst) const {
  for (const auto& [id, addr] : backend_addrs_)
    if (addr == outer_dst) return id;
  return 0;
}

std::optional<ballast_flow> LbFixture::Flow(const ballast_flow_key& key) const {
  for (const char* m : dataplane::kFlowMaps) {
    auto f = dp_->LookupFlow(m, key);
    REQUIRE(f.ok());
    if (f->has_value()) return **f;
  }
  return std::nullopt;
}

std::string LbFixture::FlowMap(const ballast_flow_key& key) const {
  for (const char* m : dataplane::kFlowMaps) {
    auto f = dp_->LookupFlow(m, key);
    REQUIRE(f.ok());
    if (f->has_value()) return m;
  }
  return "";
}

void LbFixture::SetFlow(const ballast_flow_key& key, const ballast_flow& f) {
  std::string m = FlowMap(key);
  if (m.empty()) m = "flows";
  const int fd = dp_->map_fd(m.c_str());
  if (m != dataplane::kAdoptedFlowsMap) {
    REQUIRE(bpf_map_update_elem(fd, &key, &f, BPF_ANY) == 0);
    return;
  }
  // The way that holds the key, rewritten with its set (no packet runs
  // meanwhile in a test).
  const uint32_t idx = Hash(key) & (dp_->adopted_sets() - 1);
  ballast_adopted_set set;
  REQUIRE(bpf_map_lookup_elem(fd, &idx, &set) == 0);
  for (uint32_t i = 0; i < BALLAST_ADOPTED_WAYS; ++i) {
    if (std::memcmp(&set.key[i], &key, sizeof key) == 0) set.flow[i] = f;
  }
  REQUIRE(bpf_map_update_elem(fd, &idx, &set, BPF_ANY) == 0);
}

ballast_handshake_set LbFixture::HandshakeSet(const ballast_flow_key& key) const {
  const uint32_t idx = Hash(key) & (dp_->handshake_sets() - 1);
  ballast_handshake_set set;
  REQUIRE(bpf_map_lookup_elem(dp_->map_fd("handshakes"), &idx, &set) == 0);
  return set;
}

std::optional<ballast_handshake> LbFixture::Handshake(const ballast_flow_key& key) const {
  const uint32_t hash = Hash(key);
  for (const ballast_handshake& h : HandshakeSet(key).way)
    if (h.backend_id != BALLAST_INVALID_ID && h.hash == hash) return h;
  return std::nullopt;
}

void LbFixture::SetHandshakeSet(const ballast_flow_key& key, const ballast_handshake_set& set) {
  const uint32_t idx = Hash(key) & (dp_->handshake_sets() - 1);
  REQUIRE(bpf_map_update_elem(dp_->map_fd("handshakes"), &idx, &set, BPF_ANY) == 0);
}

ballast_backend_stats LbFixture::BackendStats(uint32_t id) const {
  auto s = dp_->BackendStats(id);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return *s;
}

ballast_vip_stats LbFixture::VipStats(uint32_t vip_id) const {
  auto s = dp_->VipStats(vip_id);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return *s;
}

std::vector<uint32_t> CyclingTable(const std::vector<uint32_t>& ids, size_t m) {
  std::vector<uint32_t> t(m);
  for (size_t i = 0; i < m; ++i) t[i] = ids[i % ids.size()];
  return t;
}

void SetUpLab(LbFixture& fx) {
  for (int i = 1; i <= 3; ++i) fx.AddBackend(static_cast<uint32_t>(i), Lab::Backend4(i));
  for (int i = 1; i <= 3; ++i) fx.AddBackend(static_cast<uint32_t>(10 + i), Lab::Backend6(i));
  fx.AddVip(Lab::Vip4(), 80, IPPROTO_TCP, kVipTcp4);
  fx.AddVip(Lab::Vip6(), 443, IPPROTO_TCP, kVipTcp6);
  fx.AddVip(Lab::Vip4(), 443, IPPROTO_TCP, kVip4To6);
  fx.AddVip(Lab::Vip4(), 53, IPPROTO_UDP, kVipUdp4);
  fx.AddVip(Lab::Vip6(), 80, IPPROTO_TCP, kVipMixed6);
  fx.SetTable(kVipTcp4, CyclingTable({1, 2, 3}));
  fx.SetTable(kVipTcp6, CyclingTable({11, 12, 13}));
  fx.SetTable(kVip4To6, CyclingTable({11, 12, 13}));
  fx.SetTable(kVipUdp4, CyclingTable({1, 2, 3}));
  fx.SetTable(kVipMixed6, CyclingTable({1}));
}

uint32_t BackendOf(const LbFixture& fx, const Bytes& out) {
  auto v = pktgen::ParseFrame(out);
  REQUIRE(v.ok());
  REQUIRE(v->ip.has_value());
  return fx.BackendAt(v->ip->dst);
}

uint32_t BackendOf(const LbFixture& fx, const Outcome& o) { return BackendOf(fx, o.out); }

pktgen::PacketBuilder FromClient4(const Addr& vip) {
  pktgen::PacketBuilder b;
  b.Eth(Lab::TorMac(), Lab::RouterMac()).Ip4(Lab::Client4(), vip);
  return b;
}

pktgen::PacketBuilder FromClient6(const Addr& vip) {
  pktgen::PacketBuilder b;
  b.Eth(Lab::TorMac(), Lab::RouterMac()).Ip6(Lab::Client6(), vip);
  return b;
}

pktgen::IpView CheckEncapsulated(const Bytes& out, const EncapExpect& e) {
  auto f = pktgen::ParseFrame(out);
  INFO("output frame:\n" << pktgen::HexDump(out));
  INFO("parse: " << f.status().ToString());
  REQUIRE(f.ok());
  CHECK(f->src == e.src);
  CHECK(f->dst == e.dst);
  CHECK_FALSE(f->vlan.has_value());
  REQUIRE(f->ip.has_value());
  const pktgen::IpView& ip = *f->ip;
  REQUIRE(ip.family == e.outer_family);
  CHECK(ip.src == e.outer_src);
  CHECK(ip.dst == e.outer_dst);
  CHECK(ip.ttl == 64);
  CHECK(ip.tos == e.outer_tos);
  const size_t udp = e.gue_sport.has_value() ? 8 : 0;
  CHECK(ip.total_len == ip.header_len + udp + e.inner_ip.size());
  CHECK(out.size() == 14 + ip.total_len);  // nothing after the packet
  if (ip.family == 4) {
    CHECK(ip.header_len == 20);
    CHECK(ip.header_checksum_ok);
    CHECK_FALSE(ip.is_fragment);
  } else {
    CHECK(ip.header_len == 40);
    CHECK(ip.ext_types.empty());
  }
  const uint8_t want_proto = udp != 0                  ? pktgen::proto::kUdp
                             : e.inner_ip[0] >> 4 == 4 ? pktgen::proto::kIpip
                                                       : pktgen::proto::kIpv6;
  REQUIRE(ip.proto == want_proto);
  if (udp != 0) {
    const size_t h = ip.header_len;
    REQUIRE(ip.l4.has_value());
    CHECK(ip.l4->sport == *e.gue_sport);
    CHECK(ip.l4->dport == e.gue_dport);
    CHECK(((ip.bytes[h + 4] << 8) | ip.bytes[h + 5]) == 8 + static_cast<int>(e.inner_ip.size()));
    CHECK(ip.bytes[h + 6] == 0);  // no checksum (RFC 6935 for IPv6)
    CHECK(ip.bytes[h + 7] == 0);
  }
  const Bytes inner(ip.bytes.begin() + static_cast<long>(ip.header_len + udp), ip.bytes.end());
  INFO("inner packet sent:\n" << pktgen::HexDump(e.inner_ip));
  CHECK(inner == e.inner_ip);
  auto in = pktgen::ParseIp(inner);
  REQUIRE(in.ok());
  const absl::Status cs = pktgen::CheckChecksums(*in);
  INFO(cs.ToString());
  CHECK(cs.ok());
  return ip;
}

Listener::Listener(int family, uint16_t port) {
  fd_ = socket(family, SOCK_STREAM, 0);
  REQUIRE(fd_ >= 0);
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == AF_INET) {
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  } else {
    sockaddr_in6 a = {};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  }
  REQUIRE(listen(fd_, 16) == 0);
}

Listener::~Listener() { close(fd_); }

int Listener::Accept() { return accept(fd_, nullptr, nullptr); }

std::unique_ptr<dataplane::Decap> LoadBackendDecap() {
  auto decap = dataplane::Decap::Load();
  INFO(decap.status().ToString());
  REQUIRE(decap.ok());
  for (int i = 1; i <= 3; ++i) {
    REQUIRE((*decap)->AddAddress(ToIpAddress(Lab::Backend4(i))).ok());
    REQUIRE((*decap)->AddAddress(ToIpAddress(Lab::Backend6(i))).ok());
  }
  return *std::move(decap);
}

void ForEachSpreadFlow(
    LbFixture& fx,
    const std::function<void(const ballast_flow_key&, const pktgen::IpView&)>& seen) {
  for (int c = 1; c <= 100; ++c) {
    const Addr client = Addr::Parse("198.18.100." + std::to_string(c));
    for (uint16_t sport = 20000; sport < 20100; ++sport) {
      pktgen::PacketBuilder b;
      b.Eth(Lab::TorMac(), Lab::RouterMac()).Ip4(client, Lab::Vip4());
      const Outcome o = fx.Run(b.Udp(sport, 53).PayloadSize(16).Build());
      REQUIRE(o.verdict == BALLAST_V_TX);
      auto v = pktgen::ParseFrame(o.out);
      REQUIRE(v.ok());
      REQUIRE(v->ip.has_value());
      seen(FlowKey(client, Lab::Vip4(), sport, 53, IPPROTO_UDP), *v->ip);
    }
  }
}

void ExpectVerdicts(LbFixture& fx, const std::vector<VerdictCase>& cases, int action) {
  for (const VerdictCase& c : cases) {
    INFO(c.what);
    const Outcome o = fx.Run(c.frame);
    CHECK(o.action == action);
    CHECK(o.verdict == c.verdict);
    if (action == XDP_PASS) CHECK(o.out == c.frame);
  }
}

std::unique_ptr<dataplane::Decap> LoadRouterOnlyDecap() {
  std::unique_ptr<dataplane::Decap> decap = LoadBackendDecap();
  REQUIRE(decap->AddSource(Lab::Src4().ToString()).ok());
  REQUIRE(decap->AddSource(Lab::Src6().ToString()).ok());
  // The lab's VIPs (SetUpLab), by protocol and port.
  const dataplane::VipKey served[] = {{ToIpAddress(Lab::Vip4()), 80, IPPROTO_TCP},
                                      {ToIpAddress(Lab::Vip6()), 443, IPPROTO_TCP},
                                      {ToIpAddress(Lab::Vip4()), 443, IPPROTO_TCP},
                                      {ToIpAddress(Lab::Vip4()), 53, IPPROTO_UDP},
                                      {ToIpAddress(Lab::Vip6()), 80, IPPROTO_TCP}};
  for (const dataplane::VipKey& k : served) REQUIRE(decap->AddVip(k).ok());
  return decap;
}

pktgen::XdpResult RunDecap(const dataplane::Decap& decap, const Bytes& frame) {
  auto r = pktgen::RunXdp(decap.prog_fd(), frame);
  REQUIRE(r.ok());
  return *r;
}

std::array<uint64_t, BALLAST_DECAP_V_MAX> DecapStats(const dataplane::Decap& decap) {
  auto s = decap.Stats();
  REQUIRE(s.ok());
  return *s;
}

Bytes Bounce(const Bytes& encapsulated) {
  Bytes b = encapsulated;
  REQUIRE(b.size() >= 14 + 40);
  for (int i = 0; i < 6; ++i) std::swap(b[i], b[6 + i]);
  const bool v4 = b[12] == 0x08 && b[13] == 0x00;
  const size_t src = 14 + (v4 ? 12 : 8), len = v4 ? 4 : 16;
  for (size_t i = 0; i < len; ++i) std::swap(b[src + i], b[src + len + i]);
  return b;
}

Bytes BounceFrom(const Bytes& encapsulated, const Addr& from) {
  Bytes b = Bounce(encapsulated);
  auto outer = pktgen::ParseFrame(b);
  REQUIRE(outer.ok());
  const Bytes inner = outer->ip->inner->bytes;
  pktgen::PacketBuilder pb;
  pb.Eth(Lab::NexthopDmac(), Lab::NexthopSmac());
  if (outer->ip->family == 4) {
    pb.Ip4(from, outer->ip->dst).L4Proto(IPPROTO_IPIP);
  } else {
    pb.Ip6(from, outer->ip->dst).L4Proto(outer->ip->proto);
  }
  return pb.Payload(inner).Build();
}

PinnedToOneCpu::PinnedToOneCpu() {
  REQUIRE(sched_getaffinity(0, sizeof(saved_), &saved_) == 0);
  const int cpu = sched_getcpu();
  REQUIRE(cpu >= 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
}

void WaitOutProbation() {
  // BALLAST_PROBATION_WAIT units of 2^BALLAST_ESC_TIME_SHIFT ns on the
  // coarse clock, plus two of its ticks.
  const uint64_t ns = (uint64_t{BALLAST_PROBATION_WAIT} + 1) << BALLAST_ESC_TIME_SHIFT;
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns) + std::chrono::milliseconds(10));
}

Bytes WithOuterMark(const Bytes& frame, uint32_t value) {
  Bytes b = frame;
  REQUIRE(b.size() >= 14 + 40);
  if (b[12] == 0x08 && b[13] == 0x00) {
    b[14 + 4] = static_cast<uint8_t>(value >> 8);
    b[14 + 5] = static_cast<uint8_t>(value);
    b[14 + 10] = b[14 + 11] = 0;
    const uint16_t csum = pktgen::InternetChecksum(std::span<const uint8_t>(&b[14], 20));
    b[14 + 10] = static_cast<uint8_t>(csum >> 8);
    b[14 + 11] = static_cast<uint8_t>(csum);
  } else {
    b[14 + 1] = static_cast<uint8_t>((b[14 + 1] & 0xf0) | ((value >> 16) & 0x0f));
    b[14 + 2] = static_cast<uint8_t>(value >> 8);
    b[14 + 3] = static_cast<uint8_t>(value);
  }
  return b;
}

uint32_t OuterMarkOf(const Bytes& frame) {
  REQUIRE(frame.size() >= 14 + 40);
  if (frame[12] == 0x08 && frame[13] == 0x00) return uint32_t{frame[14 + 4]} << 8 | frame[14 + 5];
  return uint32_t{frame[14 + 1] & 0x0fu} << 16 | uint32_t{frame[14 + 2]} << 8 | frame[14 + 3];
}

void CheckBouncesDissected(const std::vector<Bytes>& bounced, const std::string& tcp_field,
                           const std::string& value) {
  auto rows = Dissect(bounced, {"frame.protocols", "ip.checksum.status", "tcp.checksum.status",
                                "ip.dst", "ipv6.dst", tcp_field, "_ws.malformed"});
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  TsharkRow& r4 = (*rows)[0];
  CHECK(r4["frame.protocols"] == "eth:ethertype:ip:ip:tcp");
  CHECK(r4["ip.checksum.status"] == "1,1");
  CHECK(r4["tcp.checksum.status"] == "1");
  CHECK(SplitValues(r4["ip.dst"])[0] == "198.18.0.1");   // the router
  CHECK(SplitValues(r4["ip.dst"])[1] == "198.18.0.10");  // the VIP
  CHECK(r4[tcp_field] == value);
  CHECK(r4["_ws.malformed"].empty());
  TsharkRow& r6 = (*rows)[1];
  CHECK(r6["frame.protocols"] == "eth:ethertype:ipv6:ipv6:tcp");
  CHECK(r6["tcp.checksum.status"] == "1");
  CHECK(SplitValues(r6["ipv6.dst"])[0] == "2001:db8::1");
  CHECK(r6[tcp_field] == value);
  CHECK(r6["_ws.malformed"].empty());
}

}  // namespace ballast::bpftest
