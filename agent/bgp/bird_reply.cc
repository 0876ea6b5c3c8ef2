#include "agent/bgp/bird_reply.h"

#include <cctype>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace ballast::bgp {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool HasCode(absl::string_view line) {
  return line.size() >= 4 && IsDigit(line[0]) && IsDigit(line[1]) && IsDigit(line[2]) &&
         IsDigit(line[3]);
}

int CodeOf(absl::string_view line) {
  return (line[0] - '0') * 1000 + (line[1] - '0') * 100 + (line[2] - '0') * 10 + (line[3] - '0');
}

// Shortens what we quote from the daemon in error messages.
std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 120;
  if (s.size() <= kMax) return std::string(s);
  return absl::StrCat(s.substr(0, kMax), "...");
}

// "2026-11-29" (a date as BIRD prints it in iso formats).
bool LooksLikeDate(absl::string_view s) {
  return s.size() == 10 && IsDigit(s[0]) && IsDigit(s[3]) && s[4] == '-' && s[7] == '-';
}
// "23:53:47" or "23:53:47.349".
bool LooksLikeTime(absl::string_view s) {
  return s.size() >= 8 && IsDigit(s[0]) && IsDigit(s[1]) && s[2] == ':' && s[5] == ':';
}

}  // namespace

std::string Reply::Text() const {
  std::vector<absl::string_view> parts;
  parts.reserve(lines.size());
  for (const ReplyLine& l : lines) parts.push_back(l.text);
  return absl::StrJoin(parts, "\n");
}

std::vector<std::string> Reply::TextsWithCode(int c) const {
  std::vector<std::string> out;
  for (const ReplyLine& l : lines) {
    if (l.code == c) out.push_back(l.text);
  }
  return out;
}

absl::StatusOr<bool> ReplyParser::AddLine(absl::string_view line) {
  if (done_) {
    return absl::FailedPreconditionError("bird reply parser: Take() the completed reply first");
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.empty() && line[0] == '+') {
    // Spontaneous printout (log echo). Not part of any reply; its
    // continuation lines, if any, are skipped with it.
    in_spontaneous_ = true;
    return false;
  }
  if (!line.empty() && line[0] == ' ') {
    if (in_spontaneous_) return false;
    if (current_.lines.empty()) {
      current_ = Reply{};
      return absl::InvalidArgumentError(absl::StrCat(
          "bird reply: continuation line with nothing to continue: '", Quote(line), "'"));
    }
    current_.lines.push_back({current_.lines.back().code, std::string(line.substr(1))});
    return false;
  }
  in_spontaneous_ = false;
  if (!HasCode(line) || (line.size() > 4 && line[4] != '-' && line[4] != ' ')) {
    current_ = Reply{};
    return absl::InvalidArgumentError(
        absl::StrCat("bird reply: line is not '<4-digit code>[- ]text': '", Quote(line), "'"));
  }
  const int code = CodeOf(line);
  std::string text = line.size() > 5 ? std::string(line.substr(5)) : std::string();
  current_.lines.push_back({code, std::move(text)});
  if (line.size() > 4 && line[4] == '-') return false;
  current_.code = code;
  done_ = true;
  return true;
}

Reply ReplyParser::Take() {
  Reply r = std::move(current_);
  current_ = Reply{};
  done_ = false;
  return r;
}

absl::StatusOr<Reply> ParseReply(absl::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  ReplyParser parser;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<bool> done = parser.AddLine(lines[i]);
    if (!done.ok()) return done.status();
    if (*done) {
      if (i + 1 != lines.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("bird reply: text after the final line: '", Quote(lines[i + 1]), "'"));
      }
      return parser.Take();
    }
  }
  return absl::InvalidArgumentError("bird reply: incomplete (no final 'dddd ' line)");
}

absl::Status ReplyStatus(absl::string_view command, const Reply& reply) {
  const int c = reply.code;
  const std::string what = absl::StrCat("bird: '", command, "': ", Quote(reply.Text()), " (code ",
                                        absl::Dec(c, absl::kZeroPad4), ")");
  if (c == 16) return absl::PermissionDeniedError(what);
  if (c < 1000) return absl::OkStatus();
  if (c >= 8000 && c < 9000) return absl::FailedPreconditionError(what);
  if (c >= 9000) return absl::InvalidArgumentError(what);
  return absl::InternalError(absl::StrCat(what, ": a table code cannot end a reply"));
}

absl::StatusOr<std::vector<ProtocolRow>> ParseShowProtocols(const Reply& reply) {
  std::vector<ProtocolRow> rows;
  for (const std::string& line : reply.TextsWithCode(1002)) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bird 'show protocols': row with fewer than 4 columns: '", Quote(line), "'"));
    }
    ProtocolRow row;
    row.name = std::string(f[0]);
    row.proto = std::string(f[1]);
    row.table = std::string(f[2]);
    row.state = std::string(f[3]);
    size_t i = 4;
    if (i < f.size()) {
      row.since = std::string(f[i++]);
      if (LooksLikeDate(row.since) && i < f.size() && LooksLikeTime(f[i])) {
        absl::StrAppend(&row.since, " ", f[i++]);
      }
    }
    std::vector<absl::string_view> rest(f.begin() + static_cast<std::ptrdiff_t>(i), f.end());
    row.info = absl::StrJoin(rest, " ");
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace ballast::bgp
