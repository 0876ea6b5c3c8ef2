// ballast-testbackend: a small real server for the lab and the health tests.
//
// It answers HTTP/1.1 (GET/HEAD/POST on any path: 200, body
// "backend <name>\n", header "X-Backend: <name>") and the gRPC method
// ballast.testing.v1.TestBackend/Hello (name=<name>,
// message "hello <from> from <name>", healthy=true), and lets a test inject
// faults at run time through a local control endpoint: delay_ms (+
// delay_jitter_ms), error_rate (503 / UNAVAILABLE), reset_rate (TCP RST /
// gRPC RST_STREAM), hang (requests are read and held, never answered, while
// the knob is set; connections stay open and new ones are still accepted),
// wrong_body (200 without the name / gRPC name "wrong"), real_only.
// See README.md for the whole behaviour, and control.h for the protocol.
//
// PROBE CONTRACT. The agent's synthetic probes identify themselves so that
// real_only can fail real traffic while probes still pass:
//   - HTTP: the User-Agent header starts with "ballast-probe"
//     (e.g. "ballast-probe/1");
//   - gRPC: the "user-agent" metadata carries a token starting with
//     "ballast-probe" (set the channel's primary user agent,
//     GRPC_ARG_PRIMARY_USER_AGENT_STRING, to "ballast-probe/1"; grpc++ then
//     sends "grpc-c++/1.51.1 ballast-probe/1 grpc-c/..."), or
//     HelloRequest.from is exactly "ballast-probe".
//   Precisely: a request is a probe when any space-separated token of its
//   User-Agent starts with "ballast-probe" (or from == "ballast-probe").
// Every other request is "real". /stats counts both kinds separately.
//
// Process control: SIGTERM or SIGINT stops the process cleanly (exit 0);
// tests use SIGKILL (crash) and SIGSTOP (whole-process hang) themselves.
// Exit codes: 0 clean stop, 1 cannot serve (e.g. address in use), 2 bad
// flags (the message names the flag).
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/testbackend/address.h"
#include "tools/testbackend/backend_http.h"
#include "tools/testbackend/control.h"
#include "tools/testbackend/fault_engine.h"
#include "tools/testbackend/grpc_service.h"
#include "tools/testbackend/http_server.h"
#include "tools/testbackend/stats.h"

namespace ballast::testbackend {
namespace {

constexpr absl::string_view kUsage =
    "usage: ballast-testbackend --name NAME [flags]\n"
    "       ballast-testbackend ctl [--control ADDR] set k=v ... | clear | show | stats | "
    "reset-stats\n"
    "flags:\n"
    "  --name NAME            this backend's name, in every answer (required;\n"
    "                         1..64 of A-Z a-z 0-9 . _ : -)\n"
    "  --http ADDR            HTTP/1.1 listener (default [::]:80, dual-stack; off)\n"
    "  --grpc ADDR            gRPC listener (default [::]:50051; off)\n"
    "  --control ADDR         control endpoint (default 127.0.0.1:9000; off)\n"
    "  --set k=v              initial fault knob, repeatable\n"
    "  --max-conns N          concurrent HTTP connections (default 4096)\n"
    "  --idle-timeout-ms N    close idle HTTP connections after N ms (default 60000)\n"
    "ADDR is IP:PORT: 127.0.0.1:8080, [::1]:8080, [::]:80; port 0 picks a free port.\n"
    "knobs: delay_ms delay_jitter_ms error_rate reset_rate hang wrong_body real_only\n";

struct Flags {
  std::string name;
  std::string http = "[::]:80";
  std::string grpc = "[::]:50051";
  std::string control = "127.0.0.1:9000";
  std::vector<std::string> set;
  int max_conns = 4096;
  int idle_timeout_ms = 60'000;
};

int Usage(const std::string& message) {
  std::fprintf(stderr, "ballast-testbackend: %s\n%s", message.c_str(), kUsage.data());
  return 2;
}

bool ValidName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Parses flags; returns -1 to go on, or an exit code.
int ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage.data(), stdout);
      return 0;
    }
    if (a == "--version") {
      std::printf("ballast-testbackend %s\n", BALLAST_VERSION);
      return 0;
    }
    if (a.substr(0, 2) != "--") return Usage(absl::StrCat("unexpected argument '", a, "'"));
    std::string flag(a);
    std::string value;
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage(absl::StrCat(flag, " needs a value"));
    }
    auto address = [&](std::string* out) -> int {
      if (value != "off") {
        absl::StatusOr<SocketAddress> parsed = ParseSocketAddress(value);
        if (!parsed.ok()) return Usage(absl::StrCat(flag, ": ", parsed.status().message()));
      }
      *out = value;
      return -1;
    };
    auto number = [&](int* out, int lo, int hi) -> int {
      if (!absl::SimpleAtoi(value, out) || *out < lo || *out > hi) {
        return Usage(absl::StrCat(flag, ": '", value, "' is not a number ", lo, "..", hi));
      }
      return -1;
    };
    int rc = -1;
    if (flag == "--name") {
      if (!ValidName(value)) {
        return Usage(
            absl::StrCat("--name: '", value, "' is not 1..64 characters of A-Z a-z 0-9 . _ : -"));
      }
      f->name = value;
    } else if (flag == "--http") {
      rc = address(&f->http);
    } else if (flag == "--grpc") {
      rc = address(&f->grpc);
    } else if (flag == "--control") {
      rc = address(&f->control);
    } else if (flag == "--set") {
      Knobs scratch;
      absl::Status st = ApplyKnob(&scratch, value);
      if (!st.ok()) return Usage(absl::StrCat("--set: ", st.message()));
      f->set.push_back(value);
    } else if (flag == "--max-conns") {
      rc = number(&f->max_conns, 1, 100'000);
    } else if (flag == "--idle-timeout-ms") {
      rc = number(&f->idle_timeout_ms, 100, 3'600'000);
    } else {
      return Usage(absl::StrCat("unknown flag ", flag));
    }
    if (rc != -1) return rc;
  }
  if (f->name.empty()) return Usage("--name is required");
  return -1;
}

int Run(int argc, char** argv) {
  if (argc >= 2 && absl::string_view(argv[1]) == "ctl") {
    return RunCtl(argc - 2, argv + 2, stdout, stderr);
  }
  Flags flags;
  if (int rc = ParseFlags(argc, argv, &flags); rc != -1) return rc;

  // Signals: SIGTERM/SIGINT are taken by sigwait below, in no other thread
  // (the mask is inherited by every thread started after this point).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Stats stats;
  FaultEngine engine(&stats);
  if (absl::Status st = engine.Set(flags.set); !st.ok()) return Usage(std::string(st.message()));
  const std::string& name = flags.name;

  std::unique_ptr<HttpServer> http;
  if (flags.http != "off") {
    HttpServer::Options o{.label = "http",
                          .max_connections = flags.max_conns,
                          .idle_timeout_ms = flags.idle_timeout_ms,
                          .stats = &stats};
    auto s = HttpServer::Start(*ParseSocketAddress(flags.http), o,
                               MakeBackendHttpHandler(name, &engine));
    if (!s.ok()) {
      std::fprintf(stderr, "ballast-testbackend %s: --http: %s\n", name.c_str(),
                   std::string(s.status().message()).c_str());
      return 1;
    }
    http = std::move(*s);
  }
  std::unique_ptr<HttpServer> control;
  if (flags.control != "off") {
    HttpServer::Options o{.label = "control", .max_connections = 64, .idle_timeout_ms = 10'000};
    auto s =
        HttpServer::Start(*ParseSocketAddress(flags.control), o, MakeControlHandler(name, &engine));
    if (!s.ok()) {
      std::fprintf(stderr, "ballast-testbackend %s: --control: %s\n", name.c_str(),
                   std::string(s.status().message()).c_str());
      return 1;
    }
    control = std::move(*s);
  }
  TestBackendService service(name, &engine);
  std::unique_ptr<grpc::Server> grpc_server;
  std::string grpc_bound = "off";
  if (flags.grpc != "off") {
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort(flags.grpc, grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    grpc_server = builder.BuildAndStart();
    if (grpc_server == nullptr || port == 0) {
      std::fprintf(stderr, "ballast-testbackend %s: --grpc: cannot listen on %s\n", name.c_str(),
                   flags.grpc.c_str());
      return 1;
    }
    SocketAddress a = *ParseSocketAddress(flags.grpc);
    a.set_port(static_cast<uint16_t>(port));
    grpc_bound = FormatSocketAddress(a);
  }
  std::fprintf(stderr, "ballast-testbackend %s: ready http=%s grpc=%s control=%s knobs=%s\n",
               name.c_str(), http ? FormatSocketAddress(http->address()).c_str() : "off",
               grpc_bound.c_str(),
               control ? FormatSocketAddress(control->address()).c_str() : "off",
               KnobsJson(engine.knobs()).c_str());

  int sig = 0;
  while (sigwait(&stop_signals, &sig) != 0) {
  }
  std::fprintf(stderr, "ballast-testbackend %s: %s, stopping\n", name.c_str(), strsignal(sig));
  engine.Stop();  // held and delayed requests give up
  if (grpc_server)
    grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (http) http->Stop();
  if (control) control->Stop();
  std::fprintf(stderr, "ballast-testbackend %s: stopped\n", name.c_str());
  return 0;
}

}  // namespace
}  // namespace ballast::testbackend

int main(int argc, char** argv) { return ballast::testbackend::Run(argc, argv); }
