#include "agent/core/page_cache.h"

namespace ballast::core {

std::string PageCache::Get(int64_t now_ms, const std::function<std::string()>& render) {
  std::lock_guard<std::mutex> lock(mu_);
  // A clock that went back counts as fresh age 0 (never a page from the
  // future kept forever).
  if (have_ && now_ms >= rendered_ms_ && now_ms - rendered_ms_ < max_age_ms_) return page_;
  page_ = render();
  rendered_ms_ = now_ms;
  have_ = true;
  ++renders_;
  return page_;
}

uint64_t PageCache::renders() const {
  std::lock_guard<std::mutex> lock(mu_);
  return renders_;
}

}  // namespace ballast::core
