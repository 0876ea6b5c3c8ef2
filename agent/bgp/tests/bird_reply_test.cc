// The BIRD control-socket reply parser, on replies captured from BIRD 2.0.12.
#include <catch2/catch.hpp>

#include "agent/bgp/bird_reply.h"

namespace ballast::bgp {
namespace {

TEST_CASE("greeting is a one-line reply with code 0001") {
  auto r = ParseReply("0001 BIRD 2.0.12 ready.\n");
  REQUIRE(r.ok());
  CHECK(r->code == 1);
  CHECK(r->Text() == "BIRD 2.0.12 ready.");
  CHECK(ReplyStatus("x", *r).ok());
}

TEST_CASE("show protocols: heading, rows, continuations and an empty final line") {
  auto r = ParseReply(
      "2002-Name       Proto      Table      State  Since         Info\n"
      "1002-device1    Device     ---        up     23:53:47.349  \n"
      " ballast_vip_c612000a Static     master4    up     23:53:47.349  \n"
      " tor4       BGP        ---        up     23:53:48.000  Established   \n"
      " tor6       BGP        ---        start  23:53:48.000  Active        Socket: Connection "
      "refused\n"
      "0000 \n");
  REQUIRE(r.ok());
  CHECK(r->code == 0);
  REQUIRE(r->lines.size() == 6);
  CHECK(r->lines[2].code == 1002);  // a continuation carries its predecessor's code
  CHECK(r->lines[5].text.empty());
  auto rows = ParseShowProtocols(*r);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);
  CHECK((*rows)[1].name == "ballast_vip_c612000a");
  CHECK((*rows)[1].proto == "Static");
  CHECK((*rows)[1].table == "master4");
  CHECK((*rows)[1].state == "up");
  CHECK((*rows)[1].since == "23:53:47.349");
  CHECK((*rows)[1].info.empty());
  CHECK((*rows)[2].info == "Established");
  CHECK((*rows)[3].state == "start");
  CHECK((*rows)[3].info == "Active Socket: Connection refused");
}

TEST_CASE("show protocols: 'iso long' since column (date and time) is one field") {
  auto r = ParseReply(
      "2002-Name       Proto      Table      State  Since         Info\n"
      "1002-tor4       BGP        ---        up     2026-11-29 23:53:48  Established\n"
      "0000 \n");
  REQUIRE(r.ok());
  auto rows = ParseShowProtocols(*r);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].since == "2026-11-29 23:53:48");
  CHECK((*rows)[0].info == "Established");
}

TEST_CASE("show protocols all: other codes than 1002 are not rows") {
  auto r = ParseReply(
      "2002-Name       Proto      Table      State  Since         Info\n"
      "1002-ballast_vip_x Static     master6    down   23:53:48.809  \n"
      "1006-  Channel ipv6\n"
      "     State:          DOWN\n"
      "     Table:          master6\n"
      " \n"
      "0000 \n");
  REQUIRE(r.ok());
  auto rows = ParseShowProtocols(*r);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK((*rows)[0].state == "down");
  CHECK(r->TextsWithCode(1006).size() == 4);
}

TEST_CASE("enable/disable replies") {
  auto r = ParseReply("0009-ballast_vip_x: disabled\n0000 \n");
  REQUIRE(r.ok());
  CHECK(r->code == 0);
  CHECK(r->TextsWithCode(9) == std::vector<std::string>{"ballast_vip_x: disabled"});
  CHECK(ReplyStatus("disable ballast_vip_x", *r).ok());
}

TEST_CASE("error codes become statuses with BIRD's message") {
  auto parse = ParseReply("9001 syntax error, unexpected CF_SYM_UNDEFINED\n");
  REQUIRE(parse.ok());
  absl::Status s = ReplyStatus("enable nosuch", *parse);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::Contains("enable nosuch") &&
                                           Catch::Contains("syntax error") &&
                                           Catch::Contains("9001"));

  auto runtime = ParseReply("8001 Table is not empty\n");
  REQUIRE(runtime.ok());
  CHECK(ReplyStatus("x", *runtime).code() == absl::StatusCode::kFailedPrecondition);

  auto restricted = ParseReply("0016 Access restricted\n");
  REQUIRE(restricted.ok());
  CHECK(ReplyStatus("x", *restricted).code() == absl::StatusCode::kPermissionDenied);
}

TEST_CASE("a bare four-digit final line and CRLF are accepted") {
  auto r = ParseReply("0003-Reconfigured\r\n0000\r\n");
  REQUIRE(r.ok());
  CHECK(r->code == 0);
  CHECK(r->lines[0].text == "Reconfigured");
}

TEST_CASE("spontaneous printouts are skipped, with their continuations") {
  ReplyParser p;
  CHECK_FALSE(*p.AddLine("+0000 log line"));
  CHECK_FALSE(*p.AddLine(" more of the log line"));
  CHECK_FALSE(p.InProgress());
  CHECK_FALSE(*p.AddLine("1002-a Static master4 up 00:00:00.000"));
  CHECK(*p.AddLine("0000 "));
  Reply r = p.Take();
  CHECK(r.lines.size() == 2);
}

TEST_CASE("the parser is incremental and reusable") {
  ReplyParser p;
  CHECK_FALSE(*p.AddLine("1000-BIRD 2.0.12"));
  CHECK(p.InProgress());
  CHECK(*p.AddLine("0013 Daemon is up and running"));
  CHECK(p.Take().code == 13);
  CHECK_FALSE(p.InProgress());
  CHECK(*p.AddLine("0001 BIRD 2.0.12 ready."));
  CHECK(p.AddLine("0000 ").status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(p.Take().code == 1);
}

TEST_CASE("malformed input is rejected") {
  CHECK(ParseReply("hello\n").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseReply(" continuation first\n0000 \n").status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ParseReply("12-34\n").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseReply("0000xyz\n").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseReply("1002-a b c d\n").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseReply("0000 \n0000 \n").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseReply("").status().code() == absl::StatusCode::kInvalidArgument);

  auto short_row = ParseReply("1002-a b c\n0000 \n");
  REQUIRE(short_row.ok());
  CHECK(ParseShowProtocols(*short_row).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a table code ending a reply is an internal error") {
  auto r = ParseReply("1002 x y z w\n");
  REQUIRE(r.ok());
  CHECK(ReplyStatus("x", *r).code() == absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace ballast::bgp
