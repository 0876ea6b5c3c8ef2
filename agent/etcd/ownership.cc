#include "agent/etcd/ownership.h"

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::etcd {

Ownership::Ownership(Client& client, OwnershipOptions options)
    : client_(client), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Ownership>> Ownership::TryAcquire(Client& client, std::string key,
                                                                 std::string value,
                                                                 OwnershipOptions options,
                                                                 KeyValue* holder) {
  std::unique_ptr<Ownership> own(new Ownership(client, std::move(options)));
  Ownership* self = own.get();
  SessionOptions so;
  so.ttl_seconds = own->options_.ttl_seconds;
  so.on_lost = [self](const absl::Status& why) { self->Lose(why); };
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(client, std::move(so));
  if (!session.ok()) return session.status();
  own->session_ = std::move(*session);

  absl::StatusOr<ClaimResult> claim = ClaimKey(client, key, value, own->session_->lease_id());
  if (!claim.ok() || !claim->fence.has_value()) {
    own->released_ = true;
    (void)own->session_->Close();
    if (!claim.ok()) return claim.status();
    if (holder != nullptr && claim->holder.has_value()) *holder = *claim->holder;
    return std::unique_ptr<Ownership>();
  }
  own->fence_ = *claim->fence;

  // The key may go while the lease lives (an operator deletes it, a bug
  // overwrites it): that ends ownership too.
  if (absl::Status w = own->WatchKey(own->fence_.revision + 1); !w.ok()) {
    (void)own->Release();
    return w;
  }
  return own;
}

absl::Status Ownership::WatchKey(int64_t from_revision) {
  WatchSpec spec;
  spec.key = fence_.key;
  spec.start_revision = from_revision;
  absl::StatusOr<std::unique_ptr<Watch>> watch =
      client_.StartWatch(spec, [this](const WatchUpdate& u) { OnKeyWatch(u); });
  if (!watch.ok()) return watch.status();
  std::vector<std::unique_ptr<Watch>> done;
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    if (!watch_closed_) {
      // The ended watch (if any) is kept until later: it may be the one
      // whose callback is running now, which cannot destroy it. An older
      // one can go.
      done = std::move(retired_);
      retired_.clear();
      if (watch_ != nullptr) retired_.push_back(std::move(watch_));
      watch_ = std::move(*watch);
    } else {
      done.push_back(std::move(*watch));  // Release() ran meanwhile
    }
  }
  for (auto& w : done) w->Stop();
  return absl::OkStatus();
}

void Ownership::OnKeyWatch(const WatchUpdate& u) {
  if (u.kind == WatchUpdate::Kind::kEvents) {
    for (const Event& e : u.events) {
      if (e.type == Event::Type::kDelete) {
        Lose(absl::AbortedError(
            absl::StrFormat("ownership of %s lost: the key was deleted at revision %d", fence_.key,
                            e.kv.mod_revision)));
        return;
      }
      if (e.kv.create_revision != fence_.revision) {
        Lose(absl::AbortedError(
            absl::StrFormat("ownership of %s lost: the key was re-created at revision %d",
                            fence_.key, e.kv.create_revision)));
        return;
      }
    }
    return;
  }
  if (u.kind != WatchUpdate::Kind::kCompacted && u.kind != WatchUpdate::Kind::kFailed) return;
  // The watch has ended (its history was compacted, say after a member
  // restart): read the key, and if it is still ours watch again from that
  // read. Until etcd answers, the lease guards against expiry; a key
  // deleted meanwhile shows in the read.
  while (held()) {
    absl::StatusOr<RangeResult> now = client_.Get(fence_.key);
    if (now.ok()) {
      if (now->kvs.empty() || now->kvs[0].create_revision != fence_.revision) {
        Lose(absl::AbortedError(
            absl::StrFormat("ownership of %s lost: the key is gone or re-created", fence_.key)));
        return;
      }
      if (WatchKey(now->revision + 1).ok()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Ownership::~Ownership() { (void)Release(); }

bool Ownership::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_.ok() && !released_;
}

absl::Status Ownership::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (released_ && status_.ok()) {
    return absl::CancelledError(absl::StrCat("ownership of ", fence_.key, ": released"));
  }
  return status_;
}

void Ownership::Lose(const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok() || released_) return;
    status_ = why;
  }
  if (options_.on_lost) options_.on_lost(why);
}

absl::Status Ownership::Release() {
  bool was_held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_held = status_.ok() && !released_;
    released_ = true;
  }
  // Not under watch_mu_: a callback restarting the watch takes it (after
  // held() turned false it starts none). Stop() joins the threads.
  std::unique_ptr<Watch> watch;
  std::vector<std::unique_ptr<Watch>> retired;
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watch_closed_ = true;  // no callback installs a new watch from here on
    watch = std::move(watch_);
    retired = std::move(retired_);
  }
  if (watch != nullptr) watch->Stop();
  for (auto& w : retired) w->Stop();
  absl::Status s = absl::OkStatus();
  if (was_held && fence_.revision != 0) s = ReleaseKey(client_, fence_);
  if (session_ != nullptr) {
    absl::Status closed = session_->Close();
    if (s.ok()) s = closed;
  }
  return s;
}

}  // namespace ballast::etcd
