#include "tools/testbackend/stats.h"

#include "absl/strings/str_format.h"

namespace ballast::testbackend {

void Stats::Reset() {
  for (Counter* c :
       {&http_requests, &grpc_requests, &probe_requests, &real_requests, &faulted_probe,
        &faulted_real, &delayed, &errors, &resets, &hangs, &wrong_bodies, &connections_accepted}) {
    c->store(0, std::memory_order_relaxed);
  }
}

std::string Stats::Json() const {
  auto v = [](const Counter& c) { return c.load(std::memory_order_relaxed); };
  uint64_t http = v(http_requests);
  uint64_t grpc = v(grpc_requests);
  return absl::StrFormat(
      "{\"requests\":{\"total\":%d,\"http\":%d,\"grpc\":%d,\"probe\":%d,\"real\":%d},"
      "\"faults\":{\"faulted_probe\":%d,\"faulted_real\":%d,\"delay\":%d,\"error\":%d,"
      "\"reset\":%d,\"hang\":%d,\"wrong_body\":%d},"
      "\"connections\":{\"accepted\":%d,\"open\":%d}}",
      http + grpc, http, grpc, v(probe_requests), v(real_requests), v(faulted_probe),
      v(faulted_real), v(delayed), v(errors), v(resets), v(hangs), v(wrong_bodies),
      v(connections_accepted), connections_open.load(std::memory_order_relaxed));
}

}  // namespace ballast::testbackend
