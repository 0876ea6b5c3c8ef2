#include "tools/testbackend/control.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ballast::testbackend {
namespace {

HttpReply Json(std::string body) {
  HttpReply r;
  r.content_type = "application/json";
  r.body = std::move(body) + "\n";
  return r;
}

HttpReply Text(int status, std::string body) {
  HttpReply r;
  r.status = status;
  r.body = std::move(body) + "\n";
  return r;
}

constexpr absl::string_view kRoutes =
    "routes: GET /knobs, POST /set?k=v&..., POST /clear, GET /stats, POST /stats/reset";

constexpr absl::string_view kCtlUsage =
    "usage: ballast-testbackend ctl [--control ADDR] [--timeout-ms N] COMMAND\n"
    "commands:\n"
    "  set k=v [k=v ...]   set fault knobs (all or none)\n"
    "  clear               all knobs back to defaults\n"
    "  show                print the knobs as JSON\n"
    "  stats               print the counters as JSON\n"
    "  reset-stats         zero the counters\n"
    "knobs: delay_ms delay_jitter_ms error_rate reset_rate hang wrong_body real_only\n"
    "ADDR defaults to 127.0.0.1:9000\n";

}  // namespace

std::vector<std::string> SplitAssignments(absl::string_view text) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar("& \t\r\n"))) {
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

HttpHandler MakeControlHandler(std::string name, FaultEngine* engine) {
  return
      [name = std::move(name), engine](const HttpRequest& req, const HttpConnection&) -> HttpReply {
        absl::string_view path = req.Path();
        auto method_is = [&](absl::string_view m) { return req.method == m; };
        if (path == "/knobs" || path == "/stats") {
          if (!method_is("GET") && !method_is("HEAD")) {
            return Text(405, absl::StrCat(path, " takes GET"));
          }
          return Json(path == "/knobs" ? KnobsJson(engine->knobs()) : engine->stats().Json());
        }
        if (path == "/set" || path == "/clear" || path == "/stats/reset") {
          if (!method_is("POST")) return Text(405, absl::StrCat(path, " takes POST"));
          if (path == "/stats/reset") {
            engine->stats().Reset();
            return Json(engine->stats().Json());
          }
          if (path == "/clear") {
            engine->Clear();
          } else {
            std::vector<std::string> set = SplitAssignments(req.Query());
            for (std::string& a : SplitAssignments(req.body)) set.push_back(std::move(a));
            if (set.empty()) return Text(400, "POST /set needs k=v assignments");
            absl::Status st = engine->Set(set);
            if (!st.ok()) return Text(400, std::string(st.message()));
          }
          std::string knobs = KnobsJson(engine->knobs());
          std::fprintf(stderr, "ballast-testbackend %s: knobs %s\n", name.c_str(), knobs.c_str());
          return Json(std::move(knobs));
        }
        return Text(404, absl::StrCat("no route ", path, "; ", kRoutes));
      };
}

absl::StatusOr<ControlResponse> ControlRequest(const SocketAddress& control,
                                               absl::string_view method, absl::string_view target,
                                               int timeout_ms) {
  const std::string where = FormatSocketAddress(control);
  auto fail = [&](absl::string_view what, int err) {
    return absl::UnavailableError(
        absl::StrCat("control endpoint ", where, ": ", what, ": ", strerror(err)));
  };
  int fd = socket(control.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail("socket", errno);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // also bounds connect()
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, control.sa(), control.length) != 0) {
    int err = errno;
    close(fd);
    return fail("cannot connect", err);
  }
  std::string request = absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: ", where,
                                     "\r\nUser-Agent: ballast-testbackend-ctl\r\n"
                                     "Content-Length: 0\r\nConnection: close\r\n\r\n");
  absl::string_view left = request;
  while (!left.empty()) {
    ssize_t n = send(fd, left.data(), left.size(), MSG_NOSIGNAL);
    if (n < 0) {
      int err = errno;
      close(fd);
      return fail("send", err);
    }
    left.remove_prefix(static_cast<size_t>(n));
  }
  std::string response;
  char buf[8192];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      int err = errno;
      close(fd);
      return fail(err == EAGAIN ? "no answer in time" : "recv", err);
    }
    if (n == 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  ControlResponse out;
  size_t head_end = response.find("\r\n\r\n");
  std::vector<absl::string_view> status_line =
      absl::StrSplit(absl::string_view(response).substr(0, response.find("\r\n")), ' ');
  if (head_end == std::string::npos || status_line.size() < 2 ||
      !absl::SimpleAtoi(status_line[1], &out.status)) {
    return absl::DataLossError(absl::StrCat("control endpoint ", where, ": not an HTTP answer"));
  }
  out.body = response.substr(head_end + 4);
  return out;
}

int RunCtl(int argc, char** argv, FILE* out, FILE* err) {
  std::string control_text = "127.0.0.1:9000";
  int timeout_ms = 5000;
  int i = 0;
  for (; i < argc; ++i) {
    absl::string_view a = argv[i];
    auto value = [&](absl::string_view flag) -> const char* {
      if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=') {
        return argv[i] + flag.size() + 1;
      }
      if (a == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kCtlUsage.data(), out);
      return 0;
    }
    if (a.substr(0, 9) == "--control") {
      const char* v = value("--control");
      if (v == nullptr) {
        std::fprintf(err, "ballast-testbackend ctl: --control needs a value (ADDR:PORT)\n");
        return 2;
      }
      control_text = v;
    } else if (a.substr(0, 12) == "--timeout-ms") {
      const char* v = value("--timeout-ms");
      if (v == nullptr || !absl::SimpleAtoi(v, &timeout_ms) || timeout_ms < 1 ||
          timeout_ms > 600'000) {
        std::fprintf(err, "ballast-testbackend ctl: --timeout-ms: '%s' is not 1..600000\n",
                     v == nullptr ? "" : v);
        return 2;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(err, "ballast-testbackend ctl: unknown flag %s\n%s", argv[i], kCtlUsage.data());
      return 2;
    } else {
      break;
    }
  }
  absl::StatusOr<SocketAddress> control = ParseSocketAddress(control_text);
  if (!control.ok()) {
    std::fprintf(err, "ballast-testbackend ctl: --control: %s\n",
                 std::string(control.status().message()).c_str());
    return 2;
  }
  if (i >= argc) {
    std::fprintf(err, "ballast-testbackend ctl: missing command\n%s", kCtlUsage.data());
    return 2;
  }
  absl::string_view command = argv[i++];
  std::string method = "GET";
  std::string target;
  if (command == "set") {
    std::vector<std::string> set(argv + i, argv + argc);
    if (set.empty()) {
      std::fprintf(err, "ballast-testbackend ctl: set needs k=v assignments\n%s", kCtlUsage.data());
      return 2;
    }
    Knobs scratch;  // validate here so that a typo is a usage error
    for (const std::string& a : set) {
      absl::Status st = ApplyKnob(&scratch, a);
      if (!st.ok()) {
        std::fprintf(err, "ballast-testbackend ctl: %s\n", std::string(st.message()).c_str());
        return 2;
      }
    }
    method = "POST";
    target = absl::StrCat("/set?", absl::StrJoin(set, "&"));
  } else {
    if (i != argc) {
      std::fprintf(err, "ballast-testbackend ctl: %s takes no arguments\n",
                   std::string(command).c_str());
      return 2;
    }
    if (command == "clear") {
      method = "POST";
      target = "/clear";
    } else if (command == "show") {
      target = "/knobs";
    } else if (command == "stats") {
      target = "/stats";
    } else if (command == "reset-stats") {
      method = "POST";
      target = "/stats/reset";
    } else {
      std::fprintf(err, "ballast-testbackend ctl: unknown command '%s'\n%s",
                   std::string(command).c_str(), kCtlUsage.data());
      return 2;
    }
  }
  absl::StatusOr<ControlResponse> r = ControlRequest(*control, method, target, timeout_ms);
  if (!r.ok()) {
    std::fprintf(err, "ballast-testbackend ctl: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  if (r->status != 200) {
    std::fprintf(err, "ballast-testbackend ctl: %s %s: HTTP %d: %s", method.c_str(), target.c_str(),
                 r->status, r->body.c_str());
    return 1;
  }
  std::fputs(r->body.c_str(), out);
  return 0;
}

}  // namespace ballast::testbackend
