#include "agent/etcd/session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::etcd {

namespace {

absl::Duration ToAbsl(Session::Clock::duration d) { return absl::FromChrono(d); }

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(Client& client, SessionOptions options) {
  const Clock::time_point sent = Clock::now();
  absl::StatusOr<LeaseGrant> grant = client.GrantLease(options.ttl_seconds);
  if (!grant.ok()) return grant.status();
  return std::unique_ptr<Session>(
      new Session(client, std::move(options), grant->id, grant->ttl_seconds, sent));
}

Session::Session(Client& client, SessionOptions options, int64_t lease_id, int64_t ttl,
                 Clock::time_point granted_at)
    : client_(client),
      options_(std::move(options)),
      lease_id_(lease_id),
      ttl_seconds_(ttl),
      last_renewed_(granted_at),
      deadline_(granted_at + std::chrono::seconds(ttl)) {
  thread_ = std::thread([this] { Run(); });
}

Session::~Session() { (void)Close(); }

bool Session::alive() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_.ok();
}

absl::Status Session::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

Session::Clock::time_point Session::deadline() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deadline_;
}

Session::Clock::time_point Session::last_renewed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_renewed_;
}

absl::Status Session::Close() {
  bool revoke = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      stop_ = true;
      // Also after a loss by deadline: the server may still hold the lease,
      // and its keys must go since we no longer act on them.
      revoke = status_.code() != absl::StatusCode::kNotFound;
      if (status_.ok())
        status_ = absl::CancelledError(absl::StrFormat("lease %x: closed", lease_id_));
      cv_.notify_all();
    }
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  return revoke ? client_.RevokeLease(lease_id_) : absl::OkStatus();
}

void Session::Lose(absl::Status why) {
  if (!status_.ok()) return;
  status_ = std::move(why);
}

void Session::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto interval = [&] {
    return options_.keepalive_interval > absl::ZeroDuration()
               ? Clock::duration(absl::ToChronoNanoseconds(options_.keepalive_interval))
               : Clock::duration(std::chrono::milliseconds(ttl_seconds_.load() * 1000 / 3));
  };
  Clock::time_point next_beat = last_renewed_ + interval();
  while (!stop_) {
    cv_.wait_until(lock, std::min(next_beat, deadline_), [&] { return stop_; });
    if (stop_) break;
    const Clock::time_point now = Clock::now();
    if (now >= deadline_) {
      Lose(absl::UnavailableError(absl::StrFormat(
          "lease %x: no keep-alive acknowledged for %s (TTL %d s); assuming it expired", lease_id_,
          absl::FormatDuration(ToAbsl(now - last_renewed_)), ttl_seconds_.load())));
      break;
    }
    if (now < next_beat) continue;
    const absl::Time rpc_deadline = absl::Now() + ToAbsl(deadline_ - now);
    lock.unlock();
    absl::StatusOr<int64_t> renewed = client_.KeepAliveOnce(lease_id_, rpc_deadline);
    lock.lock();
    if (stop_) break;
    if (renewed.ok()) {
      ttl_seconds_ = *renewed;
      last_renewed_ = now;
      deadline_ = now + std::chrono::seconds(*renewed);
      next_beat = now + interval();
    } else if (renewed.status().code() == absl::StatusCode::kNotFound) {
      Lose(absl::NotFoundError(
          absl::StrFormat("lease %x: etcd says it has expired or was revoked", lease_id_)));
      break;
    } else {
      next_beat = Clock::now() + std::chrono::milliseconds(200);  // transient: again soon
    }
  }
  const bool lost = !status_.ok() && !stop_;
  absl::Status why = status_;
  lock.unlock();
  if (lost && options_.on_lost) options_.on_lost(why);
}

}  // namespace ballast::etcd
