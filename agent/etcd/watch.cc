#include "agent/etcd/watch.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "agent/etcd/client.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace ballast::etcd {

namespace pb = ::etcdserverpb;

Watch::Watch(Client& client, WatchSpec spec, int64_t start_revision,
             std::function<void(const WatchUpdate&)> callback)
    : client_(client),
      spec_(std::move(spec)),
      callback_(std::move(callback)),
      next_revision_(start_revision) {
  thread_ = std::thread([this] { Run(); });
}

Watch::~Watch() { Stop(); }

void Watch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (context_ != nullptr) context_->TryCancel();
    cv_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Watch::RequestProgress() {
  std::lock_guard<std::mutex> lock(mu_);
  if (progress_writer_) progress_writer_();
}

void Watch::Deliver(const WatchUpdate& update) {
  if (!stop_) callback_(update);
}

void Watch::Run() {
  const size_t n = client_.options().endpoints.size();
  size_t i = client_.preferred();
  int failures = 0;
  while (!stop_) {
    bool ended = false;
    const bool was_connected = !disconnected_;
    absl::Status s = RunStream(i % n, ended);
    if (ended || stop_) break;
    if (!disconnected_) {
      disconnected_ = true;
      WatchUpdate u;
      u.kind = WatchUpdate::Kind::kDisconnected;
      u.revision = next_revision_ - 1;
      u.status = s;
      Deliver(u);
    }
    if (was_connected) failures = 0;
    ++i;  // the next member
    // Back off 0, 100, 200, 400 ms ... up to 1 s between rounds of members.
    const int64_t ms = failures == 0 ? 0 : std::min<int64_t>(1000, 50LL << std::min(failures, 5));
    ++failures;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_.load(); });
  }
}

absl::Status Watch::RunStream(size_t i, bool& ended) {
  const std::string& endpoint = client_.options().endpoints[i];
  std::shared_ptr<grpc::Channel> channel =
      client_.ConnectedChannel(i, client_.options().connect_timeout);
  if (channel == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("etcd watch ", spec_.key, ": cannot connect to ", endpoint));
  }
  std::unique_ptr<pb::Watch::Stub> stub = pb::Watch::NewStub(channel);
  grpc::ClientContext ctx;
  // A member that loses its leader ends the stream instead of going quiet.
  ctx.AddMetadata("hasleader", "true");
  absl::StatusOr<std::string> token =
      client_.Authorize(i, ctx, absl::Now() + client_.options().attempt_timeout);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        absl::StrCat("etcd watch ", spec_.key, ": ", token.status().message()));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      ended = true;
      return absl::OkStatus();
    }
    context_ = &ctx;
  }
  auto stream = stub->Watch(&ctx);
  absl::Cleanup forget = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = nullptr;
    progress_writer_ = nullptr;
  };

  pb::WatchRequest create;
  pb::WatchCreateRequest* c = create.mutable_create_request();
  c->set_key(spec_.key);
  if (spec_.prefix) c->set_range_end(PrefixEnd(spec_.key));
  c->set_start_revision(next_revision_);
  c->set_progress_notify(true);
  bool written;
  {
    std::lock_guard<std::mutex> lock(mu_);
    written = stream->Write(create);
    if (written) {
      progress_writer_ = [s = stream.get()] {
        pb::WatchRequest p;
        p.mutable_progress_request();
        return s->Write(p);
      };
    }
  }

  pb::WatchResponse resp;
  while (written && stream->Read(&resp)) {
    if (resp.compact_revision() > 0) {
      ended = true;
      ctx.TryCancel();
      WatchUpdate u;
      u.kind = WatchUpdate::Kind::kCompacted;
      u.revision = resp.compact_revision();
      u.status = absl::OutOfRangeError(
          absl::StrCat("etcd watch ", spec_.key, ": revision ", next_revision_.load(),
                       " has been compacted (oldest kept: ", resp.compact_revision(),
                       "); re-read and watch again"));
      Deliver(u);
      break;
    }
    if (resp.canceled()) {
      ended = true;
      ctx.TryCancel();
      WatchUpdate u;
      u.kind = WatchUpdate::Kind::kFailed;
      u.status = absl::FailedPreconditionError(
          absl::StrCat("etcd watch ", spec_.key, " via ", endpoint,
                       " canceled by the server: ", resp.cancel_reason()));
      Deliver(u);
      break;
    }
    if (resp.created()) {
      if (disconnected_) {
        disconnected_ = false;
        WatchUpdate u;
        u.kind = WatchUpdate::Kind::kResumed;
        u.revision = next_revision_ - 1;
        Deliver(u);
      }
      client_.set_preferred(i);
      continue;
    }
    if (resp.events_size() == 0) {
      // Progress: every change up to header.revision has been sent.
      const int64_t rev = resp.header().revision();
      if (rev + 1 > next_revision_) next_revision_ = rev + 1;
      WatchUpdate u;
      u.kind = WatchUpdate::Kind::kProgress;
      u.revision = rev;
      Deliver(u);
      continue;
    }
    WatchUpdate u;
    u.kind = WatchUpdate::Kind::kEvents;
    for (const mvccpb::Event& e : resp.events()) {
      // A revision is never split across responses, so anything below the
      // next expected revision was delivered before a reconnect.
      if (e.kv().mod_revision() < next_revision_) continue;
      Event ev;
      ev.type = e.type() == mvccpb::Event::DELETE ? Event::Type::kDelete : Event::Type::kPut;
      ev.kv.key = e.kv().key();
      ev.kv.value = e.kv().value();
      ev.kv.create_revision = e.kv().create_revision();
      ev.kv.mod_revision = e.kv().mod_revision();
      ev.kv.version = e.kv().version();
      ev.kv.lease = e.kv().lease();
      u.events.push_back(std::move(ev));
    }
    if (u.events.empty()) continue;
    u.revision = u.events.back().kv.mod_revision;
    next_revision_ = u.revision + 1;
    Deliver(u);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress_writer_ = nullptr;
  }
  const grpc::Status st = stream->Finish();
  if (IsInvalidToken(st)) client_.DropToken(*token);
  if (ended || stop_) return absl::OkStatus();
  if (st.ok()) {
    return absl::UnavailableError(
        absl::StrCat("etcd watch ", spec_.key, " via ", endpoint, ": stream ended"));
  }
  return absl::Status(
      static_cast<absl::StatusCode>(st.error_code()),
      absl::StrCat("etcd watch ", spec_.key, " via ", endpoint, ": ", st.error_message()));
}

}  // namespace ballast::etcd
