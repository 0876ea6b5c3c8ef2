#include "agent/api/tests/test_util.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tools/lbctl/commands.h"

namespace ballast::api::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/ballast-api-test.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& socket_path) {
  return grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials());
}

std::shared_ptr<grpc::Channel> TlsChannel(int port, const std::string& ca_file,
                                          const std::string& cert_file,
                                          const std::string& key_file) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFileOrDie(ca_file);
  if (!cert_file.empty()) {
    ssl.pem_cert_chain = ReadFileOrDie(cert_file);
    ssl.pem_private_key = ReadFileOrDie(key_file);
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(ssl),
                                   args);
}

namespace {
std::string Slurp(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}
}  // namespace

LbctlResult RunLbctlCaptured(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"lbctl"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  if (out == nullptr || err == nullptr) throw std::runtime_error("tmpfile failed");
  LbctlResult r;
  r.exit_code = lbctl::RunLbctl(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace ballast::api::testing
