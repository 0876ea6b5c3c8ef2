// lbsim: connections, SYNs and their choices of backend (sim_engine.h).
#include <algorithm>
#include <cmath>

#include "agent/maglev/maglev.h"
#include "bpf/include/ballast_flow_hash.h"
#include "tools/lbsim/sim_engine.h"

namespace ballast::lbsim::internal {

// ---- Connections ------------------------------------------------------------

uint32_t Simulation::NewConn() {
  uint32_t ci;
  if (!free_.empty()) {
    ci = free_.back();
    free_.pop_back();
  } else {
    ci = static_cast<uint32_t>(conns_.size());
    conns_.emplace_back();
  }
  Conn& c = conns_[ci];
  const uint32_t gen = c.gen + 1;
  c = Conn{};
  c.gen = gen;
  return ci;
}

void Simulation::Free(uint32_t ci) {
  Conn& c = conns_[ci];
  if (c.state == ConnState::kAwaitResponse || c.state == ConnState::kOpen) RemoveLive(ci);
  c.state = ConnState::kFree;
  ++c.gen;
  free_.push_back(ci);
}

void Simulation::AddLive(uint32_t ci, int b) {
  std::vector<uint32_t>& live = backends_[b].live;
  conns_[ci].live_pos = static_cast<uint32_t>(live.size());
  live.push_back(ci);
}

void Simulation::RemoveLive(uint32_t ci) {
  std::vector<uint32_t>& live = backends_[conns_[ci].backend].live;
  const uint32_t pos = conns_[ci].live_pos;
  const uint32_t last = live.back();
  live[pos] = last;
  conns_[last].live_pos = pos;
  live.pop_back();
}

void Simulation::OnArrival(int64_t t) {
  // The next arrival first, so the traffic stream does not depend on what
  // happens to this connection.
  Push(t + std::max<int64_t>(1, SecondsToNs(traffic_rng_.Exponential(1.0 / sc_.rate))),
       Ev::kArrival);
  const uint32_t ci = NewConn();
  Conn& c = conns_[ci];
  c.logical_start = t;
  c.measured = t >= warmup_;
  c.retries_left = static_cast<uint8_t>(sc_.retries);
  const double u = traffic_rng_.Uniform01();
  c.cls = 0;
  while (c.cls + 1u < class_cdf_.size() && u >= class_cdf_[c.cls]) ++c.cls;
  c.rng = FlowRng(traffic_rng_.Bits());
  ++r_.total_connections;
  if (c.measured) ++r_.connections;
  StartAttempt(ci, t);
}

void Simulation::StartAttempt(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  c.hash = c.rng.Bits();  // a new 5-tuple (source port)
  c.router = static_cast<uint8_t>((c.hash >> 40) % static_cast<uint64_t>(no_));
  c.first_syn = t;
  c.syn_count = 0;
  c.backend = -1;
  c.state = ConnState::kSynSent;
  if (c.measured) ++r_.attempts;
  SendSyn(ci, t, /*first=*/true);
}

int64_t Simulation::ServiceTime(Conn& c, const BackendSim& b) {
  double s = sc_.classes[c.cls].latency.Sample(c.rng) * b.factor;
  int64_t ns = SecondsToNs(s) + rtt_;
  if (b.loss > 0 && c.rng.Bernoulli(b.loss)) ns += Ns(sc_.loss_penalty);
  return ns;
}

int Simulation::NextChoice(uint64_t hash, int first, int last) const {
  int second = -1, third = -1;
  for (uint32_t seed = 1; seed <= BALLAST_CHOICE_SEEDS; ++seed) {
    const int id = Pick(ballast_choice_hash(static_cast<uint32_t>(hash), seed));
    if (id < 0 || id == first || id == second) continue;
    if (second < 0) {
      second = id;
      continue;
    }
    third = id;
    break;
  }
  if (last == first) return second >= 0 ? second : first;
  if (last == second) return third >= 0 ? third : first;
  return first;
}

// A SYN reaches the data plane (bpf/lib/conntrack.h conntrack_select).
void Simulation::SendSyn(uint32_t ci, int64_t t, bool first) {
  Conn& c = conns_[ci];
  std::vector<health::CounterSnapshot>& ctr = counters_[c.router];
  const bool flow_alive = !first && c.backend >= 0 && t - c.last_syn <= kSynIdleNs;
  if (!flow_alive) {
    // A new flow: the table's pick.
    c.backend = Pick(c.hash);
    c.counted = false;  // a SYN alone is no new flow yet
    if (c.backend >= 0) {
      ++ctr[c.backend].packets;
      c.flow_start = t;
    }
  } else {
    // A retransmitted SYN: counted against the backend that did not answer
    // (and the connection, as a new flow, if it was not yet); it follows
    // the current table unless re-steering is off.
    ++ctr[c.backend].syn_retransmits;
    ++ctr[c.backend].packets;
    if (!c.counted) ++ctr[c.backend].new_flows;
    c.counted = true;
    if (c.measured) ++r_.syn_retransmits;
    const int first = Pick(c.hash);
    if (sc_.second_chance && first >= 0) {
      // The client's retransmission (syn_rto is above syn_retry_ms): the
      // next choice after the backend that did not answer.
      const int next = NextChoice(c.hash, first, c.backend);
      if (next != c.backend) {
        c.backend = next;
        c.flow_start = t;
        ++ctr[c.backend].new_flows;
        if (c.measured) ++r_.resteered_syns;
      }
    } else if (sc_.resteer) {
      const int now_pick = first;
      if (now_pick >= 0 && now_pick != c.backend) {
        c.backend = now_pick;
        c.flow_start = t;
        ++ctr[c.backend].new_flows;
        if (c.measured) ++r_.resteered_syns;
      }
    }
  }
  c.last_syn = t;
  int bounces = 0;                           // second-chance bounces of this SYN
  if (c.backend < 0) return SynLost(ci, t);  // no backend: nothing answers

  if (backends_[c.backend].bad > 0 && !c.hit_faulty) {
    c.hit_faulty = true;
    if (c.measured) ++r_.hit_faulty;
  }
  while (backends_[c.backend].crash_refuse > 0) {
    const int first = Pick(c.hash);
    if (!sc_.second_chance || bounces >= BALLAST_BOUNCES_MAX || first < 0) {
      // The host answers RST straight to the client (DSR: the data plane
      // sees no ACK, so the handshake stays incomplete).
      return AttemptFailed(ci, t + rtt_, Failure::kNew);
    }
    // Second chance: the host bounces the SYN back to its router (half a
    // round trip each way), which sends it to the next choice; with no
    // other choice, back to the same host as its last hop.
    ++ctr[c.backend].refused_syns;
    const int next = NextChoice(c.hash, first, c.backend);
    bounces = next == c.backend ? BALLAST_BOUNCES_MAX : bounces + 1;
    c.backend = next;
    c.counted = false;  // the bounce rewrote the slot
    ++ctr[c.backend].packets;
    if (c.measured) ++r_.bounced_syns;
    t += rtt_;
  }
  BackendSim& b = backends_[c.backend];
  if (b.crash_blackhole > 0 || (b.loss > 0 && c.rng.Bernoulli(b.loss))) {
    return SynLost(ci, t);
  }
  // Handshake: SYN-ACK to the client, its ACK back through the data plane.
  const int64_t hs = rtt_ + SecondsToNs(sc_.accept.Sample(c.rng) * b.factor);
  const int64_t ack = t + hs;
  if (!c.counted) ++ctr[c.backend].new_flows;
  c.counted = true;
  ++ctr[c.backend].handshake_count;
  ctr[c.backend].handshake_ns_sum += static_cast<uint64_t>(ack - c.flow_start);
  ctr[c.backend].packets += 2;
  c.state = ConnState::kAwaitResponse;
  c.req_start = ack;
  AddLive(ci, c.backend);
  const int64_t timeout = ack + Ns(sc_.request_timeout);
  if (b.hang > 0) {
    c.waiting = true;
    return Push(timeout, Ev::kRequestTimeout, ci, c.gen);
  }
  const int64_t answer = ack + ServiceTime(c, b);
  if (answer > timeout) return Push(timeout, Ev::kRequestTimeout, ci, c.gen);
  Push(answer, Ev::kResponse, ci, c.gen);
}

void Simulation::SynLost(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  (void)t;
  // SYNs at first_syn + rto * (2^k - 1), k = 1, 2, ...
  const int64_t rto = Ns(sc_.syn_rto);
  const int k = c.syn_count + 1;
  const int64_t next = k >= 30 ? INT64_MAX / 4 : c.first_syn + rto * ((int64_t{1} << k) - 1);
  const int64_t give_up = c.first_syn + Ns(sc_.connect_timeout);
  if (next >= give_up) return Push(give_up, Ev::kConnectTimeout, ci, c.gen);
  ++c.syn_count;
  Push(next, Ev::kSynRetransmit, ci, c.gen);
}

void Simulation::OnResponse(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  health::CounterSnapshot& ctr = counters_[c.router][c.backend];
  ++ctr.first_response_count;
  ctr.first_response_ns_sum += static_cast<uint64_t>(t - c.req_start);
  ctr.packets += 2;
  if (c.measured) r_.latency_ns.Add(static_cast<uint64_t>(t - c.logical_start));
  c.state = ConnState::kOpen;
  c.waiting = false;
  const int64_t life = SecondsToNs(sc_.classes[c.cls].lifetime.Sample(c.rng));
  Push(t + std::max<int64_t>(1, life), Ev::kClose, ci, c.gen);
}

void Simulation::OnRequestTimeout(uint32_t ci, int64_t t) {
  Conn& c = conns_[ci];
  // The client gives up and resets the connection.
  ++counters_[c.router][c.backend].client_rsts;
  ++counters_[c.router][c.backend].packets;
  AttemptFailed(ci, t, Failure::kRequest);
}

void Simulation::OnClose(uint32_t ci) { Succeed(ci); }

void Simulation::Succeed(uint32_t ci) {
  if (conns_[ci].measured) ++r_.succeeded;
  Free(ci);
}

void Simulation::Broken(uint32_t ci, bool drain) {
  if (conns_[ci].measured) {
    ++r_.broken;
    if (drain) ++r_.broken_drain;
  }
  Free(ci);
}

void Simulation::AttemptFailed(uint32_t ci, int64_t t, Failure why) {
  Conn& c = conns_[ci];
  if (c.retries_left > 0) {
    --c.retries_left;
    if (c.state == ConnState::kAwaitResponse || c.state == ConnState::kOpen) RemoveLive(ci);
    c.state = ConnState::kRetryWait;
    ++c.gen;
    Push(t + Ns(sc_.retry_backoff), Ev::kRetry, ci, c.gen);
    return;
  }
  if (c.measured) {
    if (why == Failure::kNew) {
      ++r_.failed_new;
    } else {
      ++r_.failed_request;
    }
  }
  Free(ci);
}

}  // namespace ballast::lbsim::internal
