#include "tools/testbackend/fault_engine.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace ballast::testbackend {
namespace {

double Uniform() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

constexpr int64_t kSliceMs = 20;

}  // namespace

bool IsProbeUserAgent(absl::string_view user_agent) {
  for (absl::string_view token : absl::StrSplit(user_agent, ' ', absl::SkipEmpty())) {
    if (absl::StartsWith(token, kProbeUserAgentPrefix)) return true;
  }
  return false;
}

Knobs FaultEngine::knobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return knobs_;
}

absl::Status FaultEngine::Set(const std::vector<std::string>& assignments) {
  std::lock_guard<std::mutex> lock(mu_);
  Knobs next = knobs_;
  for (const std::string& a : assignments) {
    absl::Status st = ApplyKnob(&next, a);
    if (!st.ok()) return st;
  }
  knobs_ = next;
  return absl::OkStatus();
}

void FaultEngine::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  knobs_ = Knobs{};
}

Plan FaultEngine::Decide(Protocol protocol, bool is_probe, bool count_request) {
  Plan plan = testbackend::Decide(knobs(), is_probe, Uniform(), Uniform(), Uniform());
  Stats& s = *stats_;
  if (count_request) {
    (protocol == Protocol::kHttp ? s.http_requests : s.grpc_requests).fetch_add(1);
    (is_probe ? s.probe_requests : s.real_requests).fetch_add(1);
  }
  if (plan.faulted && count_request) (is_probe ? s.faulted_probe : s.faulted_real).fetch_add(1);
  if (plan.delay_ms > 0) s.delayed.fetch_add(1);
  switch (plan.outcome) {
    case Outcome::kAnswer:
      break;
    case Outcome::kError:
      s.errors.fetch_add(1);
      break;
    case Outcome::kReset:
      s.resets.fetch_add(1);
      break;
    case Outcome::kHang:
      s.hangs.fetch_add(1);
      break;
    case Outcome::kWrongBody:
      s.wrong_bodies.fetch_add(1);
      break;
  }
  return plan;
}

bool FaultEngine::HangApplies(bool is_probe) const {
  Knobs k = knobs();
  return k.hang && !(k.real_only && is_probe);
}

bool FaultEngine::Sleep(int64_t ms, const std::function<bool()>& abandoned) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (stopping() || abandoned()) return false;
    // Compared at the clock's own resolution: rounding what is left down to
    // whole milliseconds ended delays up to 1 ms early.
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(kSliceMs)));
  }
}

bool FaultEngine::WaitOutHang(bool is_probe, const std::function<bool()>& abandoned) const {
  while (HangApplies(is_probe)) {
    if (stopping() || abandoned()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));
  }
  return !stopping();
}

}  // namespace ballast::testbackend
