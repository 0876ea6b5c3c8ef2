// lbagent's metrics endpoint: GET /metrics (Prometheus text, streamed
// family by family) and GET /status (the read-only HTML status page,
// agent/core/status_page.h) on the configured address, normally loopback.
//
// A scrape reads the status (the flow scan included) on the server's own
// threads, which run at a lower CPU priority than the rest of the agent
// (nice +10): on a busy host a burst of scrapes yields the CPU to
// configuration changes and health decisions instead of competing with them
// (docs/benchmarks.md, "Writers under scrapers").
//
// The status page is rendered at most once a second (core::PageCache):
// a burst of requests from any local user costs one status read and flow
// scan per second. `status_page` (AgentConfig) may leave out its actions
// (who did what) or turn it off (404).
//
// Thread-safety: Start() and the destructor from one thread; the engine
// must outlive the server.
#ifndef BALLAST_TOOLS_LBAGENT_METRICS_SERVER_H_
#define BALLAST_TOOLS_LBAGENT_METRICS_SERVER_H_

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "agent/core/page_cache.h"
#include "agent/core/router_engine.h"
#include "agent/core/timeline.h"

namespace ballast::lbagent {

// The niceness of the scrape threads.
inline constexpr int kScrapeNice = 10;

class MetricsServer {
 public:
  // `listen`: "HOST:PORT" or "[V6]:PORT". FailedPrecondition when the
  // address cannot be bound.
  // `timeline` (the status page's timelines) may be null; it and the
  // engine must outlive the server.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, core::RouterEngine* engine, const core::Timeline* timeline,
      v1::AgentConfig::StatusPage status_page = v1::AgentConfig::STATUS_PAGE_FULL);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

 private:
  MetricsServer() = default;
  httplib::Server server_;
  core::PageCache status_page_{1000};
  std::thread thread_;
};

}  // namespace ballast::lbagent

#endif  // BALLAST_TOOLS_LBAGENT_METRICS_SERVER_H_
