#include "tools/testbackend/http_parser.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ballast::testbackend {
namespace {

absl::Status Malformed(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("malformed HTTP request: ", why));
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c <= ' ' || c >= 127 ||
        absl::string_view("()<>@,;:\\\"/[]?={}").find(c) != absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

// True when the comma-separated list `value` holds `token` (case-insensitive).
bool ListHas(absl::string_view value, absl::string_view token) {
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(part), token)) return true;
  }
  return false;
}

}  // namespace

absl::string_view HttpRequest::Header(absl::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

absl::string_view HttpRequest::Path() const {
  absl::string_view t = target;
  return t.substr(0, t.find('?'));
}

absl::string_view HttpRequest::Query() const {
  absl::string_view t = target;
  size_t q = t.find('?');
  return q == absl::string_view::npos ? absl::string_view() : t.substr(q + 1);
}

absl::StatusOr<size_t> ParseRequestHead(absl::string_view buffer, HttpRequest* out) {
  // RFC 9112 2.2: ignore at least one empty line before the request line.
  size_t start = 0;
  while (buffer.substr(start, 2) == "\r\n") start += 2;
  size_t end = buffer.find("\r\n\r\n", start);
  if (end == absl::string_view::npos) {
    if (buffer.size() > kMaxRequestHead) return Malformed("head larger than 64 KiB");
    return 0;
  }
  if (end - start > kMaxRequestHead) return Malformed("head larger than 64 KiB");
  absl::string_view head = buffer.substr(start, end - start);
  size_t consumed = end + 4;

  HttpRequest req;
  size_t eol = head.find("\r\n");
  absl::string_view line = head.substr(0, eol);
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3) return Malformed("request line is not 'METHOD TARGET VERSION'");
  if (!IsToken(parts[0])) return Malformed("bad method");
  if (parts[1].empty()) return Malformed("empty target");
  if (parts[2] == "HTTP/1.1") {
    req.minor_version = 1;
  } else if (parts[2] == "HTTP/1.0") {
    req.minor_version = 0;
  } else {
    return Malformed(absl::StrCat("unsupported version '", parts[2], "'"));
  }
  req.method = std::string(parts[0]);
  req.target = std::string(parts[1]);

  bool have_length = false;
  absl::string_view rest =
      eol == absl::string_view::npos ? absl::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    absl::string_view field = rest.substr(0, e);
    rest = e == absl::string_view::npos ? absl::string_view() : rest.substr(e + 2);
    if (field.empty()) continue;
    if (field[0] == ' ' || field[0] == '\t') return Malformed("obsolete line folding");
    size_t colon = field.find(':');
    if (colon == absl::string_view::npos || !IsToken(field.substr(0, colon))) {
      return Malformed("header field without a name");
    }
    std::string name = absl::AsciiStrToLower(field.substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(field.substr(colon + 1)));
    if (name == "content-length") {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || (have_length && n != req.content_length)) {
        return Malformed("bad Content-Length");
      }
      req.content_length = n;
      have_length = true;
    } else if (name == "transfer-encoding") {
      if (!ListHas(value, "chunked")) return Malformed("unsupported Transfer-Encoding");
      req.chunked = true;
    } else if (name == "expect") {
      req.expect_continue = absl::EqualsIgnoreCase(value, "100-continue");
    }
    req.headers.emplace_back(std::move(name), std::move(value));
  }
  if (req.chunked && have_length) return Malformed("both Content-Length and chunked");
  absl::string_view connection = req.Header("connection");
  if (req.minor_version == 0) {
    req.keep_alive = ListHas(connection, "keep-alive");
  } else {
    req.keep_alive = !ListHas(connection, "close");
  }
  *out = std::move(req);
  return consumed;
}

absl::StatusOr<size_t> ChunkedDecoder::Feed(absl::string_view in, std::string* body, size_t keep) {
  size_t used = 0;
  while (used < in.size() && state_ != State::kDone) {
    absl::string_view rest = in.substr(used);
    switch (state_) {
      case State::kSize:
      case State::kTrailer:
      case State::kDataCrlf: {
        size_t nl = rest.find('\n');
        absl::string_view piece =
            rest.substr(0, nl == absl::string_view::npos ? rest.size() : nl + 1);
        absl::StrAppend(&line_, piece);
        used += piece.size();
        if (line_.size() > 4096) return Malformed("chunk line too long");
        if (nl == absl::string_view::npos) break;
        absl::string_view l = line_;
        if (!absl::ConsumeSuffix(&l, "\r\n")) return Malformed("chunk line without CRLF");
        if (state_ == State::kDataCrlf) {
          if (!l.empty()) return Malformed("chunk data longer than its size");
          state_ = State::kSize;
        } else if (state_ == State::kTrailer) {
          if (l.empty()) state_ = State::kDone;
        } else {
          absl::string_view size_text = l.substr(0, l.find(';'));
          size_text = absl::StripAsciiWhitespace(size_text);
          uint64_t n = 0;
          if (size_text.empty() || size_text.size() > 15 || !absl::SimpleHexAtoi(size_text, &n)) {
            return Malformed("bad chunk size");
          }
          left_ = n;
          state_ = n == 0 ? State::kTrailer : State::kData;
        }
        line_.clear();
        break;
      }
      case State::kData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(left_, rest.size()));
        if (body->size() < keep)
          absl::StrAppend(body, rest.substr(0, std::min(n, keep - body->size())));
        left_ -= n;
        used += n;
        if (left_ == 0) state_ = State::kDataCrlf;
        break;
      }
      case State::kDone:
        break;
    }
  }
  return used;
}

}  // namespace ballast::testbackend
