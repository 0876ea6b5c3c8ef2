// BirdClient and Announcer against a real `bird` process on a temporary
// control socket: no root, no namespaces, no BGP peers (static protocols and
// the device protocol only). A missing bird binary fails these tests.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/bgp/announcer.h"
#include "agent/bgp/bird_client.h"

namespace ballast::bgp {
namespace {

VipPrefix V(const char* t) { return *VipPrefix::Parse(t); }

// A bird process in the foreground (-f) under a temporary directory; stopped
// by PID. Start() may be called again after Stop() (a "BIRD restart").
class BirdProcess {
 public:
  BirdProcess() {
    char tmpl[] = "/tmp/ballast-bird-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    std::ofstream conf(Conf());
    conf << "router id 198.18.0.1;\n"
            "protocol device {}\n"
         << V("198.18.0.10").BirdStaticProtocol()
         << V("2001:db8:10::10").BirdStaticProtocol()
         // A VIP protocol left enabled in the config: an orphan to withdraw.
         << "protocol static ballast_vip_c612000b { ipv4; route 198.18.0.11/32 blackhole; }\n"
         // Not ours: must stay up.
         << "protocol static other_static { ipv4; route 198.18.99.0/24 blackhole; }\n";
  }
  ~BirdProcess() {
    Stop();
    std::string cmd = absl::StrCat("rm -rf '", dir_, "'");
    if (std::system(cmd.c_str()) != 0) WARN("cannot remove " << dir_);
  }
  std::string Conf() const { return dir_ + "/bird.conf"; }
  std::string Socket() const { return dir_ + "/bird.ctl"; }

  void Start() {
    REQUIRE(access(BALLAST_BIRD_BIN, X_OK) == 0);  // bird2 must be installed
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const std::string conf = Conf(), sock = Socket();
      execl(BALLAST_BIRD_BIN, "bird", "-f", "-c", conf.c_str(), "-s", sock.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Ready when the control socket answers.
    for (int i = 0; i < 100; ++i) {
      BirdClient c({Socket(), absl::Seconds(1)});
      if (c.Connect().ok()) return;
      int st;
      REQUIRE(waitpid(pid_, &st, WNOHANG) == 0);  // bird must not have exited
      absl::SleepFor(absl::Milliseconds(50));
    }
    FAIL("bird did not open its control socket within 5 s");
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int st;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    unlink(Socket().c_str());
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

std::string StateOf(BirdClient& c, const std::string& name) {
  auto r = c.Command("show protocols");
  REQUIRE(r.ok());
  auto rows = ParseShowProtocols(*r);
  REQUIRE(rows.ok());
  for (const ProtocolRow& row : *rows) {
    if (row.name == name) return row.state;
  }
  return "absent";
}

TEST_CASE("client: greeting, show, errors with BIRD's message") {
  BirdProcess bird;
  bird.Start();
  BirdClient c({bird.Socket(), absl::Seconds(2)});
  REQUIRE(c.Connect().ok());
  CHECK(absl::StartsWith(c.version(), "BIRD 2."));

  auto status = c.Command("show status");
  REQUIRE(status.ok());
  CHECK(status->code == 13);
  CHECK_THAT(status->Text(), Catch::Contains("Router ID is 198.18.0.1"));

  auto bad = c.Command("enable no_such_protocol");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("syntax error"));
  // The connection stays usable after an error reply.
  CHECK(c.Command("show protocols").ok());
  CHECK(c.connected());

  CHECK(c.Command("show\nprotocols").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(c.Command("").status().code() == absl::StatusCode::kInvalidArgument);

  auto en = c.Command("enable ballast_vip_c612000a");
  REQUIRE(en.ok());
  CHECK(en->TextsWithCode(11) == std::vector<std::string>{"ballast_vip_c612000a: enabled"});
  auto again = c.Command("enable ballast_vip_c612000a");
  REQUIRE(again.ok());
  CHECK(again->TextsWithCode(10).size() == 1);  // already enabled
}

TEST_CASE("client: reconnects after a BIRD restart; clean errors while it is down") {
  BirdProcess bird;
  bird.Start();
  BirdClient c({bird.Socket(), absl::Seconds(2)});
  REQUIRE(c.Command("show status").ok());
  bird.Stop();
  auto down = c.Command("show status");
  CHECK(down.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(down.status().message()), Catch::Contains(bird.Socket()));
  bird.Start();
  CHECK(c.Command("show status").ok());
  // A restart between two commands on a live connection: retried once.
  bird.Stop();
  bird.Start();
  CHECK(c.Command("show status").ok());
}

TEST_CASE("client: a server that never greets times out") {
  char tmpl[] = "/tmp/ballast-bird-silent.XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string path = std::string(tmpl) + "/s.ctl";
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
  REQUIRE(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(listen(l, 4) == 0);  // never accepted: connect succeeds, nothing is said
  BirdClient c({path, absl::Milliseconds(300)});
  const absl::Time t0 = absl::Now();
  absl::Status s = c.Connect();
  const absl::Duration took = absl::Now() - t0;
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(s.message()), Catch::Contains("greeting"));
  CHECK(took >= absl::Milliseconds(250));
  CHECK(took < absl::Seconds(2));
  CHECK_FALSE(c.connected());
  close(l);
  unlink(path.c_str());
  rmdir(tmpl);
}

TEST_CASE("announcer: announce, idempotence, orphans, missing VIPs, holds, BIRD restart") {
  BirdProcess bird;
  bird.Start();
  BirdClient look({bird.Socket(), absl::Seconds(2)});
  const std::string p4 = V("198.18.0.10").ProtocolName();
  const std::string p6 = V("2001:db8:10::10").ProtocolName();
  REQUIRE(StateOf(look, p4) == "down");  // disabled yes: nothing until the agent says so
  REQUIRE(StateOf(look, "ballast_vip_c612000b") == "up");

  Announcer::Options opts;
  opts.bird = {bird.Socket(), absl::Seconds(2)};
  Announcer an(opts);
  an.SetDesired({{V("198.18.0.10"), true}, {V("2001:db8:10::10"), true}});
  ReconcileReport r = an.Reconcile();
  CHECK(r.status.ok());
  REQUIRE(r.changes.size() == 3);  // withdraw the orphan first, then two announcements
  CHECK(r.changes[0].step.protocol == "ballast_vip_c612000b");
  CHECK_FALSE(r.changes[0].step.enable);
  CHECK(StateOf(look, p4) == "up");
  CHECK(StateOf(look, p6) == "up");
  CHECK(StateOf(look, "ballast_vip_c612000b") == "down");
  CHECK(StateOf(look, "other_static") == "up");
  auto routes = look.Command("show route");
  REQUIRE(routes.ok());
  CHECK_THAT(routes->Text(), Catch::Contains("198.18.0.10/32") &&
                                 Catch::Contains("2001:db8:10::10/128") &&
                                 !Catch::Contains("198.18.0.11/32"));

  AnnouncerStatus st = an.Status();
  CHECK(st.bird_reachable);
  REQUIRE(st.vips.size() == 2);
  CHECK(st.vips[0].bird == BirdVipState::kAnnounced);
  CHECK(st.vips[0].error.empty());

  // Idempotent: nothing to send the second time.
  r = an.Reconcile();
  CHECK(r.status.ok());
  CHECK(r.changes.empty());

  // Changed behind its back (an operator's birdc disable): repaired.
  REQUIRE(look.Command(absl::StrCat("disable ", p6)).ok());
  r = an.Reconcile();
  CHECK(r.status.ok());
  REQUIRE(r.changes.size() == 1);
  CHECK(r.changes[0].step.enable);
  CHECK(StateOf(look, p6) == "up");

  // A desired VIP that BIRD's config does not declare: an actionable error.
  an.SetDesired({{V("198.18.0.10"), true}, {V("2001:db8:10::10"), true}, {V("198.18.0.12"), true}});
  r = an.Reconcile();
  CHECK(r.status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(r.status.message()),
             Catch::Contains("ballast_vip_c612000c") && Catch::Contains("protocol static"));
  CHECK(StateOf(look, p4) == "up");  // the others are unaffected

  // Hold: withdrawn and kept withdrawn, whatever is desired.
  an.SetDesired({{V("198.18.0.10"), true}, {V("2001:db8:10::10"), true}});
  r = an.WithdrawAll("fenced");
  CHECK(r.status.ok());
  CHECK(r.changes.size() == 2);
  CHECK(StateOf(look, p4) == "down");
  CHECK(StateOf(look, p6) == "down");
  an.SetDesired({{V("198.18.0.10"), true}, {V("2001:db8:10::10"), true}});
  CHECK(an.Reconcile().changes.empty());
  CHECK(StateOf(look, p4) == "down");
  CHECK(an.Status().hold_reason == "fenced");
  an.ReleaseHold();
  r = an.Reconcile();
  CHECK(r.status.ok());
  CHECK(r.changes.size() == 2);
  CHECK(StateOf(look, p4) == "up");

  // BIRD restarts: everything comes back disabled; the announcer reports BIRD
  // unreachable while it is down and re-announces once it is back.
  bird.Stop();
  r = an.Reconcile();
  CHECK(r.status.code() == absl::StatusCode::kUnavailable);
  st = an.Status();
  CHECK_FALSE(st.bird_reachable);
  CHECK(st.vips[0].bird == BirdVipState::kUnknown);
  bird.Start();
  CHECK(StateOf(look, p4) == "down");
  r = an.Reconcile();
  CHECK(r.status.ok());
  CHECK(StateOf(look, p4) == "up");
  CHECK(StateOf(look, p6) == "up");

  // `configure` resets runtime-enabled protocols to the config's `disabled
  // yes` (the reason for reconciling periodically): repaired too.
  REQUIRE(look.Command("configure").ok());
  for (int i = 0; i < 50 && StateOf(look, p4) != "down"; ++i)
    absl::SleepFor(absl::Milliseconds(20));
  CHECK(StateOf(look, p4) == "down");
  r = an.Reconcile();
  CHECK(r.status.ok());
  CHECK(StateOf(look, p4) == "up");
}

}  // namespace
}  // namespace ballast::bgp
