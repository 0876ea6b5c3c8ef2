#include "agent/api/services.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_macros.h"
#include "agent/api/request_shape.h"
#include "agent/api/status_convert.h"
#include "ballast/v1/api.grpc.pb.h"

namespace ballast::api {

struct AdminServices::Shared {
  Shared(core::Engine& e, AccessPolicy p, UidLookup u, LogFn l, int w)
      : engine(e),
        policy(std::make_shared<const AccessPolicy>(std::move(p))),
        uid_of_fd(std::move(u)),
        log(std::move(l)),
        max_watchers(w) {}

  core::Engine& engine;
  std::mutex policy_mu;
  std::shared_ptr<const AccessPolicy> policy;  // guarded by policy_mu; replaced whole
  const UidLookup uid_of_fd;
  const LogFn log;
  const int max_watchers;
  std::atomic<bool> stopping{false};
  std::atomic<int> watchers{0};

  // The call guard: authorize, then run `fn(caller)` which checks the
  // request's shape and calls the engine. Every handler goes through here.
  template <typename Fn>
  grpc::Status Run(grpc::ServerContext* ctx, Method method, Fn&& fn, bool dry_run = false) {
    const PeerInfo peer = PeerOf(*ctx, uid_of_fd);
    std::shared_ptr<const AccessPolicy> current;
    {
      std::lock_guard<std::mutex> lock(policy_mu);
      current = policy;
    }
    absl::StatusOr<Caller> caller = current->Authorize(peer, method, dry_run);
    if (!caller.ok()) {
      if (log) {
        log("warning", absl::StrCat("admin API: refused ", Describe(method).name, " from ",
                                    peer.address, ": ", caller.status().message()));
      }
      return ToGrpcStatus(caller.status());
    }
    try {
      return ToGrpcStatus(fn(*caller));
    } catch (const std::exception& e) {
      const std::string msg =
          absl::StrCat("internal error in ", Describe(method).name, ": ", e.what());
      if (log) log("error", msg);
      return grpc::Status(grpc::StatusCode::INTERNAL, msg);
    }
  }
};

namespace {

using Shared = AdminServices::Shared;

core::Actor ActorOf(const Caller& caller) { return core::Actor{caller.actor}; }

class VipsService final : public v1::Vips::Service {
 public:
  explicit VipsService(Shared& s) : s_(s) {}

  grpc::Status AddVip(grpc::ServerContext* ctx, const v1::AddVipRequest* req, v1::Empty*) override {
    return s_.Run(ctx, Method::kAddVip, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.AddVip(req->vip(), ActorOf(c));
    });
  }
  grpc::Status DeleteVip(grpc::ServerContext* ctx, const v1::DeleteVipRequest* req,
                         v1::Empty*) override {
    return s_.Run(ctx, Method::kDeleteVip, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.DeleteVip(req->key(), ActorOf(c));
    });
  }
  grpc::Status ListVips(grpc::ServerContext* ctx, const v1::ListVipsRequest*,
                        v1::ListVipsResponse* resp) override {
    return s_.Run(ctx, Method::kListVips, [&](const Caller&) {
      for (v1::Vip& vip : s_.engine.ListVips()) *resp->add_vips() = std::move(vip);
      return absl::OkStatus();
    });
  }
  grpc::Status RelearnHealth(grpc::ServerContext* ctx, const v1::RelearnHealthRequest* req,
                             v1::Empty*) override {
    return s_.Run(ctx, Method::kRelearnHealth, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.RelearnHealth(req->vip(), ActorOf(c));
    });
  }
  grpc::Status RotateQuicConfig(grpc::ServerContext* ctx, const v1::RotateQuicConfigRequest* req,
                                v1::QuicConfigChangeResponse* resp) override {
    return s_.Run(ctx, Method::kRotateQuicConfig, [&](const Caller& c) -> absl::Status {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      BALLAST_ASSIGN_OR_RETURN(r,
                               s_.engine.RotateQuicConfig(req->vip(), req->reason(), ActorOf(c)));
      *resp = std::move(r);
      return absl::OkStatus();
    });
  }
  grpc::Status RetireQuicConfig(grpc::ServerContext* ctx, const v1::RetireQuicConfigRequest* req,
                                v1::QuicConfigChangeResponse* resp) override {
    return s_.Run(ctx, Method::kRetireQuicConfig, [&](const Caller& c) -> absl::Status {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      BALLAST_ASSIGN_OR_RETURN(r,
                               s_.engine.RetireQuicConfig(req->vip(), req->reason(), ActorOf(c)));
      *resp = std::move(r);
      return absl::OkStatus();
    });
  }
  grpc::Status ExportQuicConfig(grpc::ServerContext* ctx, const v1::ExportQuicConfigRequest* req,
                                v1::ExportQuicConfigResponse* resp) override {
    return s_.Run(ctx, Method::kExportQuicConfig, [&](const Caller& c) -> absl::Status {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      BALLAST_ASSIGN_OR_RETURN(r,
                               s_.engine.ExportQuicConfig(req->vip(), req->address(), ActorOf(c)));
      *resp = std::move(r);
      return absl::OkStatus();
    });
  }

 private:
  Shared& s_;
};

class BackendsService final : public v1::Backends::Service {
 public:
  explicit BackendsService(Shared& s) : s_(s) {}

  grpc::Status AddBackend(grpc::ServerContext* ctx, const v1::AddBackendRequest* req,
                          v1::Empty*) override {
    return s_.Run(ctx, Method::kAddBackend, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.AddBackend(req->vip(), req->backend(), ActorOf(c));
    });
  }
  grpc::Status DeleteBackend(grpc::ServerContext* ctx, const v1::DeleteBackendRequest* req,
                             v1::Empty*) override {
    return s_.Run(ctx, Method::kDeleteBackend, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.DeleteBackend(req->vip(), req->address(), ActorOf(c));
    });
  }
  grpc::Status SetWeight(grpc::ServerContext* ctx, const v1::SetWeightRequest* req,
                         v1::Empty*) override {
    return s_.Run(ctx, Method::kSetWeight, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.SetWeight(req->vip(), req->address(), req->weight(), ActorOf(c));
    });
  }
  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::Empty*) override {
    return s_.Run(ctx, Method::kDrain, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.Drain(req->vip(), req->address(), req->deadline_s(), ActorOf(c));
    });
  }
  grpc::Status Undrain(grpc::ServerContext* ctx, const v1::UndrainRequest* req,
                       v1::Empty*) override {
    return s_.Run(ctx, Method::kUndrain, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.Undrain(req->vip(), req->address(), ActorOf(c));
    });
  }
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req,
                       v1::Empty*) override {
    return s_.Run(ctx, Method::kRelease, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.Release(req->vip(), req->address(), ActorOf(c));
    });
  }

 private:
  Shared& s_;
};

// Events delivered by the engine's thread, consumed by one stream's handler.
struct EventQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::Event> events;  // guarded by mu
  uint64_t dropped = 0;          // guarded by mu
};

class StatusService final : public v1::Status::Service {
 public:
  explicit StatusService(Shared& s) : s_(s) {}

  grpc::Status GetStatus(grpc::ServerContext* ctx, const v1::StatusRequest*,
                         v1::StatusResponse* resp) override {
    return s_.Run(ctx, Method::kGetStatus, [&](const Caller&) -> absl::Status {
      absl::StatusOr<v1::StatusResponse> status = s_.engine.GetStatus();
      if (!status.ok()) return status.status();
      *resp = std::move(*status);
      return absl::OkStatus();
    });
  }

  grpc::Status ListFlows(grpc::ServerContext* ctx, const v1::ListFlowsRequest* req,
                         v1::ListFlowsResponse* resp) override {
    return s_.Run(ctx, Method::kListFlows, [&](const Caller&) -> absl::Status {
      absl::StatusOr<v1::ListFlowsResponse> flows = s_.engine.ListFlows(*req);
      if (!flows.ok()) return flows.status();
      *resp = std::move(*flows);
      return absl::OkStatus();
    });
  }

  grpc::Status WatchEvents(grpc::ServerContext* ctx, const v1::WatchEventsRequest*,
                           grpc::ServerWriter<v1::Event>* writer) override {
    return s_.Run(ctx, Method::kWatchEvents, [&](const Caller&) { return Stream(ctx, writer); });
  }

 private:
  absl::Status Stream(grpc::ServerContext* ctx, grpc::ServerWriter<v1::Event>* writer) {
    if (s_.stopping.load()) return absl::UnavailableError("lbagent is shutting down");
    if (s_.watchers.fetch_add(1) >= s_.max_watchers) {
      s_.watchers.fetch_sub(1);
      return absl::ResourceExhaustedError(absl::StrCat("too many event streams open (limit ",
                                                       s_.max_watchers, "); close one and retry"));
    }
    absl::Cleanup release_slot = [this] { s_.watchers.fetch_sub(1); };

    // Shared with the sink: the engine may still be inside the callback
    // when Unsubscribe returns on another thread.
    auto queue = std::make_shared<EventQueue>();
    const uint64_t handle = s_.engine.Subscribe([queue](const v1::Event& event) {
      {
        std::lock_guard<std::mutex> lock(queue->mu);
        if (queue->events.size() >= kMaxQueuedEvents) {
          ++queue->dropped;
        } else {
          queue->events.push_back(event);
        }
      }
      queue->cv.notify_one();
    });
    absl::Cleanup unsubscribe = [this, handle] { s_.engine.Unsubscribe(handle); };

    // Tell the client the stream is established (subscribed) right away.
    writer->SendInitialMetadata();
    std::deque<v1::Event> batch;
    while (true) {
      uint64_t dropped = 0;
      {
        std::unique_lock<std::mutex> lock(queue->mu);
        queue->cv.wait_for(lock, std::chrono::milliseconds(200),
                           [&] { return !queue->events.empty() || queue->dropped > 0; });
        batch.swap(queue->events);
        dropped = queue->dropped;
      }
      if (s_.stopping.load()) return absl::UnavailableError("lbagent is shutting down");
      if (ctx->IsCancelled()) return absl::CancelledError("event stream cancelled by the client");
      for (const v1::Event& event : batch) {
        if (!writer->Write(event)) return absl::CancelledError("client closed the event stream");
      }
      batch.clear();
      if (dropped > 0) {
        return absl::ResourceExhaustedError(
            absl::StrCat("event stream fell behind and ", dropped,
                         " events were dropped; reconnect and re-read the status"));
      }
    }
  }

  Shared& s_;
};

class ConfigService final : public v1::ConfigService::Service {
 public:
  explicit ConfigService(Shared& s) : s_(s) {}

  grpc::Status GetConfig(grpc::ServerContext* ctx, const v1::GetConfigRequest*,
                         v1::Config* resp) override {
    return s_.Run(ctx, Method::kGetConfig, [&](const Caller&) {
      *resp = s_.engine.GetConfig();
      return absl::OkStatus();
    });
  }
  grpc::Status ConfigDiff(grpc::ServerContext* ctx, const v1::ConfigDiffRequest*,
                          v1::ConfigDiffResponse* resp) override {
    return s_.Run(ctx, Method::kConfigDiff, [&](const Caller&) -> absl::Status {
      absl::StatusOr<v1::ConfigDiffResponse> result = s_.engine.ConfigDiff();
      if (!result.ok()) return result.status();
      *resp = std::move(*result);
      return absl::OkStatus();
    });
  }
  grpc::Status ApplyConfig(grpc::ServerContext* ctx, const v1::ApplyConfigRequest* req,
                           v1::ApplyConfigResponse* resp) override {
    return s_.Run(
        ctx, Method::kApplyConfig,
        [&](const Caller& c) -> absl::Status {
          BALLAST_RETURN_IF_ERROR(CheckShape(*req));
          absl::StatusOr<v1::ApplyConfigResponse> result =
              s_.engine.ApplyConfig(req->config(), req->dry_run(), ActorOf(c));
          if (!result.ok()) return result.status();
          *resp = std::move(*result);
          return absl::OkStatus();
        },
        req->dry_run());
  }

 private:
  Shared& s_;
};

class AuditService final : public v1::Audit::Service {
 public:
  explicit AuditService(Shared& s) : s_(s) {}

  grpc::Status QueryAudit(grpc::ServerContext* ctx, const v1::QueryAuditRequest* req,
                          v1::QueryAuditResponse* resp) override {
    return s_.Run(ctx, Method::kQueryAudit, [&](const Caller&) -> absl::Status {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      absl::StatusOr<std::vector<v1::AuditRecord>> records =
          s_.engine.QueryAudit(req->since_unix_ms(), req->limit());
      if (!records.ok()) return records.status();
      for (v1::AuditRecord& r : *records) *resp->add_records() = std::move(r);
      return absl::OkStatus();
    });
  }

 private:
  Shared& s_;
};

class AdminService final : public v1::Admin::Service {
 public:
  explicit AdminService(Shared& s) : s_(s) {}

  grpc::Status Teardown(grpc::ServerContext* ctx, const v1::TeardownRequest* req,
                        v1::Empty*) override {
    return s_.Run(ctx, Method::kTeardown, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.Teardown(ActorOf(c));
    });
  }

  grpc::Status RotateFlowHashSeed(grpc::ServerContext* ctx,
                                  const v1::RotateFlowHashSeedRequest* req,
                                  v1::RotateFlowHashSeedResponse* resp) override {
    return s_.Run(ctx, Method::kRotateFlowHashSeed, [&](const Caller& c) -> absl::Status {
      auto r = s_.engine.RotateFlowHashSeed(req->reason(), ActorOf(c));
      if (!r.ok()) return r.status();
      *resp = std::move(*r);
      return absl::OkStatus();
    });
  }

 private:
  Shared& s_;
};

class ClusterOpsService final : public v1::ClusterOps::Service {
 public:
  explicit ClusterOpsService(Shared& s) : s_(s) {}

  grpc::Status SetVipOwnership(grpc::ServerContext* ctx, const v1::SetVipOwnershipRequest* req,
                               v1::Empty*) override {
    return s_.Run(ctx, Method::kSetVipOwnership, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.SetVipOwnership(req->vip(), req->ownership(), ActorOf(c));
    });
  }
  grpc::Status YieldVip(grpc::ServerContext* ctx, const v1::YieldVipRequest* req,
                        v1::YieldVipResponse* resp) override {
    return s_.Run(ctx, Method::kYieldVip, [&](const Caller& c) -> absl::Status {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      absl::StatusOr<v1::YieldVipResponse> r = s_.engine.YieldVip(*req, ActorOf(c));
      if (!r.ok()) return r.status();
      *resp = std::move(*r);
      return absl::OkStatus();
    });
  }
  grpc::Status RecordDrill(grpc::ServerContext* ctx, const v1::RecordDrillRequest* req,
                           v1::Empty*) override {
    return s_.Run(ctx, Method::kRecordDrill, [&](const Caller& c) {
      BALLAST_RETURN_IF_ERROR(CheckShape(*req));
      return s_.engine.RecordDrill(req->result(), ActorOf(c));
    });
  }

 private:
  Shared& s_;
};

#undef BALLAST_RETURN_IF_ERROR

}  // namespace

AdminServices::AdminServices(core::Engine& engine, AccessPolicy policy, UidLookup uid_of_fd,
                             LogFn log, int max_watchers)
    : shared_(std::make_unique<Shared>(engine, std::move(policy), std::move(uid_of_fd),
                                       std::move(log), max_watchers)) {
  services_.push_back(std::make_unique<VipsService>(*shared_));
  services_.push_back(std::make_unique<BackendsService>(*shared_));
  services_.push_back(std::make_unique<StatusService>(*shared_));
  services_.push_back(std::make_unique<ConfigService>(*shared_));
  services_.push_back(std::make_unique<AuditService>(*shared_));
  services_.push_back(std::make_unique<AdminService>(*shared_));
  services_.push_back(std::make_unique<ClusterOpsService>(*shared_));
}

AdminServices::~AdminServices() = default;

std::vector<grpc::Service*> AdminServices::services() {
  std::vector<grpc::Service*> out;
  for (auto& s : services_) out.push_back(s.get());
  return out;
}

void AdminServices::BeginShutdown() { shared_->stopping.store(true); }

void AdminServices::SetPolicy(AccessPolicy policy) {
  auto next = std::make_shared<const AccessPolicy>(std::move(policy));
  std::lock_guard<std::mutex> lock(shared_->policy_mu);
  shared_->policy = std::move(next);
}

}  // namespace ballast::api
