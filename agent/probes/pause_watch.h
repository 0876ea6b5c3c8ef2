// PauseLog and PauseWatch: when did this process not run?
//
// A probe measures the backend only while the agent runs. Stopped (SIGSTOP,
// a frozen cgroup, a VM pause) or starved of CPU, the agent wakes to find
// every probe in flight past its deadline, or late by the length of the
// pause: all backends fail or slow down at once, and the fleet guard reads
// that as a pool-wide outage. A probe whose run overlaps a pause says nothing
// about its backend and is not counted (ProbeResult::discarded).
//
// PauseLog is the pure rule, time passed in: heartbeats a tick apart; a gap
// longer than `threshold` between two beats is a pause. PauseWatch beats it
// from a thread of its own every `tick`.
//
// Thread-safety: PauseLog is not thread-safe; PauseWatch's methods are.
#ifndef BALLAST_AGENT_PROBES_PAUSE_WATCH_H_
#define BALLAST_AGENT_PROBES_PAUSE_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace ballast::probes {

class PauseLog {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PauseLog(Clock::duration threshold) : threshold_(threshold) {}

  // A heartbeat at `now` (non-decreasing).
  void Beat(Clock::time_point now);

  // The longest pause that overlaps [start, end], as seen at `now`: a gap
  // between two beats, or the time since the last beat when that is longer
  // than the threshold (a pause the beating thread has not woken from yet).
  // Zero: none.
  Clock::duration PauseDuring(Clock::time_point start, Clock::time_point end,
                              Clock::time_point now) const;

  Clock::duration threshold() const { return threshold_; }

 private:
  struct Pause {
    Clock::time_point from, to;
  };
  static constexpr size_t kKept = 64;  // the newest pauses; older ones end before any probe

  const Clock::duration threshold_;
  bool beaten_ = false;
  Clock::time_point last_beat_{};
  std::deque<Pause> pauses_;
};

class PauseWatch {
 public:
  using Clock = PauseLog::Clock;

  // Beats every `tick`; a gap over `threshold` is a pause.
  explicit PauseWatch(Clock::duration tick = std::chrono::milliseconds(20),
                      Clock::duration threshold = std::chrono::milliseconds(120));
  ~PauseWatch();
  PauseWatch(const PauseWatch&) = delete;
  PauseWatch& operator=(const PauseWatch&) = delete;

  // PauseLog::PauseDuring at Clock::now().
  Clock::duration PauseDuring(Clock::time_point start, Clock::time_point end) const;

 private:
  void Loop();

  const Clock::duration tick_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  PauseLog log_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_PAUSE_WATCH_H_
