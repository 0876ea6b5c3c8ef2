// A TLS session relayed to a plaintext socket: for code that speaks only
// plaintext over a file descriptor (gRPC's channel from a connected fd,
// which is insecure-only) but must reach its peer over TLS on a socket the
// probe connected itself (with the probe's mark).
//
// Start() takes the connected TCP socket and its completed TLS session and
// returns the relay; plain_fd() is one end of an AF_UNIX stream pair whose
// bytes the relay's thread carries through the session both ways until
// either side closes, the deadline passes, or the relay is destroyed (which
// joins the thread).
#ifndef BALLAST_AGENT_PROBES_TLS_RELAY_H_
#define BALLAST_AGENT_PROBES_TLS_RELAY_H_

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/probes/probe.h"
#include "agent/probes/tls_client.h"

namespace ballast::probes {

class TlsRelay {
 public:
  static absl::StatusOr<std::unique_ptr<TlsRelay>> Start(dataplane::UniqueFd tcp, SslPtr ssl,
                                                         Clock::time_point deadline);
  ~TlsRelay();
  TlsRelay(const TlsRelay&) = delete;
  TlsRelay& operator=(const TlsRelay&) = delete;

  // The plaintext end, for the caller to take (ownership passes with it).
  int release_plain_fd() { return plain_.release(); }

 private:
  TlsRelay(dataplane::UniqueFd tcp, SslPtr ssl, dataplane::UniqueFd plain,
           dataplane::UniqueFd inner, Clock::time_point deadline);
  void Pump();

  dataplane::UniqueFd tcp_;
  SslPtr ssl_;
  dataplane::UniqueFd plain_;  // handed to the caller
  dataplane::UniqueFd inner_;  // the relay's end of the pair
  const Clock::time_point deadline_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_TLS_RELAY_H_
