#include <catch2/catch.hpp>

#include "tools/testbackend/http_parser.h"

namespace ballast::testbackend {
namespace {

TEST_CASE("a complete GET head parses, with lowercased header names") {
  std::string in = "GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nUser-Agent:  ballast-probe/1 \r\n\r\nNEXT";
  HttpRequest r;
  auto used = ParseRequestHead(in, &r);
  REQUIRE(used.ok());
  CHECK(*used == in.size() - 4);
  CHECK(r.method == "GET");
  CHECK(r.Path() == "/a/b");
  CHECK(r.Query() == "x=1");
  CHECK(r.Header("user-agent") == "ballast-probe/1");
  CHECK(r.Header("missing").empty());
  CHECK(r.keep_alive);
  CHECK_FALSE(r.chunked);
  CHECK(r.content_length == 0);
}

TEST_CASE("an incomplete head asks for more bytes") {
  HttpRequest r;
  CHECK(*ParseRequestHead("GET / HTTP/1.1\r\nHost: h\r\n", &r) == 0);
  CHECK(*ParseRequestHead("", &r) == 0);
}

TEST_CASE("keep-alive follows the version and Connection") {
  HttpRequest r;
  REQUIRE(ParseRequestHead("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &r).ok());
  CHECK_FALSE(r.keep_alive);
  REQUIRE(ParseRequestHead("GET / HTTP/1.0\r\n\r\n", &r).ok());
  CHECK_FALSE(r.keep_alive);
  REQUIRE(ParseRequestHead("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r).ok());
  CHECK(r.keep_alive);
}

TEST_CASE("bodies: Content-Length, chunked, Expect") {
  HttpRequest r;
  REQUIRE(ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 12\r\n"
                           "Expect: 100-continue\r\n\r\n",
                           &r)
              .ok());
  CHECK(r.content_length == 12);
  CHECK(r.expect_continue);
  REQUIRE(ParseRequestHead("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r).ok());
  CHECK(r.chunked);
}

TEST_CASE("malformed heads are rejected") {
  for (const char* in :
       {"GET /\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nno-colon\r\n\r\n", "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"}) {
    INFO(in);
    HttpRequest r;
    CHECK_FALSE(ParseRequestHead(in, &r).ok());
  }
  HttpRequest r;
  std::string huge = "GET / HTTP/1.1\r\nX: " + std::string(kMaxRequestHead, 'a');
  CHECK_FALSE(ParseRequestHead(huge, &r).ok());
}

TEST_CASE("chunked bodies decode across arbitrary splits") {
  const std::string wire =
      "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nT: v\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{3}, size_t{7}, wire.size()}) {
    ChunkedDecoder d;
    std::string body;
    size_t pos = 0;
    while (!d.done()) {
      REQUIRE(pos < wire.size());
      absl::string_view piece = absl::string_view(wire).substr(pos, step);
      auto used = d.Feed(piece, &body, 1 << 20);
      REQUIRE(used.ok());
      pos += *used;
    }
    CHECK(pos == wire.size());
    CHECK(body == "Wikipedia in\r\n\r\nchunks.");
  }
}

TEST_CASE("chunked decoding keeps at most `keep` bytes and rejects garbage") {
  ChunkedDecoder d;
  std::string body;
  REQUIRE(d.Feed("a\r\n0123456789\r\n0\r\n\r\n", &body, 4).ok());
  CHECK(d.done());
  CHECK(body == "0123");
  ChunkedDecoder bad;
  CHECK_FALSE(bad.Feed("zz\r\n", &body, 4).ok());
  ChunkedDecoder overrun;
  CHECK_FALSE(overrun.Feed("1\r\nab\r\n", &body, 4).ok());
}

}  // namespace
}  // namespace ballast::testbackend
