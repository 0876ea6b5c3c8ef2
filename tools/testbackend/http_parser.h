// HTTP/1.1 request parsing for the test backend's servers (RFC 9112 subset).
//
// ParseRequestHead parses a request line and header fields; ChunkedDecoder
// decodes a chunked body incrementally. Both are pure and hold no global
// state; a ChunkedDecoder belongs to one connection (not thread-safe).
//
// Supported: methods as tokens, origin-form and absolute-form targets,
// HTTP/1.0 and 1.1, Content-Length and chunked bodies, Connection
// keep-alive/close, Expect: 100-continue. Not supported (answered 400 by the
// server): obs-fold header continuation lines, HTTP/2 prior knowledge.
#ifndef BALLAST_TOOLS_TESTBACKEND_HTTP_PARSER_H_
#define BALLAST_TOOLS_TESTBACKEND_HTTP_PARSER_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ballast::testbackend {

// Largest request head (request line + headers) a server accepts.
inline constexpr size_t kMaxRequestHead = 64 * 1024;

struct HttpRequest {
  std::string method;
  std::string target;  // as sent, e.g. "/set?delay_ms=5"
  int minor_version = 1;
  // Header fields in order; names lowercased, values trimmed.
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = true;        // from the version and Connection
  bool expect_continue = false;  // Expect: 100-continue
  bool chunked = false;          // Transfer-Encoding: chunked
  uint64_t content_length = 0;   // when not chunked
  std::string body;              // filled by the server (up to its limit)

  // The first value of header `name` (lowercase), or "" when absent.
  absl::string_view Header(absl::string_view name) const;
  // The target without its query; and the query (after '?'), or "".
  absl::string_view Path() const;
  absl::string_view Query() const;
};

// Parses the head at the start of `buffer`. Returns the number of bytes it
// takes (through the blank line), 0 when `buffer` does not yet hold a full
// head, or InvalidArgument for a malformed head.
absl::StatusOr<size_t> ParseRequestHead(absl::string_view buffer, HttpRequest* out);

// Incremental decoder of a chunked body. Feed() consumes bytes from the front
// of `in`, appends data to *body (up to `keep` bytes in total, the rest is
// dropped) and returns how many bytes it consumed.
class ChunkedDecoder {
 public:
  absl::StatusOr<size_t> Feed(absl::string_view in, std::string* body, size_t keep);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataCrlf, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t left_ = 0;  // bytes left in the current chunk
  std::string line_;   // partial size or trailer line
};

}  // namespace ballast::testbackend

#endif  // BALLAST_TOOLS_TESTBACKEND_HTTP_PARSER_H_
