#include "tests/bpf/tshark.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/lib/pcap.h"

namespace ballast::bpftest {

std::vector<std::string> SplitValues(const std::string& value) {
  if (value.empty()) return {};
  return absl::StrSplit(value, ',');
}

absl::StatusOr<std::vector<TsharkRow>> Dissect(const std::vector<pktgen::Bytes>& frames,
                                               const std::vector<std::string>& fields,
                                               const std::string& options) {
  char tmpl[] = "/tmp/ballast-tshark-XXXXXX";
  if (mkdtemp(tmpl) == nullptr)
    return absl::InternalError(absl::StrCat("mkdtemp: ", strerror(errno)));
  const std::filesystem::path dir(tmpl);
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};

  const std::string pcap = (dir / "frames.pcap").string();
  const std::string out = (dir / "fields.txt").string();
  const std::string err = (dir / "stderr.txt").string();
  if (auto s = pktgen::WritePcap(pcap, frames); !s.ok()) return s;

  std::string cmd = absl::StrCat(
      "tshark -n -r ", pcap,
      " -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE"
      " -T fields -E separator=/t -E occurrence=a -E aggregator=, ",
      options);
  for (const auto& f : fields) absl::StrAppend(&cmd, " -e ", f);
  absl::StrAppend(&cmd, " >", out, " 2>", err);
  const int rc = std::system(cmd.c_str());
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "tshark failed (exit ", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1,
        "); is the tshark package installed? command: ", cmd, "\nstderr: ", slurp(err)));

  std::vector<TsharkRow> rows;
  std::istringstream lines(slurp(out));
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> cols = absl::StrSplit(line, '\t');
    TsharkRow row;
    for (size_t i = 0; i < fields.size(); ++i) row[fields[i]] = i < cols.size() ? cols[i] : "";
    rows.push_back(std::move(row));
  }
  if (rows.size() != frames.size())
    return absl::InternalError(absl::StrCat("tshark printed ", rows.size(), " rows for ",
                                            frames.size(), " frames: ", slurp(err)));
  return rows;
}

}  // namespace ballast::bpftest
