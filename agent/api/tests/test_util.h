// Helpers shared by the API tests: a temporary directory that removes
// itself, a unix-socket channel to a test server, and capturing lbctl's
// output.
#ifndef BALLAST_AGENT_API_TESTS_TEST_UTIL_H_
#define BALLAST_AGENT_API_TESTS_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ballast::api::testing {

// mkdtemp under /tmp; removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& socket_path);

// Runs lbctl's RunLbctl with `args` (without "lbctl"); captures stdout and
// stderr.
struct LbctlResult {
  int exit_code;
  std::string out;
  std::string err;
};
LbctlResult RunLbctlCaptured(const std::vector<std::string>& args);

void WriteFile(const std::string& path, const std::string& content);
std::string ReadFileOrDie(const std::string& path);

}  // namespace ballast::api::testing

#endif  // BALLAST_AGENT_API_TESTS_TEST_UTIL_H_
