// HttpServer: an HTTP/1.1 server on one TCP listener, one thread per
// connection with a cap. Used for the backend's traffic port and for the
// control endpoint, with different handlers.
//
// Why threads: a handler may sleep (delay), hold a request forever (hang) or
// reset the connection, and each of these must be exact for the connection it
// concerns. Blocking code per connection keeps that obvious; the cap
// (max_connections, default 4096) bounds resources, and while the cap is
// reached the server stops accepting, so new connections wait in the
// listen backlog (as with a saturated real server).
//
// Connections are keep-alive (HTTP/1.1 default, or HTTP/1.0 with
// "Connection: keep-alive"), requests may be pipelined, bodies are read
// (Content-Length or chunked) before the handler runs. An idle connection is
// closed after idle_timeout_ms.
//
// Thread-safety: Start/Stop from one owning thread; the handler runs on
// connection threads concurrently and must be thread-safe. Stop() stops
// accepting, shuts every open connection down (handlers waiting on
// HttpConnection::Abandoned() return) and waits for all connection threads.
#ifndef BALLAST_TOOLS_TESTBACKEND_HTTP_SERVER_H_
#define BALLAST_TOOLS_TESTBACKEND_HTTP_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/testbackend/address.h"
#include "tools/testbackend/http_parser.h"
#include "tools/testbackend/stats.h"

namespace ballast::testbackend {

struct HttpReply {
  enum class Kind {
    kRespond,  // send status, headers and body
    kReset,    // abort the connection with a TCP RST (SO_LINGER 0), no answer
    kClose,    // close the connection quietly (FIN), no answer
  };
  Kind kind = Kind::kRespond;
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // not sent for HEAD; Content-Length always is
};

// What a handler may ask about the connection it serves.
class HttpConnection {
 public:
  HttpConnection(int fd, const std::atomic<bool>* stopping) : fd_(fd), stopping_(stopping) {}
  // True when the client has closed or reset the connection (or half-closed
  // it), or the server is stopping: a waiting handler should give up.
  bool Abandoned() const;

 private:
  int fd_;
  const std::atomic<bool>* stopping_;
};

using HttpHandler = std::function<HttpReply(const HttpRequest&, const HttpConnection&)>;

class HttpServer {
 public:
  struct Options {
    std::string label = "http";  // for log lines, e.g. "control"
    int max_connections = 4096;
    int idle_timeout_ms = 60'000;
    size_t max_body_kept = 1 << 20;  // larger bodies are read and dropped
    Stats* stats = nullptr;          // connection counters, optional
  };

  // Binds and starts accepting. Errors name the address.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const SocketAddress& address,
                                                           Options options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound address (the real port when started with port 0).
  const SocketAddress& address() const { return bound_; }
  void Stop();

 private:
  HttpServer(int listen_fd, SocketAddress bound, Options options, HttpHandler handler);
  void AcceptLoop();
  void Serve(int fd);
  // Drops fd from the registry, closes it, and ends its thread's count.
  void Unregister(int fd);

  const int listen_fd_;
  const SocketAddress bound_;
  const Options options_;
  const HttpHandler handler_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_set<int> open_;  // guarded by mu_; connection fds
  int threads_ = 0;               // guarded by mu_; live connection threads
  bool stopped_ = false;          // guarded by mu_
};

// "OK", "Not Found", ...
const char* HttpReason(int status);

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_HTTP_SERVER_H_
