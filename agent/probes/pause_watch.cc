#include "agent/probes/pause_watch.h"

#include <algorithm>

namespace ballast::probes {

void PauseLog::Beat(Clock::time_point now) {
  if (beaten_ && now - last_beat_ > threshold_) {
    pauses_.push_back(Pause{last_beat_, now});
    if (pauses_.size() > kKept) pauses_.pop_front();
  }
  beaten_ = true;
  last_beat_ = std::max(last_beat_, now);
}

PauseLog::Clock::duration PauseLog::PauseDuring(Clock::time_point start, Clock::time_point end,
                                                Clock::time_point now) const {
  Clock::duration longest{0};
  auto overlap = [&](Clock::time_point from, Clock::time_point to) {
    if (from <= end && to >= start) longest = std::max(longest, to - from);
  };
  for (const Pause& p : pauses_) overlap(p.from, p.to);
  if (beaten_ && now - last_beat_ > threshold_) overlap(last_beat_, now);
  return longest;
}

PauseWatch::PauseWatch(Clock::duration tick, Clock::duration threshold)
    : tick_(tick), log_(threshold) {
  log_.Beat(Clock::now());
  thread_ = std::thread([this] { Loop(); });
}

PauseWatch::~PauseWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

PauseWatch::Clock::duration PauseWatch::PauseDuring(Clock::time_point start,
                                                    Clock::time_point end) const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_.PauseDuring(start, end, Clock::now());
}

void PauseWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, tick_);
    log_.Beat(Clock::now());
  }
}

}  // namespace ballast::probes
