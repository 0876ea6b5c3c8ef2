// lbagent's side of systemd's service protocol (sd_notify(3)): READY=1 once
// the agent serves (the data plane programmed and attached, the admin socket
// listening), RELOADING=1 / READY=1 around a SIGHUP reload, STOPPING=1 on
// the way out, STATUS= lines, and the watchdog: WATCHDOG=1 pings from the
// main loop while it and the engine answer, so a hung agent is restarted
// (WatchdogSec= in deploy/lbagent.service).
//
// Outside systemd (no $NOTIFY_SOCKET) every call does nothing. The watchdog
// decision (WatchdogDue) is pure, with time passed in. Not thread-safe: the
// main loop calls these.
#ifndef BALLAST_TOOLS_LBAGENT_SYSTEMD_NOTIFY_H_
#define BALLAST_TOOLS_LBAGENT_SYSTEMD_NOTIFY_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ballast::lbagent {

class SystemdNotifier {
 public:
  // Reads $NOTIFY_SOCKET and $WATCHDOG_USEC (and $WATCHDOG_PID, which must
  // be this process when set).
  SystemdNotifier();

  void Ready(std::string_view status);
  void Reloading();  // with MONOTONIC_USEC, as systemd asks of reloads
  void Stopping(std::string_view status);
  void Status(std::string_view status);
  void WatchdogPing();

  // The watchdog interval systemd set (WatchdogSec=), if any.
  std::optional<std::chrono::microseconds> watchdog() const { return watchdog_; }

 private:
  void Send(const std::string& message);
  std::optional<std::chrono::microseconds> watchdog_;
};

// A ping is due when half the interval has passed since the last one
// (sd_watchdog_enabled(3)'s advice), or there was none yet.
bool WatchdogDue(std::optional<std::chrono::steady_clock::time_point> last_ping,
                 std::chrono::steady_clock::time_point now, std::chrono::microseconds interval);

}  // namespace ballast::lbagent

#endif  // BALLAST_TOOLS_LBAGENT_SYSTEMD_NOTIFY_H_
