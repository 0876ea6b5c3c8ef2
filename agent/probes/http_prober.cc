// HTTP and HTTPS probes through libcurl: one fresh connection per probe to
// the endpoint's address (whatever the URL's host says), with the probe's
// mark on the socket, the probe user agent, and assertions on the status
// code and the body.
#include <sys/socket.h>

#include <algorithm>
#include <mutex>

#include <curl/curl.h>
#include <re2/re2.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "agent/base/strcat.h"
#include "agent/probes/probers.h"
#include "agent/probes/socket.h"
#include "agent/probes/spec.h"

namespace ballast::probes {
namespace {

using base::Cat;

constexpr size_t kMaxBody = 1 << 20;  // bytes of the body kept for the assertions

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  const size_t len = size * n;
  if (body->size() < kMaxBody) body->append(data, std::min(len, kMaxBody - body->size()));
  return len;
}

int OnSocket(void* user, curl_socket_t fd, curlsocktype purpose) {
  if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKOPT_OK;
  const uint32_t mark = *static_cast<const uint32_t*>(user);
  return SetMark(fd, mark).ok() ? CURL_SOCKOPT_OK : CURL_SOCKOPT_ERROR;
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

class HttpProber : public Prober {
 public:
  explicit HttpProber(const v1::ProbeSpec& spec)
      : https_(KindOf(spec) == v1::ProbeSpec::HTTPS),
        method_(HttpMethodOf(spec)),
        path_(HttpPathOf(spec)),
        host_(spec.http_host()),
        server_name_(TlsServerNameOf(spec)),
        statuses_(HttpStatusesOf(spec)),
        body_contains_(spec.body_contains()),
        ca_file_(spec.tls_ca_file()),
        cert_file_(spec.tls_cert_file()),
        key_file_(spec.tls_key_file()),
        insecure_(spec.tls_insecure()),
        regex_(BodyRegexOf(spec)) {}

  ProbeResult Run(const Endpoint& ep, Clock::time_point deadline) const override {
    const auto start = Clock::now();
    ProbeResult r;
    const char* kind = https_ ? "HTTPS" : "HTTP";
    auto fail = [&](std::string why) {
      r.ok = false;
      r.latency = Clock::now() - start;
      r.detail = std::move(why);
      return r;
    };
    const long ms = MsLeft(deadline);
    if (ms <= 0) return fail(Cat(kind, " probe to ", ep.description, ": no time left"));

    std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
    if (!curl) return fail(Cat(kind, " probe to ", ep.description, ": curl_easy_init failed"));
    CURL* c = curl.get();
    const std::string addr_host =
        ep.address.is_v4() ? ep.address.ToString() : Cat("[", ep.address.ToString(), "]");
    // The URL names the server (SNI, certificate name); CONNECT_TO sends
    // the connection to the endpoint whatever the name resolves to.
    const std::string url_host = https_ && !server_name_.empty() ? server_name_ : addr_host;
    const std::string url = Cat(https_ ? "https://" : "http://", url_host, ":", ep.port, path_);
    std::unique_ptr<curl_slist, CurlFree> connect_to(
        curl_slist_append(nullptr, Cat("::", addr_host, ":", ep.port).c_str()));
    std::unique_ptr<curl_slist, CurlFree> headers;
    if (!host_.empty()) headers.reset(curl_slist_append(nullptr, Cat("Host: ", host_).c_str()));
    std::string body;
    char errbuf[CURL_ERROR_SIZE] = {0};
    uint32_t mark = ep.mark;

    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    if (url_host != addr_host) curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_to.get());
    if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_USERAGENT, kProbeUserAgent);
    if (method_ == "HEAD") {
      curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (method_ != "GET") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_.c_str());
    }
    curl_easy_setopt(c, CURLOPT_PROXY, "");  // never an environment proxy
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, &OnSocket);
    curl_easy_setopt(c, CURLOPT_SOCKOPTDATA, &mark);
    if (https_) {
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, insecure_ ? 0L : 1L);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, insecure_ ? 0L : 2L);
      if (!ca_file_.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, ca_file_.c_str());
      if (!cert_file_.empty()) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, cert_file_.c_str());
        curl_easy_setopt(c, CURLOPT_SSLKEY, key_file_.c_str());
      }
    }

    const CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      std::string why = errbuf[0] != 0 ? errbuf : curl_easy_strerror(rc);
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        why =
            Cat("no complete answer within ",
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
                " ms (", why, ")");
      }
      return fail(Cat(kind, " probe to ", ep.description, ": ", why));
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (std::find(statuses_.begin(), statuses_.end(), static_cast<uint32_t>(status)) ==
        statuses_.end()) {
      return fail(Cat(kind, " ", status, " from ", ep.description, " (want ",
                      absl::StrJoin(statuses_, " or "), ")"));
    }
    if (!body_contains_.empty() && body.find(body_contains_) == std::string::npos) {
      return fail(Cat(kind, " ", status, " from ", ep.description, ": body does not contain \"",
                      absl::CHexEscape(body_contains_), "\" (body ", Excerpt(body), ")"));
    }
    if (regex_ && !RE2::PartialMatch(body, *regex_)) {
      return fail(Cat(kind, " ", status, " from ", ep.description, ": body does not match /",
                      regex_->pattern(), "/ (body ", Excerpt(body), ")"));
    }
    r.ok = true;
    r.latency = Clock::now() - start;
    r.detail = Cat(kind, " ", status, " from ", ep.description, " in ", FormatLatency(r.latency));
    return r;
  }

 private:
  const bool https_;
  const std::string method_, path_, host_, server_name_;
  const std::vector<uint32_t> statuses_;
  const std::string body_contains_;
  const std::string ca_file_;
  const std::string cert_file_;  // client certificate, with key_file_
  const std::string key_file_;
  const bool insecure_;
  std::unique_ptr<RE2> regex_;  // RE2 matching is thread-safe
};

}  // namespace

absl::StatusOr<std::unique_ptr<Prober>> MakeHttpProber(const v1::ProbeSpec& spec) {
  static std::once_flag once;
  static CURLcode init = CURLE_OK;
  std::call_once(once, [] { init = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init != CURLE_OK) {
    return absl::InternalError(Cat("curl_global_init: ", curl_easy_strerror(init)));
  }
  return std::unique_ptr<Prober>(new HttpProber(spec));
}

}  // namespace ballast::probes
