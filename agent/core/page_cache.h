// A rendered page kept for a while: a burst of requests for an expensive
// page (the status page reads every counter and scans the flow table)
// costs one rendering per max age, whatever the request rate.
//
// Thread-safety: Get() may be called from any thread; one caller renders
// while the others wait for its result (they would all render the same
// thing). Time is passed in.
#ifndef BALLAST_AGENT_CORE_PAGE_CACHE_H_
#define BALLAST_AGENT_CORE_PAGE_CACHE_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace ballast::core {

class PageCache {
 public:
  explicit PageCache(int64_t max_age_ms) : max_age_ms_(max_age_ms) {}

  // The page rendered at most max_age_ms before `now_ms`, else `render()`'s.
  std::string Get(int64_t now_ms, const std::function<std::string()>& render);

  // How many times Get() rendered (for tests and logs).
  uint64_t renders() const;

 private:
  const int64_t max_age_ms_;
  mutable std::mutex mu_;
  std::string page_;
  int64_t rendered_ms_ = 0;
  bool have_ = false;
  uint64_t renders_ = 0;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_PAGE_CACHE_H_
