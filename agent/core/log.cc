#include "agent/core/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "agent/core/clock.h"
#include "agent/base/json.h"
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

std::atomic<int> g_log_fd{2};
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_journal_prefix{false};

}  // namespace

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

LogField::LogField(absl::string_view key, absl::string_view value)
    : key_(key), json_(base::JsonQuote(value)) {}

LogField::LogField(absl::string_view key, bool value)
    : key_(key), json_(value ? "true" : "false") {}

std::string FormatLogLine(int64_t unix_ms, LogLevel level, absl::string_view msg,
                          std::initializer_list<LogField> fields) {
  std::string line = "{\"ts\":\"";
  line += base::Rfc3339Ms(unix_ms);
  line += "\",\"level\":\"";
  line += std::string(LogLevelName(level));
  line += "\",\"msg\":";
  base::JsonAppendQuoted(&line, msg);
  if (fields.size() != 0) {
    line += ",\"fields\":{";
    bool first = true;
    for (const LogField& f : fields) {
      if (!first) line += ',';
      first = false;
      base::JsonAppendQuoted(&line, f.key());
      line += ':';
      line += f.json();
    }
    line += '}';
  }
  line += "}\n";
  return line;
}

void Log(LogLevel level, absl::string_view msg, std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < g_min_level.load(std::memory_order_relaxed)) return;
  std::string line = FormatLogLine(SystemClock().NowUnixMs(), level, msg, fields);
  if (g_journal_prefix.load(std::memory_order_relaxed)) {
    line.insert(0, std::string(SyslogPrefix(level)));
  }
  const int fd = g_log_fd.load(std::memory_order_relaxed);
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere left to report a failing log sink
    }
    off += static_cast<size_t>(n);
  }
}

void SetLogFd(int fd) { g_log_fd.store(fd); }
void SetMinLogLevel(LogLevel level) { g_min_level.store(static_cast<int>(level)); }
void SetJournalPriorityPrefix(bool on) { g_journal_prefix.store(on); }

absl::string_view SyslogPrefix(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "<7>";
    case LogLevel::kInfo:
      return "<6>";
    case LogLevel::kWarning:
      return "<4>";
    case LogLevel::kError:
      return "<3>";
  }
  return "<6>";
}

bool IsJournalStream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  char rest = 0;
  if (sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &rest) != 2) return false;
  struct stat st = {};
  if (fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

}  // namespace ballast::core
