// lbsim: fault steps (kill, hang, slow, drain...) and their effect on
// backends and connections (sim_engine.h).
#include <algorithm>
#include <cmath>

#include "agent/maglev/maglev.h"
#include "bpf/include/ballast_flow_hash.h"
#include "tools/lbsim/sim_engine.h"

namespace ballast::lbsim::internal {

// ---- Faults -------------------------------------------------------------------

void Simulation::Recompute(BackendSim& b) {
  b.factor = 1.0;
  double keep = 1.0;
  for (const auto& [f, fl] : b.slow) {
    b.factor *= fl.first;
    keep *= 1.0 - fl.second;
  }
  b.loss = 1.0 - keep;
}

// Every connection past its handshake on backend bi ends: the ones still
// waiting for their answer failed (and may retry), the answered ones broke.
void Simulation::BreakAll(int bi, int64_t t, bool drain) {
  std::vector<uint32_t> live = backends_[bi].live;  // copy: Free() edits it
  for (uint32_t ci : live) {
    if (conns_[ci].state == ConnState::kAwaitResponse) {
      AttemptFailed(ci, t, Failure::kRequest);
    } else {
      Broken(ci, drain);
    }
  }
}

void Simulation::StartHang(int bi, int64_t t) {
  BackendSim& b = backends_[bi];
  ++b.hang_epoch;
  for (uint32_t ci : b.live) {
    Conn& c = conns_[ci];
    if (c.state != ConnState::kAwaitResponse || c.waiting) continue;
    c.waiting = true;
    ++c.gen;  // the scheduled answer will not come
    Push(std::max(t, c.req_start + Ns(sc_.request_timeout)), Ev::kRequestTimeout, ci, c.gen);
  }
  // Answered connections stall; their clients give up after request_timeout.
  Push(t + Ns(sc_.request_timeout), Ev::kHangCheck, static_cast<uint32_t>(bi), b.hang_epoch);
}

void Simulation::EndHang(int bi, int64_t t) {
  BackendSim& b = backends_[bi];
  ++b.hang_epoch;
  for (uint32_t ci : b.live) {
    Conn& c = conns_[ci];
    if (!c.waiting) continue;
    c.waiting = false;
    const int64_t timeout = c.req_start + Ns(sc_.request_timeout);
    const int64_t answer = t + ServiceTime(c, b);
    if (answer >= timeout) continue;  // its timeout event stands
    ++c.gen;
    Push(answer, Ev::kResponse, ci, c.gen);
  }
}

void Simulation::UpdateOnset(int bi, int64_t t, bool was_bad) {
  BackendSim& b = backends_[bi];
  const bool bad = b.bad > 0;
  if (!was_bad && bad) {
    b.onset_open = b.weight > 0;
    b.onset_t = t;
    b.onset_weight = b.weight;
    b.steered = false;
    b.onset_counted = b.onset_open && t >= warmup_;
    if (b.onset_counted) ++r_.onsets;
  } else if (was_bad && !bad) {
    b.onset_open = false;
  }
}

void Simulation::OnFault(const FaultStep& s, int64_t t) {
  const Fault& f = sc_.faults[s.fault];
  BackendSim& b = backends_[s.backend];
  const int d = s.start ? 1 : -1;
  const bool was_bad = b.bad > 0;
  switch (f.kind) {
    case FaultKind::kCrash:
    case FaultKind::kFlap:
    case FaultKind::kZone: {
      const bool was_down = b.crash_refuse + b.crash_blackhole > 0;
      (f.mode == CrashMode::kRefuse ? b.crash_refuse : b.crash_blackhole) += d;
      b.bad += d;
      if (s.start && !was_down) BreakAll(s.backend, t, false);
      break;
    }
    case FaultKind::kHang: {
      const bool was_hung = b.hang > 0;
      b.hang += d;
      b.bad += d;
      if (!was_hung && b.hang > 0) StartHang(s.backend, t);
      if (was_hung && b.hang == 0) EndHang(s.backend, t);
      break;
    }
    case FaultKind::kBrownout:
    case FaultKind::kSlowdown:
      if (s.start) {
        b.slow.push_back({s.fault, {f.latency_factor, f.loss}});
      } else {
        for (size_t i = 0; i < b.slow.size(); ++i) {
          if (b.slow[i].first == s.fault) {
            b.slow.erase(b.slow.begin() + static_cast<std::ptrdiff_t>(i));
            break;
          }
        }
      }
      if (f.kind == FaultKind::kBrownout) b.bad += d;
      Recompute(b);
      break;
    case FaultKind::kBlind:
      b.blind[f.observer] += d;
      break;
    case FaultKind::kDrain: {
      b.draining += d;
      ++b.drain_epoch;
      if (s.start && b.draining == 1) {
        Push(t + Ns(f.deadline), Ev::kDrainCheck, static_cast<uint32_t>(s.backend), b.drain_epoch);
      }
      // An operator's drain is programmed at once (lbctl backend drain).
      std::vector<uint32_t> w(nb_);
      for (int i = 0; i < nb_; ++i) w[i] = backends_[i].weight;
      w[s.backend] = b.draining > 0 ? 0 : (sc_.health ? w[s.backend] : sc_.weight);
      if (b.draining > 0 || !sc_.health) {
        if (absl::Status st = Program(w, t); !st.ok() && error_.ok()) error_ = st;
      }
      break;
    }
  }
  UpdateOnset(s.backend, t, was_bad);
}

}  // namespace ballast::lbsim::internal
