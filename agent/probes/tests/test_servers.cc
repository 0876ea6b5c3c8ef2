#include "agent/probes/tests/test_servers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <mutex>
#include <stdexcept>

#include <httplib.h>

#include "ballast/testing/v1/testbackend.grpc.pb.h"

namespace ballast::probes::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/ballast-probes-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

void Run(const std::string& cmd) {
  const std::string full = cmd + " >/dev/null 2>&1";
  if (std::system(full.c_str()) != 0) throw std::runtime_error("command failed: " + cmd);
}

}  // namespace

Certs MakeCerts(const std::string& dir) {
  Certs c{dir + "/ca.pem",     dir + "/other-ca.pem", dir + "/server.pem",
          dir + "/server.key", dir + "/client.pem",   dir + "/client.key"};
  Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=ballast-test-ca -keyout " +
      dir + "/ca.key -out " + c.ca);
  Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=other-ca -keyout " +
      dir + "/other-ca.key -out " + c.other_ca);
  // A leaf signed by the CA: its name (files <name>.csr/.ext), CN, key and
  // certificate paths, and its one extension line.
  auto leaf = [&](const std::string& name, const std::string& cn, const std::string& key,
                  const std::string& cert, const std::string& ext) {
    Run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + cn +
        " -keyout " + key + " -out " + dir + "/" + name + ".csr");
    std::ofstream(dir + "/" + name + ".ext") << ext << "\n";
    Run("openssl x509 -req -days 1 -in " + dir + "/" + name + ".csr -CA " + c.ca + " -CAkey " +
        dir + "/ca.key -CAcreateserial -extfile " + dir + "/" + name + ".ext -out " + cert);
  };
  leaf("server", "probe.test", c.key, c.cert, "subjectAltName=DNS:probe.test,IP:127.0.0.1");
  leaf("client", "probe-client", c.client_key, c.client_cert, "extendedKeyUsage=clientAuth");
  return c;
}

HttpServer::HttpServer(std::string name, const std::string& cert, const std::string& key,
                       const std::string& client_ca)
    : ua_(std::make_shared<std::string>()), ua_mu_(std::make_shared<std::mutex>()) {
  if (cert.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else if (client_ca.empty()) {
    server_ = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
  } else {
    server_ = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str(), client_ca.c_str());
  }
  auto ua = ua_;
  auto mu = ua_mu_;
  auto record = [ua, mu](const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(*mu);
    *ua = req.get_header_value("User-Agent");
  };
  server_->Get("/", [name, record](const httplib::Request& req, httplib::Response& res) {
    record(req);
    res.set_content("hello from " + name, "text/plain");
  });
  server_->Get(R"(/status/(\d+))", [record](const httplib::Request& req, httplib::Response& res) {
    record(req);
    res.status = std::stoi(req.matches[1]);
    res.set_content("status " + std::string(req.matches[1]), "text/plain");
  });
  server_->Get("/slow", [record](const httplib::Request& req, httplib::Response& res) {
    record(req);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    res.set_content("slow", "text/plain");
  });
  server_->Get("/ua", [record](const httplib::Request& req, httplib::Response& res) {
    record(req);
    res.set_content(req.get_header_value("User-Agent"), "text/plain");
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("cannot bind the test HTTP server");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

HttpServer::~HttpServer() {
  server_->stop();
  thread_.join();
}

std::string HttpServer::last_user_agent() const {
  std::lock_guard<std::mutex> lock(*ua_mu_);
  return *ua_;
}

struct GrpcBackend::Impl final : public ballast::testing::v1::TestBackend::Service {
  grpc::Status Hello(grpc::ServerContext* ctx, const ballast::testing::v1::HelloRequest* req,
                     ballast::testing::v1::HelloReply* reply) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = ctx->client_metadata().find("user-agent");
      ua = it == ctx->client_metadata().end() ? ""
                                              : std::string(it->second.data(), it->second.size());
    }
    reply->set_name(name);
    reply->set_healthy(healthy);
    reply->set_message("hello " + req->from() + " from " + name);
    return grpc::Status::OK;
  }
  std::string name;
  bool healthy = true;
  std::mutex mu;
  std::string ua;
  std::unique_ptr<grpc::Server> server;
};

GrpcBackend::GrpcBackend(std::string name, bool healthy) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->healthy = healthy;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  b.RegisterService(impl_.get());
  impl_->server = b.BuildAndStart();
  if (!impl_->server || port_ == 0) throw std::runtime_error("cannot start the gRPC backend");
}

GrpcBackend::GrpcBackend(std::string name, bool healthy, const Certs& certs,
                         bool require_client_cert)
    : impl_(std::make_unique<Impl>()) {
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  impl_->name = std::move(name);
  impl_->healthy = healthy;
  grpc::SslServerCredentialsOptions o(
      require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  o.pem_root_certs = read(certs.ca);
  o.pem_key_cert_pairs.push_back({read(certs.key), read(certs.cert)});
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(o), &port_);
  b.RegisterService(impl_.get());
  impl_->server = b.BuildAndStart();
  if (!impl_->server || port_ == 0) throw std::runtime_error("cannot start the gRPC TLS backend");
}

GrpcBackend::~GrpcBackend() { impl_->server->Shutdown(std::chrono::system_clock::now()); }

std::string GrpcBackend::last_user_agent() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->ua;
}

namespace {

int BoundPort(int fd) {
  sockaddr_in sin{};
  socklen_t len = sizeof(sin);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len);
  return ntohs(sin.sin_port);
}

sockaddr_in Loopback(int port) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(static_cast<uint16_t>(port));
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sin;
}

}  // namespace

FullListener::FullListener() : listener_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in sin = Loopback(0);
  if (bind(listener_.get(), reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0 ||
      listen(listener_.get(), 0) != 0) {
    throw std::runtime_error("cannot listen");
  }
  port_ = BoundPort(listener_.get());
  // Backlog 0 holds one established connection; fill it (and one more that
  // completes its handshake late) so further SYNs are dropped.
  for (int i = 0; i < 2; ++i) {
    dataplane::UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in to = Loopback(port_);
    connect(c.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to));
    fillers_.push_back(std::move(c));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

int ClosedPort() {
  dataplane::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sin = Loopback(0);
  bind(fd.get(), reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
  return BoundPort(fd.get());  // closed again when fd goes away; nothing listens
}

}  // namespace ballast::probes::testing
