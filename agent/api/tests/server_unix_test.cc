// The admin server on its unix socket: file permissions, stale and live
// sockets, the caller's identity, request shapes, status codes end to end,
// the event stream and shutdown. Runs as root (the socket's group is
// changed to "adm").
#include <catch2/catch.hpp>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "agent/api/server.h"
#include "agent/api/tests/recording_engine.h"
#include "agent/api/tests/test_util.h"
#include "ballast/v1/api.grpc.pb.h"

namespace ballast::api {
namespace {

using testing::RecordingEngine;
using testing::TempDir;
using testing::UnixChannel;

v1::VipKey Key() {
  v1::VipKey k;
  k.set_address("198.18.0.10");
  k.set_port(80);
  k.set_protocol(v1::TCP);
  return k;
}

v1::AdminAccess Access(const std::string& socket, const std::string& group = "") {
  v1::AdminAccess a;
  a.set_socket_path(socket);
  a.set_socket_group(group);
  return a;
}

AdminServerOptions QuietOptions(std::vector<std::string>* log = nullptr) {
  AdminServerOptions o;
  o.log = [log](absl::string_view level, absl::string_view msg) {
    if (log != nullptr) log->push_back(std::string(level) + ": " + std::string(msg));
  };
  o.shutdown_grace = std::chrono::milliseconds(500);
  return o;
}

gid_t GroupId(const char* name) {
  struct group* g = getgrnam(name);
  if (g == nullptr) FAIL("group '" << name << "' does not exist on this host; the test needs it");
  return g->gr_gid;
}

// Binds a unix socket at `path` and closes it: what a crashed agent leaves.
void LeaveStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  close(fd);
}

TEST_CASE("unix socket: created with parents, owner, group adm, mode 0660", "[server][unix]") {
  REQUIRE(geteuid() == 0);  // chown to another group needs root; fail loudly otherwise
  TempDir dir;
  const std::string path = dir.Join("run/ballast/lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path, "adm"), QuietOptions());
  REQUIRE(server.ok());
  CHECK((*server)->socket_path() == path);
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 07777) == 0660);
  CHECK(st.st_uid == geteuid());
  CHECK(st.st_gid == GroupId("adm"));
  (*server)->Shutdown();
  CHECK(access(path.c_str(), F_OK) != 0);  // removed on shutdown
}

TEST_CASE("unix socket: default group is root", "[server][unix]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  REQUIRE(server.ok());
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(st.st_gid == 0);
  CHECK((st.st_mode & 07777) == 0660);
}

TEST_CASE("unix socket: stale socket replaced, live socket and non-socket refused",
          "[server][unix]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;

  SECTION("stale") {
    LeaveStaleSocket(path);
    auto server = StartAdminServer(engine, Access(path), QuietOptions());
    REQUIRE(server.ok());
    v1::ListVipsResponse resp;
    grpc::ClientContext ctx;
    CHECK(v1::Vips::NewStub(UnixChannel(path))->ListVips(&ctx, {}, &resp).ok());
  }
  SECTION("live") {
    auto first = StartAdminServer(engine, Access(path), QuietOptions());
    REQUIRE(first.ok());
    auto second = StartAdminServer(engine, Access(path), QuietOptions());
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(second.status().message()),
               Catch::Contains("is another lbagent running?"));
    // The first server is unharmed: its socket file is still there and serves.
    v1::ListVipsResponse resp;
    grpc::ClientContext ctx;
    CHECK(v1::Vips::NewStub(UnixChannel(path))->ListVips(&ctx, {}, &resp).ok());
  }
  SECTION("not a socket") {
    testing::WriteFile(path, "precious");
    auto server = StartAdminServer(engine, Access(path), QuietOptions());
    REQUIRE_FALSE(server.ok());
    CHECK(server.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(server.status().message()), Catch::Contains("is not a socket"));
    CHECK(testing::ReadFileOrDie(path) == "precious");
  }
  SECTION("unknown group") {
    auto server = StartAdminServer(engine, Access(path, "no-such-group-ballast"), QuietOptions());
    REQUIRE_FALSE(server.ok());
    CHECK(server.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(server.status().message()), Catch::Contains("admin.socket_group"));
    CHECK(access(path.c_str(), F_OK) != 0);  // nothing left behind
  }
  SECTION("path too long") {
    auto server = StartAdminServer(engine, Access(dir.Join(std::string(120, 'x'))), QuietOptions());
    CHECK(server.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(server.status().message()), Catch::Contains("admin.socket_path"));
  }
}

TEST_CASE("unix socket: refused in a directory others could write or that is not root's",
          "[server][unix]") {
  REQUIRE(geteuid() == 0);  // chown to another user needs root; fail loudly otherwise
  TempDir dir;
  const std::string sub = dir.Join("run");
  REQUIRE(mkdir(sub.c_str(), 0755) == 0);
  const std::string path = sub + "/lbagent.sock";
  RecordingEngine engine;
  struct Case {
    mode_t mode;
    uid_t uid;
    const char* why;
  };
  const Case cases[] = {
      {0777, 0, "writable by its group or by others (mode 0777)"},
      {01777, 0, "(mode 1777)"},  // sticky /tmp-like: others can still pre-create names
      {0775, 0, "(mode 0775)"},
      {0755, 65534, "belongs to uid 65534"},
  };
  for (const Case& c : cases) {
    INFO(c.why);
    REQUIRE(chmod(sub.c_str(), c.mode) == 0);
    REQUIRE(chown(sub.c_str(), c.uid, 0) == 0);
    auto server = StartAdminServer(engine, Access(path), QuietOptions());
    REQUIRE_FALSE(server.ok());
    CHECK(server.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(server.status().message()), Catch::Contains(c.why));
    CHECK(access(path.c_str(), F_OK) != 0);  // no socket was made
  }
  REQUIRE(chown(sub.c_str(), 0, 0) == 0);
  REQUIRE(chmod(sub.c_str(), 0755) == 0);
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  CHECK(server.ok());
}

TEST_CASE("unix callers are recorded as operator:unix:uid=<uid>", "[server][unix]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  REQUIRE(server.ok());
  auto stub = v1::Vips::NewStub(UnixChannel(path));
  v1::AddVipRequest req;
  *req.mutable_vip()->mutable_key() = Key();
  v1::Empty resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub->AddVip(&ctx, req, &resp);
  REQUIRE(s.ok());
  REQUIRE(engine.calls().size() == 1);
  CHECK(engine.calls()[0].method == "AddVip");
  CHECK(engine.calls()[0].actor == "operator:unix:uid=" + std::to_string(geteuid()));
}

TEST_CASE("malformed requests are rejected before the engine sees them", "[server][unix]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  REQUIRE(server.ok());
  auto channel = UnixChannel(path);
  {
    grpc::ClientContext ctx;
    v1::Empty resp;
    grpc::Status s = v1::Vips::NewStub(channel)->AddVip(&ctx, v1::AddVipRequest(), &resp);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(s.error_message() == "vip is required");
  }
  {
    grpc::ClientContext ctx;
    v1::Empty resp;
    v1::SetWeightRequest req;
    *req.mutable_vip() = Key();
    grpc::Status s = v1::Backends::NewStub(channel)->SetWeight(&ctx, req, &resp);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(s.error_message() == "address is required");
  }
  {
    grpc::ClientContext ctx;
    v1::Empty resp;
    grpc::Status s = v1::Admin::NewStub(channel)->Teardown(&ctx, v1::TeardownRequest(), &resp);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_FALSE(engine.ShutdownRequested());
  }
  CHECK(engine.calls().empty());
}

TEST_CASE("every engine status code reaches the client unchanged", "[server][unix][status]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  REQUIRE(server.ok());
  auto backends = v1::Backends::NewStub(UnixChannel(path));
  auto status = v1::Status::NewStub(UnixChannel(path));
  for (int code = 1; code <= 16; ++code) {
    const auto ac = static_cast<absl::StatusCode>(code);
    INFO(absl::StatusCodeToString(ac));
    const std::string msg =
        "backend 198.18.1.7: something specific (" + absl::StatusCodeToString(ac) + ")";
    engine.FailWith(absl::Status(ac, msg));
    {  // a write that returns absl::Status
      v1::SetWeightRequest req;
      *req.mutable_vip() = Key();
      req.set_address("198.18.1.7");
      req.set_weight(5);
      v1::Empty resp;
      grpc::ClientContext ctx;
      grpc::Status s = backends->SetWeight(&ctx, req, &resp);
      CHECK(static_cast<int>(s.error_code()) == code);
      CHECK(s.error_message() == msg);
    }
    {  // a read that returns absl::StatusOr
      v1::StatusResponse resp;
      grpc::ClientContext ctx;
      grpc::Status s = status->GetStatus(&ctx, {}, &resp);
      CHECK(static_cast<int>(s.error_code()) == code);
      CHECK(s.error_message() == msg);
    }
  }
}

TEST_CASE("WatchEvents streams engine events and ends on shutdown", "[server][unix][events]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  REQUIRE(server.ok());
  auto stub = v1::Status::NewStub(UnixChannel(path));
  grpc::ClientContext ctx;
  auto reader = stub->WatchEvents(&ctx, v1::WatchEventsRequest());
  reader->WaitForInitialMetadata();  // the server has subscribed
  REQUIRE(engine.subscribers() == 1);
  for (int i = 1; i <= 3; ++i) {
    v1::Event e;
    e.set_kind("backend_drained");
    e.set_vip("198.18.0.10:80/tcp");
    e.set_backend("198.18.1." + std::to_string(i));
    e.set_generation(i);
    engine.Emit(e);
  }
  for (int i = 1; i <= 3; ++i) {
    v1::Event e;
    REQUIRE(reader->Read(&e));
    CHECK(e.backend() == "198.18.1." + std::to_string(i));
    CHECK(e.generation() == static_cast<uint64_t>(i));
  }
  const auto t0 = std::chrono::steady_clock::now();
  (*server)->Shutdown();
  v1::Event e;
  CHECK_FALSE(reader->Read(&e));
  grpc::Status s = reader->Finish();
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(engine.subscribers() == 0);
}

TEST_CASE("a client that cancels its event stream is unsubscribed", "[server][unix][events]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  auto server = StartAdminServer(engine, Access(path), QuietOptions());
  REQUIRE(server.ok());
  auto stub = v1::Status::NewStub(UnixChannel(path));
  {
    grpc::ClientContext ctx;
    auto reader = stub->WatchEvents(&ctx, v1::WatchEventsRequest());
    reader->WaitForInitialMetadata();
    REQUIRE(engine.subscribers() == 1);
    ctx.TryCancel();
    reader->Finish();
  }
  for (int i = 0; i < 50 && engine.subscribers() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(engine.subscribers() == 0);
}

TEST_CASE("event streams are limited", "[server][unix][events]") {
  TempDir dir;
  const std::string path = dir.Join("lbagent.sock");
  RecordingEngine engine;
  AdminServerOptions opts = QuietOptions();
  opts.max_event_streams = 2;
  auto server = StartAdminServer(engine, Access(path), opts);
  REQUIRE(server.ok());
  auto stub = v1::Status::NewStub(UnixChannel(path));
  grpc::ClientContext c1, c2, c3;
  auto r1 = stub->WatchEvents(&c1, {});
  auto r2 = stub->WatchEvents(&c2, {});
  r1->WaitForInitialMetadata();
  r2->WaitForInitialMetadata();
  auto r3 = stub->WatchEvents(&c3, {});
  v1::Event e;
  CHECK_FALSE(r3->Read(&e));
  grpc::Status s = r3->Finish();
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(s.error_message(), Catch::Contains("limit 2"));
  c1.TryCancel();
  c2.TryCancel();
  r1->Finish();
  r2->Finish();
}

}  // namespace
}  // namespace ballast::api
