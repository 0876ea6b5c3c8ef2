// JSON text helpers and the structured log line.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "agent/base/json.h"
#include "agent/core/log.h"

namespace ballast::core {
namespace {

TEST_CASE("base::JsonQuote escapes quotes, backslashes, control bytes and bad UTF-8") {
  REQUIRE(base::JsonQuote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  REQUIRE(base::JsonQuote("l1\nl2\t\x01") == "\"l1\\nl2\\t\\u0001\"");
  REQUIRE(base::JsonQuote("caf\xC3\xA9") == "\"caf\xC3\xA9\"");
  REQUIRE(base::JsonQuote("bad\xFF") == "\"bad\xEF\xBF\xBD\"");
  REQUIRE(base::JsonQuote("\xE2\x82") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // truncated sequence
}

TEST_CASE("base::JsonObject escapes keys and values like JsonQuote, bad UTF-8 included") {
  base::JsonObject o;
  o.String("backend", "be\"1\xFF").Int("n", -3).Double("x", 0.5).Strings("why", {"a\nb"});
  const std::string text = o.Build();
  REQUIRE(text == "{\"backend\":\"be\\\"1\xEF\xBF\xBD\",\"n\":-3,\"x\":0.5,\"why\":[\"a\\nb\"]}");
  google::protobuf::Struct parsed;
  REQUIRE(google::protobuf::util::JsonStringToMessage(text, &parsed).ok());
}

TEST_CASE("base::Rfc3339Ms formats UTC with milliseconds") {
  REQUIRE(base::Rfc3339Ms(0) == "1970-01-01T00:00:00.000Z");
  REQUIRE(base::Rfc3339Ms(1764439452345) == "2025-11-29T18:04:12.345Z");
}

TEST_CASE("A log line is one JSON object with ts, level, msg and fields") {
  const std::string line = FormatLogLine(
      1764439452345, LogLevel::kWarning, "weight \"changed\"",
      {{"vip", "198.18.0.10:80/tcp"}, {"weight", 3}, {"ok", true}, {"neg", int64_t{-5}}});
  REQUIRE(line.back() == '\n');
  REQUIRE(line.find('\n') == line.size() - 1);
  google::protobuf::Struct parsed;
  REQUIRE(
      google::protobuf::util::JsonStringToMessage(line.substr(0, line.size() - 1), &parsed).ok());
  REQUIRE(parsed.fields().at("ts").string_value() == "2025-11-29T18:04:12.345Z");
  REQUIRE(parsed.fields().at("level").string_value() == "warning");
  REQUIRE(parsed.fields().at("msg").string_value() == "weight \"changed\"");
  const auto& f = parsed.fields().at("fields").struct_value().fields();
  REQUIRE(f.at("vip").string_value() == "198.18.0.10:80/tcp");
  REQUIRE(f.at("weight").number_value() == 3);
  REQUIRE(f.at("ok").bool_value());
  REQUIRE(f.at("neg").number_value() == -5);
}

// What `log` writes through Log(), read back from a pipe.
template <typename F>
std::string Logged(F log) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  SetLogFd(fds[1]);
  log();
  SetLogFd(2);
  close(fds[1]);
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  return got;
}

TEST_CASE("Log writes whole lines to the configured fd and honours the level") {
  SetMinLogLevel(LogLevel::kInfo);
  const std::string got = Logged([] {
    Log(LogLevel::kDebug, "hidden");
    Log(LogLevel::kInfo, "shown", {{"n", 1}});
  });
  REQUIRE(got.find("hidden") == std::string::npos);
  REQUIRE(got.find("\"msg\":\"shown\",\"fields\":{\"n\":1}}\n") != std::string::npos);
}

TEST_CASE("journald: each line starts with its level's syslog priority when the prefix is on") {
  CHECK(SyslogPrefix(LogLevel::kError) == "<3>");
  CHECK(SyslogPrefix(LogLevel::kWarning) == "<4>");
  CHECK(SyslogPrefix(LogLevel::kInfo) == "<6>");
  CHECK(SyslogPrefix(LogLevel::kDebug) == "<7>");
  const std::string got = Logged([] {
    SetJournalPriorityPrefix(true);
    Log(LogLevel::kError, "broken");
    Log(LogLevel::kWarning, "odd");
    SetJournalPriorityPrefix(false);
    Log(LogLevel::kInfo, "plain");
  });
  CHECK(got.rfind("<3>{\"ts\":", 0) == 0);
  CHECK(got.find("\n<4>{\"ts\":") != std::string::npos);
  CHECK(got.find("\n{\"ts\":") != std::string::npos);  // "plain": no prefix
  CHECK(got.find("\n<6>") == std::string::npos);
}

TEST_CASE("journald: the prefix is for the stream $JOURNAL_STREAM names, nothing else") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  struct stat st = {};
  REQUIRE(fstat(fds[1], &st) == 0);
  const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  CHECK(IsJournalStream(fds[1], mine.c_str()));
  CHECK_FALSE(IsJournalStream(fds[1], other.c_str()));
  CHECK_FALSE(IsJournalStream(fds[1], nullptr));  // not started by systemd
  CHECK_FALSE(IsJournalStream(fds[1], ""));
  CHECK_FALSE(IsJournalStream(fds[1], (mine + "x").c_str()));
  CHECK_FALSE(IsJournalStream(-1, mine.c_str()));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace ballast::core
