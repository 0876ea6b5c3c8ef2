#include "agent/core/timeline.h"

namespace ballast::core {

Timeline::Timeline(int64_t horizon_ms, int64_t resolution_ms)
    : horizon_ms_(horizon_ms), resolution_ms_(resolution_ms) {}

void Timeline::Trim(std::deque<TimelinePoint>& d, int64_t now_unix_ms) const {
  // Keep the newest point before the horizon while a later one exists: the
  // line then starts at the horizon's edge instead of at its first change.
  while (d.size() >= 2 && d[1].unix_ms < now_unix_ms - horizon_ms_) d.pop_front();
  // At most two points per step (a run's end and a change), plus the edge.
  const size_t cap = 2 * static_cast<size_t>(horizon_ms_ / resolution_ms_) + 2;
  while (d.size() > cap) d.pop_front();
}

void Timeline::Record(const TimelineKey& key, const TimelinePoint& p) {
  std::lock_guard<std::mutex> lock(mu_);
  std::deque<TimelinePoint>& d = series_[key];
  auto equal = [&p](const TimelinePoint& q) { return q.score == p.score && q.weight == p.weight; };
  if (d.empty()) {
    d.push_back(p);
  } else if (p.unix_ms < d.back().unix_ms) {
    return;  // the clock stepped back
  } else if (d.size() >= 2 && equal(d.back()) && equal(d[d.size() - 2])) {
    d.back().unix_ms = p.unix_ms;  // a run of equal values: move its end
  } else if (p.unix_ms / resolution_ms_ == d.back().unix_ms / resolution_ms_ && equal(d.back())) {
    // the same value within the step: it holds since the step's point
  } else if (p.unix_ms / resolution_ms_ == d.back().unix_ms / resolution_ms_ &&
             !(d.size() >= 2 && d[d.size() - 2].score == d.back().score &&
               d[d.size() - 2].weight == d.back().weight)) {
    d.back() = p;  // the same step, and its point is no run's end: the later value stands
  } else {
    d.push_back(p);
  }
  Trim(d, p.unix_ms);
}

void Timeline::Retain(const std::set<TimelineKey>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = series_.begin(); it != series_.end();) {
    it = keys.count(it->first) == 0 ? series_.erase(it) : std::next(it);
  }
}

std::map<TimelineKey, std::vector<TimelinePoint>> Timeline::Snapshot(int64_t now_unix_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<TimelineKey, std::vector<TimelinePoint>> out;
  for (const auto& [key, d] : series_) {
    std::vector<TimelinePoint>& v = out[key];
    for (size_t i = 0; i < d.size(); ++i) {
      const bool last_before = i + 1 < d.size() && d[i + 1].unix_ms >= now_unix_ms - horizon_ms_;
      if (d[i].unix_ms >= now_unix_ms - horizon_ms_ || last_before) v.push_back(d[i]);
    }
  }
  return out;
}

bool HealthHoldsOut(std::string_view state) { return state == "down" || state == "pinned"; }

HealthHistory NextHealthHistory(HealthHistory h, std::string_view state, int64_t now_unix_ms) {
  if (h.state.empty()) {
    h.state = std::string(state);
    h.since_unix_ms = now_unix_ms;
    h.last_unix_ms = now_unix_ms;
    return h;
  }
  if (now_unix_ms < h.last_unix_ms) return h;
  if (HealthHoldsOut(h.state)) h.down_ms += now_unix_ms - h.last_unix_ms;
  if (state != h.state) {
    h.state = std::string(state);
    h.since_unix_ms = now_unix_ms;
    ++h.transitions;
  }
  h.last_unix_ms = now_unix_ms;
  return h;
}

}  // namespace ballast::core
