// Collects a Watch's updates for assertions, with the time each arrived.
#ifndef BALLAST_AGENT_ETCD_TESTS_WATCH_COLLECTOR_H_
#define BALLAST_AGENT_ETCD_TESTS_WATCH_COLLECTOR_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "agent/etcd/watch.h"

namespace ballast::etcd::testing {

class WatchCollector {
 public:
  struct Seen {
    Event event;
    std::chrono::steady_clock::time_point at;
  };

  std::function<void(const WatchUpdate&)> Callback() {
    return [this](const WatchUpdate& u) {
      std::lock_guard<std::mutex> lock(mu_);
      const auto now = std::chrono::steady_clock::now();
      if (u.kind == WatchUpdate::Kind::kEvents) {
        for (const Event& e : u.events) events_.push_back({e, now});
      } else {
        kinds_.push_back(u.kind);
        last_other_ = u;
      }
      cv_.notify_all();
    };
  }

  // Waits until at least n events arrived.
  bool WaitEvents(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return events_.size() >= n; });
  }
  bool WaitKind(WatchUpdate::Kind k, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (auto x : kinds_) {
        if (x == k) return true;
      }
      return false;
    });
  }
  std::vector<Seen> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  WatchUpdate last_other() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_other_;
  }
  size_t count(WatchUpdate::Kind k) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (auto x : kinds_) n += x == k;
    return n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Seen> events_;
  std::vector<WatchUpdate::Kind> kinds_;
  WatchUpdate last_other_;
};

}  // namespace ballast::etcd::testing

#endif  // BALLAST_AGENT_ETCD_TESTS_WATCH_COLLECTOR_H_
