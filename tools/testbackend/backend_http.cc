#include "tools/testbackend/backend_http.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ballast::testbackend {

std::string WrongBody(absl::string_view name) {
  std::string body = "wrong body\n";
  if (absl::StrContains(body, name)) body.clear();
  return body;
}

HttpHandler MakeBackendHttpHandler(std::string name, FaultEngine* engine) {
  return [name = std::move(name), engine](const HttpRequest& req,
                                          const HttpConnection& conn) -> HttpReply {
    HttpReply reply;
    reply.headers.emplace_back("X-Backend", name);
    if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
      reply.status = 405;
      reply.headers.emplace_back("Allow", "GET, HEAD, POST");
      reply.body = absl::StrCat("backend ", name, ": method ", req.method, " not allowed\n");
      return reply;
    }
    const bool probe = IsProbeUserAgent(req.Header("user-agent"));
    auto abandoned = [&conn] { return conn.Abandoned(); };
    Plan plan = engine->Decide(Protocol::kHttp, probe);
    while (plan.outcome == Outcome::kHang) {
      if (!engine->WaitOutHang(probe, abandoned)) return HttpReply{.kind = HttpReply::Kind::kClose};
      plan = engine->Decide(Protocol::kHttp, probe, /*count_request=*/false);
    }
    if (plan.delay_ms > 0 && !engine->Sleep(plan.delay_ms, abandoned)) {
      return HttpReply{.kind = HttpReply::Kind::kClose};
    }
    switch (plan.outcome) {
      case Outcome::kReset:
        return HttpReply{.kind = HttpReply::Kind::kReset};
      case Outcome::kError:
        reply.status = 503;
        reply.headers.emplace_back("X-Fault", "error");
        reply.body = absl::StrCat("backend ", name, ": injected error\n");
        return reply;
      case Outcome::kWrongBody:
        reply.headers.emplace_back("X-Fault", "wrong_body");
        reply.body = WrongBody(name);
        return reply;
      case Outcome::kAnswer:
      case Outcome::kHang:
        break;
    }
    reply.body = absl::StrCat("backend ", name, "\n");
    return reply;
  };
}

}  // namespace ballast::testbackend
