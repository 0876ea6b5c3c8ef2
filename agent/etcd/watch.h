// A running etcd watch (made by Client::StartWatch): one thread holding a Watch
// stream to one member, moving to another member when the stream breaks and
// resuming after the last revision it delivered.
//
// What the callback is told (WatchUpdate::kind):
//   kEvents       changes, in revision order, each revision delivered once;
//   kProgress     no change up to `revision` (answer to RequestProgress());
//   kDisconnected the stream broke (`status` says why); it is being re-made
//                 on another member. Told once per outage: until kResumed the
//                 caller's view may be stale;
//   kResumed      a stream is back; nothing was missed;
//   kCompacted    the history after the last delivered revision was
//                 compacted away: events were lost. The watch has ended; the
//                 caller re-reads (Client::Get/GetPrefix) and starts a new
//                 watch from that read's revision + 1;
//   kFailed       the server refused the watch for good (`status`); ended.
//
// Threading: the callback runs on the watch thread, never concurrently with
// itself. Stop() and the destructor may be called from any thread except the
// callback (they join the thread); after they return the callback is not
// running and will not run again. RequestProgress() is thread-safe.
#ifndef BALLAST_AGENT_ETCD_WATCH_H_
#define BALLAST_AGENT_ETCD_WATCH_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/etcd/types.h"

namespace grpc {
class ClientContext;
}

namespace ballast::etcd {

class Client;

struct WatchUpdate {
  enum class Kind { kEvents, kProgress, kDisconnected, kResumed, kCompacted, kFailed };
  Kind kind = Kind::kEvents;
  std::vector<Event> events;
  // kEvents: revision of the last event; kProgress: every change up to here
  // has been delivered; kCompacted: the compaction revision.
  int64_t revision = 0;
  absl::Status status;  // kDisconnected, kFailed
};

class Watch {
 public:
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Ends the watch and joins its thread. Idempotent.
  void Stop();
  // Asks the member for a kProgress update (no-op while disconnected).
  void RequestProgress();
  // The next revision the watch will deliver from.
  int64_t next_revision() const { return next_revision_.load(); }

 private:
  friend class Client;
  Watch(Client& client, WatchSpec spec, int64_t start_revision,
        std::function<void(const WatchUpdate&)> callback);
  void Run();
  // One stream on member `i`; returns how it ended. `ended` is set when the
  // watch must not be re-made (compacted, failed, stopped).
  absl::Status RunStream(size_t i, bool& ended);
  void Deliver(const WatchUpdate& update);

  Client& client_;
  WatchSpec spec_;
  std::function<void(const WatchUpdate&)> callback_;
  std::atomic<int64_t> next_revision_;
  std::atomic<bool> stop_{false};
  bool disconnected_ = false;  // watch thread only

  std::mutex mu_;  // guards context_, stream writes, sleeping
  std::condition_variable cv_;
  grpc::ClientContext* context_ = nullptr;
  std::function<bool()> progress_writer_;  // set while a stream is open
  std::thread thread_;
};

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_WATCH_H_
