// A Session is one etcd lease kept alive in the background: the liveness of
// this process as the cluster sees it. Keys written with its lease_id() vanish
// when the session is lost or closed.
//
// Deadline. deadline() is a lower bound of when the server can expire the
// lease: the send time of the last acknowledged keep-alive plus the TTL the
// server granted. The server renews the lease when it receives the request,
// which is after we sent it, so the real expiry is never earlier (lease
// expiry on the etcd leader is measured by the leader's own monotonic clock;
// rates are assumed equal). It is a CLOCK_MONOTONIC time (steady_clock on
// Linux, the clock of bpf_ktime_get_ns), so it can be handed to the data plane
// after subtracting a safety margin.
//
// Loss. The session is lost, for good, when the server answers that the lease
// is gone, or when deadline() passes without an acknowledged keep-alive (etcd
// unreachable, frozen, or without a leader). on_lost is then called once, on
// the keep-alive thread; after that status() is the reason and alive() false.
// A lost session is not renewed again: make a new one.
//
// Threading: every method is thread-safe. on_lost must not destroy the
// Session (the destructor joins the thread that runs it). The Client must
// outlive the Session.
#ifndef BALLAST_AGENT_ETCD_SESSION_H_
#define BALLAST_AGENT_ETCD_SESSION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/etcd/client.h"

namespace ballast::etcd {

struct SessionOptions {
  // Seconds; etcd raises TTLs below its minimum (1.5 x its election timeout,
  // rounded up: 2 s by default).
  int64_t ttl_seconds = 10;
  // 0: a third of the granted TTL.
  absl::Duration keepalive_interval = absl::ZeroDuration();
  std::function<void(const absl::Status&)> on_lost;
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;

  // Grants a lease and starts keeping it alive.
  static absl::StatusOr<std::unique_ptr<Session>> Create(Client& client, SessionOptions options);
  // Close(), ignoring its error.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int64_t lease_id() const { return lease_id_; }
  int64_t ttl_seconds() const { return ttl_seconds_.load(); }
  bool alive() const;
  // OK while alive; why it was lost (or "closed") afterwards.
  absl::Status status() const;
  // See the header comment. Meaningless once lost.
  Clock::time_point deadline() const;
  // Time of the last acknowledged keep-alive (its send time).
  Clock::time_point last_renewed() const;

  // Stops the keep-alive and revokes the lease (its keys are deleted), also
  // after a loss by deadline (the server may still hold it). Blocks up to the
  // client's call_timeout when etcd is unreachable. After it, status() is
  // CANCELLED "closed" unless the session was lost before. Idempotent.
  absl::Status Close();

 private:
  Session(Client& client, SessionOptions options, int64_t lease_id, int64_t ttl,
          Clock::time_point granted_at);
  void Run();
  void Lose(absl::Status why);  // mu_ held

  Client& client_;
  SessionOptions options_;
  const int64_t lease_id_;
  std::atomic<int64_t> ttl_seconds_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  absl::Status status_;
  Clock::time_point last_renewed_;
  Clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_SESSION_H_
