#include "tools/lbagent/metrics_server.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/core/log.h"
#include "agent/core/metrics.h"
#include "agent/core/status_page.h"

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

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, core::RouterEngine* engine, const core::Timeline* timeline,
    v1::AgentConfig::StatusPage status_page) {
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
  core::PageCache* cache = &m->status_page_;
  const bool hide_actions = status_page == v1::AgentConfig::STATUS_PAGE_NO_AUDIT;
  if (status_page != v1::AgentConfig::STATUS_PAGE_OFF) {
    m->server_.Get("/status", [engine, timeline, cache, hide_actions](const httplib::Request&,
                                                                      httplib::Response& res) {
      LowerThisThreadOnce();
      const int64_t now_ms = absl::ToUnixMillis(absl::Now());
      const std::string page = cache->Get(now_ms, [&] {
        core::StatusPageInput in;
        in.now_unix_ms = now_ms;
        auto status = engine->GetStatus();
        if (status.ok()) {
          in.status = &*status;
        } else {
          in.status_error = std::string(status.status().message());
        }
        // The last actions: those of the last 10 minutes, at most 30.
        constexpr size_t kActions = 30;
        in.hide_actions = hide_actions;
        if (!hide_actions) {
          if (auto recent = engine->QueryAudit(in.now_unix_ms - 600'000, 0); recent.ok()) {
            const size_t skip = recent->size() > kActions ? recent->size() - kActions : 0;
            in.recent.assign(recent->begin() + static_cast<std::ptrdiff_t>(skip), recent->end());
          }
        }
        if (timeline != nullptr) in.timelines = timeline->Snapshot(in.now_unix_ms);
        return core::RenderStatusPage(in);
      });
      res.set_header("Cache-Control", "no-store");
      res.set_content(page, "text/html; charset=utf-8");
    });
  }
  m->server_.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ballast lbagent: metrics at /metrics, status page at /status\n", "text/plain");
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
