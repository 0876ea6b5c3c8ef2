// Structured logging: one JSON object per line on stderr, for journald.
//
//   {"ts":"2026-11-29T18:04:12.345Z","level":"info","msg":"weight changed",
//    "fields":{"vip":"198.18.0.10:80/tcp","backend":"198.18.1.2","weight":3}}
//
// Thread-safety: Log() may be called from any thread; each record is written
// with a single write(2) so lines never interleave. The sink and the minimum
// level are process-wide settings made once at start-up (SetLogFd,
// SetMinLogLevel) before other threads run.
#ifndef BALLAST_AGENT_CORE_LOG_H_
#define BALLAST_AGENT_CORE_LOG_H_

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include "absl/strings/string_view.h"

namespace ballast::core {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

absl::string_view LogLevelName(LogLevel level);  // "debug", "info", "warning", "error"

// One key/value of a record. Strings are quoted; numbers and booleans are
// written as JSON numbers/booleans.
class LogField {
 public:
  LogField(absl::string_view key, absl::string_view value);
  LogField(absl::string_view key, const char* value) : LogField(key, absl::string_view(value)) {}
  LogField(absl::string_view key, const std::string& value)
      : LogField(key, absl::string_view(value)) {}
  LogField(absl::string_view key, bool value);
  template <std::integral T>
  requires(!std::same_as<T, bool>) LogField(absl::string_view key, T value)
      : key_(key), json_(std::to_string(value)) {}

  const std::string& key() const { return key_; }
  const std::string& json() const { return json_; }  // the value as JSON text

 private:
  std::string key_;
  std::string json_;
};

// The JSON line (with the trailing newline) that Log() writes.
std::string FormatLogLine(int64_t unix_ms, LogLevel level, absl::string_view msg,
                          std::initializer_list<LogField> fields);

void Log(LogLevel level, absl::string_view msg, std::initializer_list<LogField> fields = {});

// Where records go (default 2 = stderr) and the least severe level written
// (default info).
void SetLogFd(int fd);
void SetMinLogLevel(LogLevel level);

// journald: with the prefix on, each line starts with the syslog priority of
// its level ("<3>" error, "<4>" warning, "<6>" info, "<7>" debug), which
// journald strips and stores as the entry's priority, so `journalctl -p err`
// finds the errors. Off by default (a terminal or a file gets plain JSON).
void SetJournalPriorityPrefix(bool on);
absl::string_view SyslogPrefix(LogLevel level);
// Whether fd's file is the stream that $JOURNAL_STREAM ("DEV:INODE", set by
// systemd for a unit's stdout/stderr) names. `journal_stream` may be null.
bool IsJournalStream(int fd, const char* journal_stream);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_LOG_H_
