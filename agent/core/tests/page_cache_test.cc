// PageCache: one rendering per max age, whatever the request rate.
#include "agent/core/page_cache.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

namespace ballast::core {
namespace {

TEST_CASE("PageCache renders once per max age") {
  PageCache cache(1000);
  int n = 0;
  const auto render = [&n] { return "page " + std::to_string(++n); };
  CHECK(cache.Get(10'000, render) == "page 1");
  for (int64_t t = 10'000; t < 11'000; t += 10) CHECK(cache.Get(t, render) == "page 1");
  CHECK(cache.Get(11'000, render) == "page 2");
  // A clock that went back does not keep the page forever.
  CHECK(cache.Get(5'000, render) == "page 3");
  CHECK(cache.renders() == 3);
}

TEST_CASE("PageCache: concurrent requests share one rendering") {
  PageCache cache(60'000);
  std::atomic<int> n{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 100; ++j) cache.Get(1'000 + j, [&n] { return std::to_string(++n); });
    });
  }
  for (auto& t : threads) t.join();
  CHECK(n == 1);
  CHECK(cache.renders() == 1);
}

}  // namespace
}  // namespace ballast::core
