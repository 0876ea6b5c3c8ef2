// A blind spoofer (who does not see the client's traffic) cannot move or end
// an established flow: a SYN on an active flow goes to the flow's backend
// and changes nothing; a RST or FIN changes the flow only within
// BALLAST_SEQ_WINDOW of the client's next sequence number. Everything is
// still forwarded: the backend's TCP stack judges it (RFC 5961).
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>

#include "tests/bpf/lb_fixture.h"

namespace ballast::bpftest {
namespace {

namespace tcp = pktgen::tcp;

constexpr uint16_t kPort = 41500;
const ballast_flow_key kKey = FlowKey(Lab::Client4(), Lab::Vip4(), kPort, 80, IPPROTO_TCP);

Bytes Segment(uint8_t flags, uint32_t seq, uint32_t ack, size_t payload = 0) {
  return FromClient4().Tcp(kPort, 80, flags, seq, ack).PayloadSize(payload).Build();
}

ballast_flow FlowOf(const LbFixture& fx) {
  const auto f = fx.Flow(kKey);
  REQUIRE(f);
  return *f;
}

// SETUP: a connection on backend 1 (client ISN 100), 10 bytes sent, past
// its probation (in `flows`), then the table moved to backend 2: the flow's
// next choice by the table is not its backend, so a moved flow shows.
void Establish(LbFixture& fx) {
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 100, 0))) == 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck, 101, 5001))) == 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 101, 5001, 10))) == 1);
  WaitOutProbation();
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck, 111, 5001))) == 1);
  REQUIRE(fx.FlowMap(kKey) == "flows");
  const ballast_flow f = FlowOf(fx);
  REQUIRE(f.state == BALLAST_FLOW_ESTABLISHED);
  REQUIRE((f.flags & BALLAST_FLOW_F_SEQ_KNOWN) != 0);
  REQUIRE(f.seq_next == 111);
  fx.SetUniformTable(kVipTcp4, 2);
}

TEST_CASE("A RST or FIN outside the window is forwarded and leaves the flow established",
          "[lb][spoof]") {
  LbFixture fx;
  Establish(fx);
  const uint32_t w = BALLAST_SEQ_WINDOW;
  struct Case {
    const char* what;
    uint8_t flags;
    uint32_t seq;
  };
  for (const Case& c : {Case{"RST far away", tcp::kRst, 111u + (1u << 30)},
                        Case{"RST just past the window", tcp::kRst, 111u + w + 1},
                        Case{"RST just behind the window", tcp::kRst | tcp::kAck, 111u - w - 1},
                        Case{"FIN far away", tcp::kFin | tcp::kAck, 111u + (1u << 31)},
                        Case{"FIN just past the window", tcp::kFin | tcp::kAck, 111u + w + 1}}) {
    INFO(c.what);
    const Outcome o = fx.Run(Segment(c.flags, c.seq, 5001));
    CHECK(o.verdict == BALLAST_V_GUARDED_TX);
    CHECK(BackendOf(fx, o) == 1);  // the backend judges it
    const ballast_flow f = FlowOf(fx);
    CHECK(f.state == BALLAST_FLOW_ESTABLISHED);
    CHECK(f.backend_id == 1);
    CHECK(f.seq_next == 111);
  }
  CHECK(fx.BackendStats(1).client_rsts == 0);
  CHECK(fx.Verdicts()[BALLAST_V_GUARDED_TX] == 5);

  // A segment beyond the window is forwarded but does not move seq_next
  // (else a spoofer could first move it, then reset); one within it does.
  CHECK(fx.Run(Segment(tcp::kAck | tcp::kPsh, 111 + w + 100, 5001, 10)).verdict == BALLAST_V_TX);
  CHECK(FlowOf(fx).seq_next == 111);
  CHECK(fx.Run(Segment(tcp::kAck | tcp::kPsh, 111, 5001, 1000)).verdict == BALLAST_V_TX);
  CHECK(FlowOf(fx).seq_next == 1111);
  // A retransmission (behind) does not move it back.
  CHECK(fx.Run(Segment(tcp::kAck | tcp::kPsh, 111, 5001, 10)).verdict == BALLAST_V_TX);
  CHECK(FlowOf(fx).seq_next == 1111);

  SECTION("the client's own RST closes the flow, and counts once") {
    const Outcome o = fx.Run(Segment(tcp::kRst, 1111, 0));
    CHECK(o.verdict == BALLAST_V_TX);
    CHECK(FlowOf(fx).state == BALLAST_FLOW_CLOSING);
    CHECK(fx.BackendStats(1).client_rsts == 1);
  }
  SECTION("the client's FIN, reordered ahead of data still in the window, closes the flow") {
    const Outcome o = fx.Run(Segment(tcp::kFin | tcp::kAck, 1111 + 5000, 5001));
    CHECK(o.verdict == BALLAST_V_TX);
    CHECK(FlowOf(fx).state == BALLAST_FLOW_CLOSING);
    CHECK(FlowOf(fx).backend_id == 1);
  }
  SECTION("a RST just inside the window behind is taken (the client's view may lag)") {
    CHECK(fx.Run(Segment(tcp::kRst, 1111 - w, 0)).verdict == BALLAST_V_TX);
    CHECK(FlowOf(fx).state == BALLAST_FLOW_CLOSING);
  }
}

TEST_CASE("A SYN on an active flow goes to the flow's backend and moves nothing", "[lb][spoof]") {
  LbFixture fx;
  Establish(fx);

  // A stray or spoofed SYN (any ISN): to backend 1, whose stack answers it
  // with a challenge ACK; the flow stays, and so do the client's packets.
  for (int i = 0; i < 3; ++i) {
    const Outcome o = fx.Run(Segment(tcp::kSyn, 900000 + i, 0));
    CHECK(o.verdict == BALLAST_V_GUARDED_TX);
    CHECK(BackendOf(fx, o) == 1);
    CHECK(fx.Run(Segment(tcp::kAck | tcp::kPsh, 111, 5001, 10)).verdict == BALLAST_V_TX);
  }
  const ballast_flow f = FlowOf(fx);
  CHECK(f.state == BALLAST_FLOW_ESTABLISHED);
  CHECK(f.backend_id == 1);
  // Its slot names backend 1, so that backend could bounce it (the
  // client's next packet frees it, see the port-reuse case below).
  CHECK(fx.Run(Segment(tcp::kSyn, 900003, 0)).verdict == BALLAST_V_GUARDED_TX);
  REQUIRE(fx.Handshake(kKey));
  CHECK(fx.Handshake(kKey)->backend_id == 1);
  // The spoofer's own completing ACK goes to the flow's backend too.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 900001, 1))) == 1);
  CHECK(FlowOf(fx).backend_id == 1);
  CHECK(fx.BackendStats(2).packets == 0);

  SECTION("on a flow idle for syn_reuse_idle, a SYN starts a new connection") {
    ballast_flow aged = FlowOf(fx);
    const uint64_t reuse_ns = dataplane::Settings{}.syn_reuse_idle_ns;
    REQUIRE(reuse_ns == 60'000'000'000ull);
    aged.last_seen_ns = dataplane::Dataplane::MonotonicNowNs() - reuse_ns - 1'000'000'000ull;
    fx.SetFlow(kKey, aged);
    const Outcome o = fx.Run(Segment(tcp::kSyn, 7000, 0));
    CHECK(o.verdict == BALLAST_V_TX);
    CHECK(BackendOf(fx, o) == 2);
    CHECK_FALSE(fx.Flow(kKey));
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 7001, 1))) == 2);
    CHECK(FlowOf(fx).backend_id == 2);
  }
  SECTION("on a closing flow (the client's FIN), a SYN reopens it on its backend") {
    REQUIRE(fx.Run(Segment(tcp::kFin | tcp::kAck, 111, 5001)).verdict == BALLAST_V_TX);
    REQUIRE(FlowOf(fx).state == BALLAST_FLOW_CLOSING);
    const Outcome o = fx.Run(Segment(tcp::kSyn, 7000, 0));
    CHECK(o.verdict == BALLAST_V_GUARDED_TX);
    CHECK(BackendOf(fx, o) == 1);
    // The new connection completes there, and the flow is its own.
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 7001, 1))) == 1);
    CHECK(FlowOf(fx).state == BALLAST_FLOW_ESTABLISHED);
    CHECK(FlowOf(fx).seq_next == 7001);
    CHECK(FlowOf(fx).backend_id == 1);
  }
  SECTION("on a closing flow past its linger, a SYN starts a new connection") {
    REQUIRE(fx.Run(Segment(tcp::kFin | tcp::kAck, 111, 5001)).verdict == BALLAST_V_TX);
    ballast_flow aged = FlowOf(fx);
    aged.last_seen_ns =
        dataplane::Dataplane::MonotonicNowNs() - dataplane::Settings{}.linger_ns - 1'000'000'000ull;
    fx.SetFlow(kKey, aged);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 7000, 0))) == 2);
    CHECK_FALSE(fx.Flow(kKey));
  }
  SECTION("a draining backend keeps its flow against a SYN until its deadline") {
    // (until 2026-12-07 one SYN took a draining backend's connection away)
    const uint64_t now = dataplane::Dataplane::MonotonicNowNs();
    fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, now + 3600ull * 1000000000ull);
    const Outcome o = fx.Run(Segment(tcp::kSyn, 7000, 0));
    CHECK(o.verdict == BALLAST_V_GUARDED_TX);
    CHECK(BackendOf(fx, o) == 1);
    CHECK(FlowOf(fx).backend_id == 1);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 111, 5001, 10))) == 1);
    fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, 0);  // no deadline: the same
    CHECK(fx.Run(Segment(tcp::kSyn, 7001, 0)).verdict == BALLAST_V_GUARDED_TX);
    CHECK(FlowOf(fx).backend_id == 1);
    // Past its deadline, a SYN is a new connection on the table's pick.
    fx.SetBackendState(1, BALLAST_BACKEND_DRAINING, now - 1);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 7002, 0))) == 2);
    CHECK_FALSE(fx.Flow(kKey));
  }
  SECTION("syn_reuse_idle_ns 0 (an older agent): every SYN starts a new connection") {
    dataplane::Settings s = *fx.dp().GetSettings();
    s.syn_reuse_idle_ns = 0;
    fx.SetSettings(s);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 7000, 0))) == 2);
    CHECK_FALSE(fx.Flow(kKey));
  }
}

TEST_CASE("A port reused after the backend's RST: kept on the backend, no samples either way",
          "[lb][spoof]") {
  // The backend reset the connection of Establish() after its request (the
  // router does not see that RST) and the client, which keeps no TIME_WAIT
  // after a RST, reuses the port at once: the SYN is kept on backend 1,
  // whose listener takes it. A SYN on a live tuple is also what a spoofer
  // who knows the tuple sends, so neither it nor the ACK that "completes"
  // it gives a sample: no new flow, no handshake time (a delayed forged ACK
  // made it any length), no first response (before, the flow's sample
  // restarted and a forged payload and ACK could set it).
  LbFixture fx;
  Establish(fx);
  const ballast_backend_stats before = fx.BackendStats(1);
  REQUIRE(before.handshake_count == 1);
  REQUIRE(before.first_response_count == 0);  // reset: no response

  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 700000, 0))) == 1);
  CHECK((FlowOf(fx).flags & BALLAST_FLOW_F_REOPENED) != 0);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 700001, 9001))) == 1);
  CHECK((FlowOf(fx).flags & BALLAST_FLOW_F_REOPENED) == 0);
  CHECK_FALSE(fx.Handshake(kKey));  // the slot is freed
  // The request, then the client's ACK of the response.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 700001, 9001, 20))) == 1);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 700021, 9101))) == 1);
  const ballast_backend_stats after = fx.BackendStats(1);
  CHECK(after.new_flows == before.new_flows);
  CHECK(after.handshake_count == before.handshake_count);
  CHECK(after.handshake_ns_sum == before.handshake_ns_sum);
  CHECK(after.first_response_count == before.first_response_count);
  // The flow kept its backend and its window: the old connection's RST
  // still closes it, the new one's far away does not.
  CHECK(FlowOf(fx).backend_id == 1);
  CHECK(FlowOf(fx).seq_next == 111);
  CHECK(fx.Run(Segment(tcp::kRst, 700021, 0)).verdict == BALLAST_V_GUARDED_TX);
}

TEST_CASE("SYNs spoofed on a live flow count nothing against its backend", "[lb][spoof]") {
  // A stranger who knows a live tuple sends SYNs on it, each new or
  // repeated: they reach the flow's backend (which answers with a
  // challenge ACK) and are never completed. Counted as new flows and
  // retransmissions, they made that backend alone look like it leaves
  // handshakes unfinished (the attack suite's live_syn_targeted: score 100
  // -> 60, weight halved).
  LbFixture fx;
  Establish(fx);
  const ballast_backend_stats before = fx.BackendStats(1);
  for (uint32_t i = 0; i < 50; ++i) {
    const uint32_t isn = 900000 + (i / 2) * 1000;  // each ISN twice: a "retransmission"
    CHECK(fx.Run(Segment(tcp::kSyn, isn, 0)).verdict == BALLAST_V_GUARDED_TX);
  }
  const ballast_backend_stats after = fx.BackendStats(1);
  CHECK(after.new_flows == before.new_flows);
  CHECK(after.syn_retransmits == before.syn_retransmits);
  CHECK(after.handshake_count == before.handshake_count);
  CHECK(FlowOf(fx).backend_id == 1);
}

TEST_CASE("A flow written without seq_next takes it from its next packet", "[lb][spoof]") {
  LbFixture fx;
  Establish(fx);
  // What an older build's flow looks like: no SEQ_KNOWN, the union zero.
  ballast_flow old = FlowOf(fx);
  old.flags &= ~BALLAST_FLOW_F_SEQ_KNOWN;
  old.start_ns = 0;
  fx.SetFlow(kKey, old);
  CHECK(fx.Run(Segment(tcp::kAck | tcp::kPsh, 5000, 5001, 10)).verdict == BALLAST_V_TX);
  const ballast_flow f = FlowOf(fx);
  CHECK((f.flags & BALLAST_FLOW_F_SEQ_KNOWN) != 0);
  CHECK(f.seq_next == 5010);
  CHECK(fx.Run(Segment(tcp::kRst, 5010 + (1u << 30), 0)).verdict == BALLAST_V_GUARDED_TX);
  CHECK(FlowOf(fx).state == BALLAST_FLOW_ESTABLISHED);
}

TEST_CASE("A SYN spoofed on an adopted flow's tuple does not take its next packet elsewhere",
          "[lb][spoof]") {
  LbFixture fx;
  SetUpLab(fx);
  // A flow adopted mid-stream on backend 1 (ECMP moved it here), then the
  // table moves the tuple to backend 2.
  fx.SetUniformTable(kVipTcp4, 1);
  REQUIRE(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 900000, 5001, 10))) == 1);
  REQUIRE(fx.FlowMap(kKey) == "adopted_flows");
  fx.SetUniformTable(kVipTcp4, 2);
  // A blind spoofer's SYN on the tuple (its own ISN) goes by the table and
  // takes a slot...
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 4242, 0))) == 2);
  REQUIRE(fx.Handshake(kKey));
  CHECK(fx.Handshake(kKey)->isn == 4242);
  // ...but the client's next packets do not follow its ISN: they stay on
  // the adopted flow's backend, and the slot waits for its own ACK.
  for (uint32_t seq : {900010u, 900020u, 900030u}) {
    INFO("client seq " << seq);
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, seq, 5001, 10))) == 1);
  }
  CHECK(fx.BackendStats(2).handshake_count == 0);
  CHECK(fx.Handshake(kKey).has_value());
  CHECK(fx.FlowMap(kKey) == "adopted_flows");
  // The ACK that does follow the SYN (a real new connection on the tuple)
  // completes it on the SYN's backend, as does one after data in the SYN
  // (TCP Fast Open, next case).
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 4243, 1))) == 2);
  CHECK(fx.BackendStats(2).handshake_count == 1);
  CHECK(fx.FlowMap(kKey) == "adopted_flows");  // on probation (probation.h)
  CHECK(fx.Flow(kKey)->backend_id == 2);
  CHECK((fx.Flow(kKey)->flags & BALLAST_FLOW_F_PROBATION) != 0);
}

TEST_CASE("The completing ACK may follow data in the SYN (TCP Fast Open), not more",
          "[lb][spoof]") {
  LbFixture fx;
  SetUpLab(fx);
  fx.SetUniformTable(kVipTcp4, 1);
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kSyn, 7000, 0, 1000))) == 1);
  fx.SetUniformTable(kVipTcp4, 2);
  // More than 65,536 past the SYN's sequence number is not its ACK:
  // adopted, by the table.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 7000 + 65537, 1))) == 2);
  CHECK(fx.FlowMap(kKey) == "adopted_flows");
  // The real ACK, after the SYN's 1,000 bytes, completes on the SYN's.
  CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 8001, 1))) == 1);
  CHECK((fx.Flow(kKey)->flags & BALLAST_FLOW_F_PROBATION) != 0);
  CHECK(fx.BackendStats(1).handshake_count == 1);
}

TEST_CASE("A guessed in-window RST followed by a SYN moves nothing", "[lb][spoof]") {
  // (until 2026-12-07 the RST closed the flow and the SYN started a new
  // connection on the table's pick: the spoofer's ACK then took the live
  // connection's tuple to backend 2)
  LbFixture fx;
  Establish(fx);
  for (const uint8_t close : {tcp::kRst, static_cast<uint8_t>(tcp::kFin | tcp::kAck)}) {
    INFO("closed with flags " << int{close});
    REQUIRE(BackendOf(fx, fx.Run(Segment(close, 111 + 1000, 5001))) == 1);  // in the window
    REQUIRE(FlowOf(fx).state == BALLAST_FLOW_CLOSING);
    const Outcome syn = fx.Run(Segment(tcp::kSyn, 3'000'000'000u, 0));
    CHECK(syn.verdict == BALLAST_V_GUARDED_TX);
    CHECK(BackendOf(fx, syn) == 1);
    // The live connection goes on where it was.
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck | tcp::kPsh, 111, 5001, 10))) == 1);
    // So does the spoofer's completing ACK.
    CHECK(BackendOf(fx, fx.Run(Segment(tcp::kAck, 3'000'000'001u, 1))) == 1);
    CHECK(FlowOf(fx).backend_id == 1);
    CHECK(fx.BackendStats(2).packets == 0);
  }
}

}  // namespace
}  // namespace ballast::bpftest
