// SystemdNotifier over a real notification socket (a unix datagram socket
// standing where systemd's would, $NOTIFY_SOCKET pointing at it), and the
// watchdog's timing rule.
#include "tools/lbagent/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

namespace ballast::lbagent {
namespace {

// A datagram socket at a fresh path; $NOTIFY_SOCKET names it while alive.
class NotifySocket {
 public:
  NotifySocket() {
    path_ = "/tmp/ballast-notify-" + std::to_string(getpid()) + ".sock";
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    path_.copy(a.sun_path, sizeof(a.sun_path) - 1);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    timeval tv = {1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~NotifySocket() {
    unsetenv("NOTIFY_SOCKET");
    close(fd_);
    unlink(path_.c_str());
  }
  std::string Receive() {
    char buf[512];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST_CASE("The notifier speaks systemd's protocol on $NOTIFY_SOCKET", "[systemd]") {
  NotifySocket sock;
  SystemdNotifier n;
  n.Ready("serving 2 VIPs");
  CHECK(sock.Receive() == "READY=1\nSTATUS=serving 2 VIPs");
  n.Reloading();
  const std::string reloading = sock.Receive();
  CHECK(reloading.rfind("RELOADING=1\nMONOTONIC_USEC=", 0) == 0);
  CHECK(reloading.size() > std::string("RELOADING=1\nMONOTONIC_USEC=").size());
  n.WatchdogPing();
  CHECK(sock.Receive() == "WATCHDOG=1");
  n.Stopping("SIGTERM");
  CHECK(sock.Receive() == "STOPPING=1\nSTATUS=SIGTERM");
}

TEST_CASE("Outside systemd the notifier does nothing, and there is no watchdog", "[systemd]") {
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  SystemdNotifier n;
  n.Ready("x");  // no socket: nothing happens, nothing fails
  CHECK(!n.watchdog().has_value());
}

TEST_CASE("The watchdog interval comes from $WATCHDOG_USEC for this process only", "[systemd]") {
  setenv("WATCHDOG_USEC", "2000000", 1);
  unsetenv("WATCHDOG_PID");
  CHECK(SystemdNotifier().watchdog() == std::chrono::microseconds(2'000'000));
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  CHECK(SystemdNotifier().watchdog() == std::chrono::microseconds(2'000'000));
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);  // another process's
  CHECK(!SystemdNotifier().watchdog().has_value());
  unsetenv("WATCHDOG_PID");
  unsetenv("WATCHDOG_USEC");
}

TEST_CASE("A watchdog ping is due at once, then every half interval", "[systemd]") {
  using std::chrono::milliseconds;
  const auto t0 = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  const std::chrono::microseconds interval = milliseconds(1000);
  CHECK(WatchdogDue(std::nullopt, t0, interval));
  CHECK(!WatchdogDue(t0, t0 + milliseconds(499), interval));
  CHECK(WatchdogDue(t0, t0 + milliseconds(500), interval));
  CHECK(WatchdogDue(t0, t0 + milliseconds(5000), interval));
}

}  // namespace
}  // namespace ballast::lbagent
