// Per-backend score and effective-weight history for the status page: a
// bounded ring of points per (pool, backend), fed by the health controller
// after each evaluation it applied.
//
// A run of equal values is kept as its two ends; a later value in the same
// `resolution` step replaces the step's point unless that point ends a run;
// points older than `horizon` are dropped (the newest of them stays, so the
// line reaches the edge). So at most 2 * horizon / resolution + 2 points per
// backend (7,202 for the default hour at 1 s), whatever the evaluation
// interval, and a steady backend has two. Backends no longer evaluated are
// dropped by Retain().
//
// HealthHistory is the same kind of record for a backend's health state,
// kept by the health controller: when the state began, how often it
// changed, how long health checking held the backend out (the status page's
// "since", the per-backend health metrics). NextHealthHistory is pure.
//
// Thread-safety: every method of Timeline may be called from any thread.
#ifndef BALLAST_AGENT_CORE_TIMELINE_H_
#define BALLAST_AGENT_CORE_TIMELINE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ballast::core {

struct TimelinePoint {
  int64_t unix_ms = 0;
  uint32_t score = 0;   // 0..100
  uint32_t weight = 0;  // effective weight
  bool operator==(const TimelinePoint&) const = default;
};

// (pool key text, backend address)
using TimelineKey = std::pair<std::string, std::string>;

class Timeline {
 public:
  explicit Timeline(int64_t horizon_ms = 3'600'000, int64_t resolution_ms = 1'000);

  // One evaluation's outcome for a backend. A point older than the latest
  // one of its backend is ignored (the clock stepped back).
  void Record(const TimelineKey& key, const TimelinePoint& p);
  // Forgets every backend not in `keys` (removed from the configuration, or
  // health checking turned off: empty).
  void Retain(const std::set<TimelineKey>& keys);
  // Every backend's points within the horizon of `now_unix_ms`, oldest
  // first.
  std::map<TimelineKey, std::vector<TimelinePoint>> Snapshot(int64_t now_unix_ms) const;

 private:
  void Trim(std::deque<TimelinePoint>& d, int64_t now_unix_ms) const;

  const int64_t horizon_ms_;
  const int64_t resolution_ms_;
  mutable std::mutex mu_;
  std::map<TimelineKey, std::deque<TimelinePoint>> series_;
};

// A backend's health state over this agent's run (not persisted: a restart
// starts it again at its first evaluation).
struct HealthHistory {
  std::string state;          // the last evaluation's; "" before the first
  int64_t since_unix_ms = 0;  // when `state` began, or the first evaluation while it never changed
  int64_t last_unix_ms = 0;   // the last evaluation
  uint64_t transitions = 0;   // changes of state
  int64_t down_ms = 0;        // time health checking held the backend out (HealthHoldsOut)
  bool operator==(const HealthHistory&) const = default;
};

// down and pinned: health checking took the backend out of the table.
bool HealthHoldsOut(std::string_view state);

// `h` after an evaluation that found `state` at `now_unix_ms`: the time
// since the last evaluation counts as down when the state then held the
// backend out. An evaluation older than the last changes nothing (the clock
// stepped back).
HealthHistory NextHealthHistory(HealthHistory h, std::string_view state, int64_t now_unix_ms);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_TIMELINE_H_
