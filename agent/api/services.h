// The gRPC services of ballast.v1 (Vips, Backends, Status, ConfigService,
// Audit, Admin, ClusterOps) over a core::Engine.
//
// Every handler follows the same three steps, implemented once in
// AdminServices' call guard:
//   1. authorize the caller for the method (AccessPolicy + the method table
//      in access.h); denials are logged and returned as UNAUTHENTICATED /
//      PERMISSION_DENIED;
//   2. check the request's shape (request_shape.h): INVALID_ARGUMENT;
//   3. call the Engine with the caller as Actor and map its absl::Status to
//      the same grpc::StatusCode with the message unchanged.
//
// WatchEvents subscribes to the engine and streams each event. A stream
// whose client cannot keep up (kMaxQueuedEvents pending) ends with
// RESOURCE_EXHAUSTED instead of silently losing events; streams end with
// UNAVAILABLE when the server shuts down. At most max_watchers streams are
// open at once (each holds a server thread); more get RESOURCE_EXHAUSTED.
//
// Lifetime: the Engine must outlive this object. Thread-safe: gRPC calls the
// handlers from its thread pool concurrently.
#ifndef BALLAST_AGENT_API_SERVICES_H_
#define BALLAST_AGENT_API_SERVICES_H_

#include <memory>
#include <vector>

#include "agent/api/access.h"
#include "agent/api/log.h"
#include "agent/api/peer.h"
#include "agent/core/engine.h"

namespace grpc {
class Service;
}

namespace ballast::api {

inline constexpr size_t kMaxQueuedEvents = 4096;

class AdminServices {
 public:
  AdminServices(core::Engine& engine, AccessPolicy policy, UidLookup uid_of_fd, LogFn log,
                int max_watchers);
  ~AdminServices();
  AdminServices(const AdminServices&) = delete;
  AdminServices& operator=(const AdminServices&) = delete;

  // The seven services, owned by this object, to register with a builder.
  std::vector<grpc::Service*> services();

  // Replaces the access policy: every call that starts afterwards is
  // authorized by `policy` (calls in progress keep the one they started with).
  void SetPolicy(AccessPolicy policy);

  // Ends every WatchEvents stream (UNAVAILABLE) and refuses new ones. Call
  // before grpc::Server::Shutdown so shutdown does not wait on streams.
  void BeginShutdown();

  struct Shared;  // state common to all handlers (services.cc)

 private:
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<grpc::Service>> services_;
};

}  // namespace ballast::api

#endif  // BALLAST_AGENT_API_SERVICES_H_
