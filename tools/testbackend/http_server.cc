#include "tools/testbackend/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ballast::testbackend {
namespace {

constexpr size_t kReadChunk = 16 * 1024;

bool SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Serialize(const HttpRequest& req, const HttpReply& reply, bool close) {
  std::string out =
      absl::StrCat("HTTP/1.1 ", reply.status, " ", HttpReason(reply.status),
                   "\r\nServer: ballast-testbackend\r\nContent-Type: ", reply.content_type,
                   "\r\nContent-Length: ", reply.body.size(), "\r\n");
  for (const auto& [k, v] : reply.headers) absl::StrAppend(&out, k, ": ", v, "\r\n");
  if (close) {
    out += "Connection: close\r\n";
  } else if (req.minor_version == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  if (req.method != "HEAD") out += reply.body;
  return out;
}

}  // namespace

const char* HttpReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool HttpConnection::Abandoned() const {
  if (stopping_->load(std::memory_order_relaxed)) return true;
  pollfd p{fd_, POLLRDHUP, 0};
  int n = poll(&p, 1, 0);
  return n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const SocketAddress& address,
                                                              Options options,
                                                              HttpHandler handler) {
  absl::StatusOr<int> fd = Listen(address, 1024);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<SocketAddress> bound = BoundAddress(*fd);
  if (!bound.ok()) {
    close(*fd);
    return bound.status();
  }
  std::unique_ptr<HttpServer> server(
      new HttpServer(*fd, *bound, std::move(options), std::move(handler)));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

HttpServer::HttpServer(int listen_fd, SocketAddress bound, Options options, HttpHandler handler)
    : listen_fd_(listen_fd),
      bound_(bound),
      options_(std::move(options)),
      handler_(std::move(handler)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  stopping_.store(true);
  // Wakes the acceptor blocked in accept() (Linux returns EINVAL).
  shutdown(listen_fd_, SHUT_RDWR);
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();  // an acceptor waiting for a free slot
  }
  if (acceptor_.joinable()) acceptor_.join();
  close(listen_fd_);
  std::unique_lock<std::mutex> lock(mu_);
  for (int fd : open_) shutdown(fd, SHUT_RDWR);
  cv_.wait(lock, [this] { return threads_ == 0; });
}

void HttpServer::AcceptLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_.load() || threads_ < options_.max_connections; });
      if (stopping_.load()) return;
    }
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_.load()) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::fprintf(stderr, "ballast-testbackend: %s: accept: %s\n", options_.label.c_str(),
                   strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // e.g. EMFILE
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_.load()) {
        close(fd);
        return;
      }
      open_.insert(fd);
      ++threads_;
    }
    if (options_.stats != nullptr) {
      options_.stats->connections_accepted.fetch_add(1);
      options_.stats->connections_open.fetch_add(1);
    }
    try {
      std::thread([this, fd] { Serve(fd); }).detach();
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "ballast-testbackend: %s: cannot start a connection thread: %s\n",
                   options_.label.c_str(), e.what());
      Unregister(fd);
    }
  }
}

void HttpServer::Unregister(int fd) {
  // Out of the registry before close(), so Stop() never shuts down a number
  // that a new connection already reuses.
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(fd);
  }
  close(fd);
  if (options_.stats != nullptr) options_.stats->connections_open.fetch_sub(1);
  std::lock_guard<std::mutex> lock(mu_);
  --threads_;
  cv_.notify_all();
}

void HttpServer::Serve(int fd) {
  HttpConnection conn(fd, &stopping_);
  std::string buf;
  size_t off = 0;  // start of unparsed bytes in buf
  bool reset = false;

  // Reads more bytes into buf; false on EOF, error, idle timeout or stop.
  auto read_more = [&]() -> bool {
    if (off == buf.size()) {
      buf.clear();
      off = 0;
    } else if (off > kReadChunk) {
      buf.erase(0, off);
      off = 0;
    }
    for (;;) {
      if (stopping_.load()) return false;
      pollfd p{fd, POLLIN, 0};
      int n = poll(&p, 1, options_.idle_timeout_ms);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      size_t old = buf.size();
      buf.resize(old + kReadChunk);
      ssize_t got = recv(fd, buf.data() + old, kReadChunk, 0);
      if (got < 0 && errno == EINTR) {
        buf.resize(old);
        continue;
      }
      if (got <= 0) {
        buf.resize(old);
        return false;
      }
      buf.resize(old + static_cast<size_t>(got));
      return true;
    }
  };
  auto available = [&] { return absl::string_view(buf).substr(off); };

  for (;;) {
    HttpRequest req;
    bool have_head = false;
    while (!have_head) {
      absl::StatusOr<size_t> used = ParseRequestHead(available(), &req);
      if (!used.ok()) {
        HttpReply bad{.status = 400, .body = std::string(used.status().message()) + "\n"};
        HttpRequest dummy;
        SendAll(fd, Serialize(dummy, bad, true));
        goto done;
      }
      if (*used > 0) {
        off += *used;
        have_head = true;
      } else if (!read_more()) {
        goto done;
      }
    }
    // The body.
    if (req.chunked || req.content_length > 0) {
      if (req.expect_continue && available().empty() &&
          !SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n")) {
        goto done;
      }
      if (req.chunked) {
        ChunkedDecoder decoder;
        while (!decoder.done()) {
          if (available().empty() && !read_more()) goto done;
          absl::StatusOr<size_t> used =
              decoder.Feed(available(), &req.body, options_.max_body_kept);
          if (!used.ok()) {
            HttpReply bad{.status = 400, .body = std::string(used.status().message()) + "\n"};
            SendAll(fd, Serialize(req, bad, true));
            goto done;
          }
          off += *used;
        }
      } else {
        uint64_t left = req.content_length;
        while (left > 0) {
          if (available().empty() && !read_more()) goto done;
          size_t n = static_cast<size_t>(std::min<uint64_t>(left, available().size()));
          if (req.body.size() < options_.max_body_kept) {
            absl::StrAppend(&req.body, available().substr(0, std::min(n, options_.max_body_kept -
                                                                             req.body.size())));
          }
          off += n;
          left -= n;
        }
      }
    }

    HttpReply reply = handler_(req, conn);
    if (reply.kind == HttpReply::Kind::kReset) {
      reset = true;
      goto done;
    }
    if (reply.kind == HttpReply::Kind::kClose) goto done;
    bool close_after = !req.keep_alive || stopping_.load();
    if (!SendAll(fd, Serialize(req, reply, close_after)) || close_after) goto done;
  }

done:
  if (reset) {
    linger l{1, 0};  // close() then sends RST instead of FIN
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  Unregister(fd);
}

}  // namespace ballast::testbackend
