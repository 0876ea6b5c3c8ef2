#include "tools/lbagent/metrics_server.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/core/log.h"
#include "agent/core/metrics.h"

namespace ballast::lbagent {

using core::Log;
using core::LogLevel;

namespace {

// Lowers the calling thread's priority once (Linux: niceness is per thread).
// A thread of the server's pool keeps it for every scrape it serves.
void LowerThisThreadOnce() {
  thread_local const bool done = [] {
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    if (setpriority(PRIO_PROCESS, tid, kScrapeNice) != 0) {
      Log(LogLevel::kWarning, "metrics: cannot lower the scrape thread's priority",
          {{"error", strerror(errno)}});
    }
    return true;
  }();
  (void)done;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& listen,
                                                                    core::RouterEngine* engine) {
  const size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  const int port = std::stoi(listen.substr(colon + 1));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->server_.Get("/metrics", [engine](const httplib::Request&, httplib::Response& res) {
    LowerThisThreadOnce();
    auto status = std::make_shared<absl::StatusOr<v1::StatusResponse>>(engine->GetStatus());
    if (!status->ok()) {
      Log(LogLevel::kWarning, "metrics: reading the data plane failed",
          {{"error", std::string(status->status().message())}});
    }
    const core::EngineHealth health = engine->Health();
    auto proc = std::make_shared<absl::StatusOr<core::ProcessStats>>(core::ReadProcessStats());
    // Streamed family by family: thousands of backends make megabytes of text.
    res.set_chunked_content_provider(
        "text/plain; version=0.0.4; charset=utf-8",
        [status, health, proc](size_t, httplib::DataSink& sink) {
          core::RenderMetrics(
              status->ok() ? &**status : nullptr, health, proc->ok() ? &**proc : nullptr,
              [&sink](absl::string_view piece) { sink.write(piece.data(), piece.size()); });
          sink.done();
          return true;
        });
  });
  m->server_.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ballast lbagent: metrics at /metrics\n", "text/plain");
  });
  if (!m->server_.bind_to_port(host, port)) {
    return absl::FailedPreconditionError(absl::StrCat("metrics_listen ", listen,
                                                      ": cannot listen there (", strerror(errno),
                                                      "; is the port in use?)"));
  }
  m->thread_ = std::thread([s = &m->server_] { s->listen_after_bind(); });
  return m;
}

MetricsServer::~MetricsServer() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ballast::lbagent
