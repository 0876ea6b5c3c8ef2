#include "agent/probes/scheduler.h"

#include <algorithm>

#include "agent/base/strcat.h"
#include "agent/probes/spec.h"

namespace ballast::probes {

using base::Cat;

Endpoint EndpointOf(const ProbeTarget& t, uint32_t mark_base) {
  Endpoint ep;
  ep.port = t.spec.port() != 0 ? static_cast<uint16_t>(t.spec.port()) : t.port;
  if (t.spec.direct()) {
    ep.address = t.backend;
    ep.description = DescribeDirect(t.backend, ep.port);
  } else {
    ep.address = t.vip;
    ep.mark = mark_base | t.backend_id;
    ep.description = DescribeVia(t.vip, ep.port, t.backend);
  }
  return ep;
}

ProbeScheduler::ProbeScheduler(Options options, Callback callback)
    : options_(options), callback_(std::move(callback)), rng_(std::random_device{}()) {
  if (options_.watch_pauses) pause_watch_ = std::make_unique<PauseWatch>();
  const int n = std::clamp(options_.workers, 1, 64);
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ProbeScheduler::~ProbeScheduler() { Shutdown(); }

void ProbeScheduler::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !dispatcher_.joinable()) return;
    stop_ = true;
    jobs_.clear();
  }
  dispatch_cv_.notify_all();
  work_cv_.notify_all();
  if (dispatcher_.joinable()) dispatcher_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
}

Clock::time_point NextStartAfter(Clock::time_point due, Clock::duration interval,
                                 Clock::time_point now) {
  return due + interval * ((now - due) / interval + 1);
}

Clock::duration ProbeScheduler::NextGap(const v1::ProbeSpec& spec) {
  const int64_t interval = IntervalMsOf(spec);
  const int64_t jitter = std::min<int64_t>(spec.jitter_ms(), interval / 2);
  int64_t ms = interval;
  if (jitter > 0) ms += std::uniform_int_distribution<int64_t>(-jitter, jitter)(rng_);
  return std::chrono::milliseconds(ms);
}

Clock::duration ProbeScheduler::FirstGap(const v1::ProbeSpec& spec) {
  if (!options_.spread_start) return Clock::duration::zero();
  return std::chrono::milliseconds(
      std::uniform_int_distribution<int64_t>(0, IntervalMsOf(spec) - 1)(rng_));
}

bool ProbeScheduler::FellDueInPause(const Target& t, Clock::time_point now) const {
  return pause_watch_ != nullptr && pause_watch_->PauseDuring(t.due, now) > Clock::duration::zero();
}

absl::Status ProbeScheduler::Add(const std::string& id, const ProbeTarget& target) {
  auto prober = MakeProber(target.spec);
  if (!prober.ok()) return prober.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return absl::FailedPreconditionError("the probe scheduler is shut down");
    if (targets_.count(id)) return absl::AlreadyExistsError(Cat("probe target ", id, " exists"));
    Target& t = targets_[id];
    t.def = target;
    t.prober = std::shared_ptr<const Prober>(std::move(*prober));
    t.generation = next_generation_++;
    t.due = Clock::now() + FirstGap(target.spec);
  }
  dispatch_cv_.notify_all();
  return absl::OkStatus();
}

void ProbeScheduler::WaitNotDelivering(std::unique_lock<std::mutex>& lock, const std::string& id) {
  deliver_cv_.wait(lock, [&] {
    auto it = targets_.find(id);
    return it == targets_.end() || !it->second.delivering ||
           it->second.delivering_thread == std::this_thread::get_id();
  });
}

absl::Status ProbeScheduler::Update(const std::string& id, const ProbeTarget& target) {
  auto prober = MakeProber(target.spec);
  if (!prober.ok()) return prober.status();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!targets_.count(id)) return absl::NotFoundError(Cat("no probe target ", id));
    WaitNotDelivering(lock, id);
    auto it = targets_.find(id);
    if (it == targets_.end()) return absl::NotFoundError(Cat("no probe target ", id));
    Target& t = it->second;
    t.def = target;
    t.prober = std::shared_ptr<const Prober>(std::move(*prober));
    t.generation = next_generation_++;
    // A probe of the old definition may still be running; the new one
    // starts when it ends (in_flight stays as is) or within an interval.
    t.due = Clock::now() + FirstGap(target.spec);
  }
  dispatch_cv_.notify_all();
  return absl::OkStatus();
}

absl::Status ProbeScheduler::Remove(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!targets_.count(id)) return absl::NotFoundError(Cat("no probe target ", id));
  WaitNotDelivering(lock, id);
  targets_.erase(id);
  std::erase_if(jobs_, [&](const Job& j) { return j.id == id; });
  return absl::OkStatus();
}

std::vector<std::string> ProbeScheduler::Ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, t] : targets_) ids.push_back(id);
  return ids;
}

void ProbeScheduler::DispatchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const auto now = Clock::now();
    Clock::time_point next = now + std::chrono::seconds(60);
    std::vector<std::pair<Clock::time_point, std::string>> due;
    for (auto& [id, t] : targets_) {
      if (t.in_flight) continue;
      if (t.due <= now && FellDueInPause(t, now)) {
        t.due = NextStartAfter(t.due, std::chrono::milliseconds(IntervalMsOf(t.def.spec)), now);
      }
      if (t.due <= now) {
        due.emplace_back(t.due, id);
      } else {
        next = std::min(next, t.due);
      }
    }
    std::sort(due.begin(), due.end());
    for (const auto& [when, id] : due) {
      Target& t = targets_[id];
      t.in_flight = true;
      t.in_flight_generation = t.generation;
      // Next start: interval ± jitter after this one was due (not after it
      // ran), so a busy pool does not stretch the schedule; never in the past.
      t.due = std::max(when + NextGap(t.def.spec), now);
      jobs_.push_back(Job{id, t.generation, t.def, t.prober});
    }
    if (!due.empty()) work_cv_.notify_all();
    dispatch_cv_.wait_until(lock, next);
  }
}

void ProbeScheduler::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();

    const auto start = Clock::now();
    const auto deadline = start + std::chrono::milliseconds(TimeoutMsOf(job.def.spec));
    ProbeResult result = job.prober->Run(EndpointOf(job.def, options_.mark_base), deadline);
    if (pause_watch_ != nullptr) {
      const auto paused = pause_watch_->PauseDuring(start, Clock::now());
      if (paused > Clock::duration::zero()) {
        result.discarded = true;
        result.detail = Cat("not counted: the agent did not run for ",
                            std::chrono::duration_cast<std::chrono::milliseconds>(paused).count(),
                            " ms during the probe (", result.detail, ")");
      }
    }

    lock.lock();
    auto it = targets_.find(job.id);
    if (it == targets_.end()) continue;  // removed meanwhile
    Target& t = it->second;
    // Only the job this target waits for clears in_flight: after Remove +
    // Add of the same id, the new target's own job may be running.
    if (t.in_flight_generation == job.generation) {
      t.in_flight = false;
      dispatch_cv_.notify_all();
    }
    if (stop_ || t.generation != job.generation) continue;  // replaced: drop the old result
    t.delivering = true;
    t.delivering_thread = std::this_thread::get_id();
    lock.unlock();
    callback_(job.id, job.def, result);
    lock.lock();
    it = targets_.find(job.id);
    if (it != targets_.end()) {
      it->second.delivering = false;
      it->second.delivering_thread = std::thread::id();
    }
    deliver_cv_.notify_all();
  }
}

}  // namespace ballast::probes
