#include "tools/lbagent/systemd_notify.h"

#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdint>
#include <cstdio>

namespace ballast::lbagent {

SystemdNotifier::SystemdNotifier() {
  uint64_t usec = 0;
  // > 0: the watchdog is on for this process (WATCHDOG_PID unset or ours).
  if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) > 0 && usec > 0) {
    watchdog_ = std::chrono::microseconds(usec);
  }
}

void SystemdNotifier::Send(const std::string& message) {
  // 0: not run by systemd (no $NOTIFY_SOCKET); < 0: the socket refused,
  // which systemd would also see as a missing READY; nothing to do here.
  (void)sd_notify(/*unset_environment=*/0, message.c_str());
}

void SystemdNotifier::Ready(std::string_view status) {
  Send("READY=1\nSTATUS=" + std::string(status));
}

void SystemdNotifier::Reloading() {
  timespec ts = {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t usec =
      static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

void SystemdNotifier::Stopping(std::string_view status) {
  Send("STOPPING=1\nSTATUS=" + std::string(status));
}

void SystemdNotifier::Status(std::string_view status) { Send("STATUS=" + std::string(status)); }

void SystemdNotifier::WatchdogPing() { Send("WATCHDOG=1"); }

bool WatchdogDue(std::optional<std::chrono::steady_clock::time_point> last_ping,
                 std::chrono::steady_clock::time_point now, std::chrono::microseconds interval) {
  return !last_ping.has_value() || now - *last_ping >= interval / 2;
}

}  // namespace ballast::lbagent
