// The tc probe program on BPF_PROG_TEST_RUN (real object, loaded by a real
// ProbeForwarder without pins): what it does to marked and unmarked packets,
// byte by byte, and once through tshark as an independent dissector. Runs in
// a private, empty network namespace (main below), so the FIB lookup after
// encapsulation finds no route and the packet ends as drop_fib — after the
// encapsulation the test inspects.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <linux/pkt_cls.h>
#include <sched.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <unistd.h>

#include "agent/probes/forwarder.h"
#include "ballast_abi.h"
#include "tests/lib/packet.h"
#include "tests/lib/pcap.h"

namespace ballast::probes {
namespace {

using pktgen::Addr;
using pktgen::Bytes;
using pktgen::PacketBuilder;

const pktgen::Mac kA = pktgen::Mac::Parse("02:00:00:00:00:01");
const pktgen::Mac kB = pktgen::Mac::Parse("02:00:00:00:00:02");

std::unique_ptr<ProbeForwarder> Open() {
  ProbeForwarder::Options o;
  o.device = "lo";
  o.pin_dir = "";
  o.src4 = *IpAddress::Parse("198.18.0.1");
  o.src6 = *IpAddress::Parse("2001:db8::1");
  auto f = ProbeForwarder::Open(o);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return *std::move(f);
}

struct Run {
  int action = -1;
  Bytes out;
};

Run TestRun(const ProbeForwarder& f, const Bytes& in, uint32_t mark) {
  __sk_buff ctx{};
  ctx.mark = mark;
  Bytes out(in.size() + 128);
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.data(), .data_out = out.data(),
              .data_size_in = static_cast<uint32_t>(in.size()),
              .data_size_out = static_cast<uint32_t>(out.size()), .ctx_in = &ctx,
              .ctx_size_in = sizeof(ctx), .repeat = 1);
  const int err = bpf_prog_test_run_opts(f.prog_fd(), &opts);
  INFO("bpf_prog_test_run_opts: " << strerror(-err));
  REQUIRE(err == 0);
  out.resize(opts.data_size_out);
  return Run{static_cast<int>(opts.retval), out};
}

Bytes Tcp4() {
  return PacketBuilder()
      .Eth(kA, kB)
      .Ip4(Addr::Parse("198.18.0.1"), Addr::Parse("198.18.0.10"))
      .Tos(0x10)
      .Tcp(40000, 80, pktgen::tcp::kSyn)
      .Build();
}

Bytes Tcp6() {
  return PacketBuilder()
      .Eth(kA, kB)
      .Ip6(Addr::Parse("2001:db8::1"), Addr::Parse("2001:db8:10::10"))
      .Tcp(40000, 80, pktgen::tcp::kSyn)
      .Build();
}

uint64_t Count(const ProbeForwarder& f, int verdict) {
  auto st = f.Stats();
  REQUIRE(st.ok());
  return (*st)[verdict];
}

uint16_t Fold(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i < n; i += 2) sum += (p[i] << 8) | p[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// tshark's first line of `-T fields` output for `frame` (IP checksums
// checked; `fields` gives the -e options and any -d), as an independent
// dissector's reading.
std::string TsharkFields(const Bytes& frame, const std::string& fields) {
  char path[] = "/tmp/ballast-probe-pcap-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(pktgen::WritePcap(path, {frame}).ok());
  const std::string cmd = std::string("tshark -r ") + path +
                          " -o ip.check_checksum:TRUE -T fields -E separator=, " + fields +
                          " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char line[512] = {0};
  const bool got = fgets(line, sizeof(line), p) != nullptr;
  const int rc = pclose(p);
  unlink(path);
  INFO("tshark exit " << rc << ": " << cmd);
  REQUIRE(got);
  return line;
}

TEST_CASE("targets: set, list, remove; ids are range-checked") {
  auto f = Open();
  REQUIRE(f->SetTarget(1, {*IpAddress::Parse("198.18.11.2")}).ok());
  REQUIRE(f->SetTarget(12, {*IpAddress::Parse("2001:db8:12::2")}).ok());
  auto t = f->Targets();
  REQUIRE(t.ok());
  REQUIRE(t->size() == 2);
  CHECK(t->at(1).backend.ToString() == "198.18.11.2");
  CHECK(t->at(12).backend.ToString() == "2001:db8:12::2");
  CHECK(t->at(12).gue_port == 0);
  REQUIRE(f->RemoveTarget(1).ok());
  CHECK(f->Targets()->size() == 1);
  CHECK(f->RemoveTarget(1).code() == absl::StatusCode::kNotFound);
  auto bad = f->SetTarget(BALLAST_MAX_BACKENDS, {*IpAddress::Parse("198.18.11.2")});
  CHECK(bad.message() == "probe target 198.18.11.2: backend id 16384 is out of range 1..16383");
  CHECK(ProbeForwarder::MarkOf(7) == 0x6c620007u);
}

TEST_CASE("unmarked and foreign-marked packets pass untouched; an unknown probe mark is dropped") {
  auto f = Open();
  const Bytes in = Tcp4();
  Run plain = TestRun(*f, in, 0);
  CHECK(plain.action == TC_ACT_OK);
  CHECK(plain.out == in);
  Run foreign = TestRun(*f, in, 0x1234);
  CHECK(foreign.action == TC_ACT_OK);
  CHECK(foreign.out == in);
  CHECK(Count(*f, BALLAST_PROBE_V_PASS) == 2);
  Run unknown = TestRun(*f, in, ProbeForwarder::MarkOf(99));
  CHECK(unknown.action == TC_ACT_SHOT);
  CHECK(Count(*f, BALLAST_PROBE_V_DROP_NO_TARGET) == 1);
}

TEST_CASE("IPv4 probe to an IPv4 backend: IPv4-in-IPv4 with a valid outer checksum") {
  auto f = Open();
  REQUIRE(f->SetTarget(5, {*IpAddress::Parse("198.18.11.2")}).ok());
  const Bytes in = Tcp4();
  Run r = TestRun(*f, in, ProbeForwarder::MarkOf(5));
  CHECK(r.action == TC_ACT_SHOT);  // no route in the empty namespace
  CHECK(Count(*f, BALLAST_PROBE_V_DROP_FIB) == 1);
  REQUIRE(r.out.size() == in.size() + 20);
  const uint8_t* ip = r.out.data() + 14;
  CHECK(pktgen::GetBe16(r.out.data() + 12) == pktgen::kEthIp4);
  CHECK(ip[0] == 0x45);
  CHECK(ip[1] == 0x10);                                   // TOS copied
  CHECK(pktgen::GetBe16(ip + 2) == in.size() - 14 + 20);  // total length
  CHECK((pktgen::GetBe16(ip + 6) & 0x4000) != 0);         // DF copied
  CHECK(ip[9] == pktgen::proto::kIpip);
  CHECK(std::memcmp(ip + 12, Addr::Parse("198.18.0.1").b.data(), 4) == 0);
  CHECK(std::memcmp(ip + 16, Addr::Parse("198.18.11.2").b.data(), 4) == 0);
  CHECK(Fold(ip, 20) == 0);  // header checksum
  CHECK(Bytes(r.out.begin() + 34, r.out.end()) == Bytes(in.begin() + 14, in.end()));

  // tshark, as an independent dissector, reads the same thing: both IP
  // layers, outer 4 (IPIP) then inner 6 (TCP), sources and destinations
  // outer first, checksums good (status 1 = good, 0 = bad, 2 = unverified).
  CHECK(
      TsharkFields(r.out, "-e ip.proto -e ip.src -e ip.dst -e ip.checksum.status -e tcp.dstport") ==
      "4,6,198.18.0.1,198.18.0.1,198.18.11.2,198.18.0.10,1,1,80\n");
}

TEST_CASE("IPv4 probe to an IPv6 backend: IPv4-in-IPv6") {
  auto f = Open();
  REQUIRE(f->SetTarget(6, {*IpAddress::Parse("2001:db8:12::2")}).ok());
  const Bytes in = Tcp4();
  Run r = TestRun(*f, in, ProbeForwarder::MarkOf(6));
  REQUIRE(r.out.size() == in.size() + 40);
  const uint8_t* ip6 = r.out.data() + 14;
  CHECK(pktgen::GetBe16(r.out.data() + 12) == pktgen::kEthIp6);
  CHECK((ip6[0] >> 4) == 6);
  CHECK(pktgen::GetBe16(ip6 + 4) == in.size() - 14);  // payload = the inner packet
  CHECK(ip6[6] == pktgen::proto::kIpip);
  CHECK(std::memcmp(ip6 + 8, Addr::Parse("2001:db8::1").b.data(), 16) == 0);
  CHECK(std::memcmp(ip6 + 24, Addr::Parse("2001:db8:12::2").b.data(), 16) == 0);
  CHECK(Bytes(r.out.begin() + 54, r.out.end()) == Bytes(in.begin() + 14, in.end()));
}

TEST_CASE("IPv6 probe: IPv6-in-IPv6 to an IPv6 backend, dropped for an IPv4 backend") {
  auto f = Open();
  REQUIRE(f->SetTarget(7, {*IpAddress::Parse("2001:db8:11::2")}).ok());
  REQUIRE(f->SetTarget(8, {*IpAddress::Parse("198.18.11.2")}).ok());
  const Bytes in = Tcp6();
  Run r = TestRun(*f, in, ProbeForwarder::MarkOf(7));
  REQUIRE(r.out.size() == in.size() + 40);
  const uint8_t* ip6 = r.out.data() + 14;
  CHECK(ip6[6] == pktgen::proto::kIpv6);
  CHECK(std::memcmp(ip6 + 24, Addr::Parse("2001:db8:11::2").b.data(), 16) == 0);
  CHECK(Bytes(r.out.begin() + 54, r.out.end()) == Bytes(in.begin() + 14, in.end()));

  Run wrong = TestRun(*f, in, ProbeForwarder::MarkOf(8));
  CHECK(wrong.action == TC_ACT_SHOT);
  CHECK(wrong.out == in);
  CHECK(Count(*f, BALLAST_PROBE_V_DROP_FAMILY) == 1);
}

TEST_CASE("GUE VIP: IPv4 probe in IPv4 + UDP to the GUE port, as the lb program sends") {
  auto f = Open();
  REQUIRE(f->SetTarget(9, {*IpAddress::Parse("198.18.11.2"), 6080}).ok());
  auto listed = f->Targets();
  REQUIRE(listed.ok());
  CHECK(listed->at(9).gue_port == 6080);
  const Bytes in = Tcp4();
  Run r = TestRun(*f, in, ProbeForwarder::MarkOf(9));
  CHECK(r.action == TC_ACT_SHOT);  // no route in the empty namespace
  REQUIRE(r.out.size() == in.size() + 28);
  const uint8_t* ip = r.out.data() + 14;
  const uint8_t* udp = ip + 20;
  CHECK(pktgen::GetBe16(r.out.data() + 12) == pktgen::kEthIp4);
  CHECK(ip[0] == 0x45);
  CHECK(ip[1] == 0x10);                                     // TOS copied
  CHECK(pktgen::GetBe16(ip + 2) == in.size() - 14 + 28);    // total length
  CHECK(pktgen::GetBe16(ip + 4) == BALLAST_ENCAP_ID_LAST);  // a probe: never bounced
  CHECK((pktgen::GetBe16(ip + 6) & 0x4000) != 0);           // DF copied
  CHECK(ip[9] == pktgen::proto::kUdp);
  CHECK(std::memcmp(ip + 12, Addr::Parse("198.18.0.1").b.data(), 4) == 0);
  CHECK(std::memcmp(ip + 16, Addr::Parse("198.18.11.2").b.data(), 4) == 0);
  CHECK(Fold(ip, 20) == 0);  // header checksum
  const uint16_t sport = pktgen::GetBe16(udp);
  CHECK(sport >= 0xC000);
  CHECK(pktgen::GetBe16(udp + 2) == 6080);
  CHECK(pktgen::GetBe16(udp + 4) == in.size() - 14 + 8);  // UDP length
  CHECK(pktgen::GetBe16(udp + 6) == 0);                   // no checksum
  CHECK(Bytes(r.out.begin() + 42, r.out.end()) == Bytes(in.begin() + 14, in.end()));

  // The source port is the probe connection's: the same for its next
  // packet, spread over connections (here: client ports).
  CHECK(pktgen::GetBe16(TestRun(*f, in, ProbeForwarder::MarkOf(9)).out.data() + 34) == sport);
  std::set<uint16_t> ports;
  for (uint16_t cport = 40000; cport < 40064; ++cport) {
    const Bytes other = PacketBuilder()
                            .Eth(kA, kB)
                            .Ip4(Addr::Parse("198.18.0.1"), Addr::Parse("198.18.0.10"))
                            .Tcp(cport, 80, pktgen::tcp::kSyn)
                            .Build();
    ports.insert(pktgen::GetBe16(TestRun(*f, other, ProbeForwarder::MarkOf(9)).out.data() + 34));
  }
  INFO(ports.size() << " distinct source ports for 64 connections");
  CHECK(ports.size() >= 48);

  // tshark, as an independent dissector, reads IP in UDP with good checksums.
  CHECK(TsharkFields(r.out,
                     "-d udp.port==6080,ip -e ip.proto -e ip.src -e ip.dst "
                     "-e ip.checksum.status -e udp.dstport -e tcp.dstport") ==
        "17,6,198.18.0.1,198.18.0.1,198.18.11.2,198.18.0.10,1,1,6080,80\n");
}

TEST_CASE("GUE VIP: IPv6 probe in IPv6 + UDP; an IPv4 probe to an IPv6 backend too") {
  auto f = Open();
  REQUIRE(f->SetTarget(10, {*IpAddress::Parse("2001:db8:11::2"), 6080}).ok());
  for (const Bytes& in : {Tcp6(), Tcp4()}) {
    Run r = TestRun(*f, in, ProbeForwarder::MarkOf(10));
    REQUIRE(r.out.size() == in.size() + 48);
    const uint8_t* ip6 = r.out.data() + 14;
    const uint8_t* udp = ip6 + 40;
    CHECK(pktgen::GetBe16(r.out.data() + 12) == pktgen::kEthIp6);
    CHECK(pktgen::GetBe16(ip6 + 4) == in.size() - 14 + 8);  // payload: UDP + the probe
    CHECK(ip6[6] == pktgen::proto::kUdp);
    CHECK(std::memcmp(ip6 + 8, Addr::Parse("2001:db8::1").b.data(), 16) == 0);
    CHECK(std::memcmp(ip6 + 24, Addr::Parse("2001:db8:11::2").b.data(), 16) == 0);
    CHECK(pktgen::GetBe16(udp) >= 0xC000);
    CHECK(pktgen::GetBe16(udp + 2) == 6080);
    CHECK(pktgen::GetBe16(udp + 4) == in.size() - 14 + 8);
    CHECK(pktgen::GetBe16(udp + 6) == 0);  // RFC 6935, as the lb program
    CHECK(Bytes(r.out.begin() + 62, r.out.end()) == Bytes(in.begin() + 14, in.end()));
  }
}

}  // namespace
}  // namespace ballast::probes

int main(int argc, char** argv) {
  // A private, empty network namespace: no routes, so nothing leaves and the
  // FIB lookup result is known. Needs root (CAP_SYS_ADMIN, CAP_BPF).
  if (unshare(CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "probes_bpf_tests: FAIL: unshare(CLONE_NEWNET): %s (run as root)\n",
                 std::strerror(errno));
    return 1;
  }
  return Catch::Session().run(argc, argv);
}
