// Helpers shared by the API tests: a temporary directory that removes
// itself, unix-socket and TLS channels to a test server, and capturing
// lbctl's output.
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

// A channel to 127.0.0.1:<port> over TLS that trusts the CA in `ca_file`
// and presents `cert_file`/`key_file` ("" = no client certificate). It has
// its own subchannel pool: it never shares another channel's connection.
std::shared_ptr<grpc::Channel> TlsChannel(int port, const std::string& ca_file,
                                          const std::string& cert_file,
                                          const std::string& key_file);

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
