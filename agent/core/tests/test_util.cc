#include "agent/core/tests/test_util.h"

#include <ftw.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/str_cat.h"
#include "agent/core/file_store.h"
#include "agent/core/ids.h"
#include "agent/core/names.h"
#include "agent/core/validate.h"
#include "agent/dataplane/dataplane.h"
#include "agent/maglev/maglev.h"

namespace ballast::core::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/ballast-core-test.XXXXXX";
  const char* p = mkdtemp(tmpl);
  REQUIRE(p != nullptr);
  path_ = p;
}

TempDir::~TempDir() {
  nftw(
      path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); },
      16, FTW_DEPTH | FTW_PHYS);
}

v1::VipKey Key(const std::string& addr, uint32_t port, v1::Protocol proto) {
  v1::VipKey k;
  k.set_address(addr);
  k.set_port(port);
  k.set_protocol(proto);
  return k;
}

v1::Backend MakeBackend(const std::string& addr, uint32_t weight) {
  v1::Backend b;
  b.set_address(addr);
  b.set_weight(weight);
  return b;
}

v1::Config SmallConfig() {
  v1::Config c;
  c.mutable_global()->set_source_v4("198.18.0.1");
  c.mutable_global()->set_source_v6("2001:db8::1");
  v1::Vip* a = c.add_vips();
  *a->mutable_key() = Key("198.18.0.10", 80);
  a->set_table_size(251);
  a->set_name("web");
  *a->add_backends() = MakeBackend("198.18.1.1", 1);
  *a->add_backends() = MakeBackend("198.18.1.2", 1);
  *a->add_backends() = MakeBackend("198.18.1.3", 2);
  v1::Vip* b = c.add_vips();
  *b->mutable_key() = Key("2001:db8:10::10", 443);
  b->set_table_size(251);
  *b->add_backends() = MakeBackend("2001:db8:1::1", 1);
  *b->add_backends() = MakeBackend("2001:db8:1::2", 1);
  return c;
}

v1::Config BigConfig(int vips, int backends, uint32_t table_size) {
  v1::Config c;
  c.mutable_global()->set_source_v4("198.18.0.1");
  c.mutable_global()->set_source_v6("2001:db8::1");
  int n = 0;
  for (int i = 0; i < vips; ++i) {
    v1::Vip* v = c.add_vips();
    *v->mutable_key() = Key(absl::StrCat("198.18.", i / 250, ".", i % 250 + 1), 80);
    v->set_table_size(table_size);
    for (int j = 0; j < backends; ++j, ++n) {
      *v->add_backends() = MakeBackend(absl::StrCat("198.19.", n / 250, ".", n % 250 + 1), 1);
    }
  }
  return c;
}

void RequireRoot() {
  if (geteuid() != 0) {
    FAIL(
        "this test programs a real XDP data plane and needs root (CAP_BPF, CAP_NET_ADMIN, "
        "CAP_PERFMON); run core_tests as root");
  }
}

namespace {

std::unique_ptr<RouterEngine> Start(const TempDir& dir, const Clock* clock,
                                    const v1::Config& initial, EngineOptions eo,
                                    std::unique_ptr<dataplane::DataplanePort> dp) {
  eo.state_file = dir.File("state.pb");
  eo.audit_log = dir.File("audit.jsonl");
  auto e = RouterEngine::Start(std::move(dp), eo, clock, initial);
  if (!e.ok()) FAIL("starting the engine: " << e.status().ToString());
  return std::move(*e);
}

std::unique_ptr<RouterEngine> Start(const TempDir& dir, const Clock* clock,
                                    const v1::Config& initial, bool vip_ownership,
                                    std::unique_ptr<dataplane::DataplanePort> dp) {
  EngineOptions eo;
  eo.vip_ownership = vip_ownership;
  return Start(dir, clock, initial, std::move(eo), std::move(dp));
}

}  // namespace

std::unique_ptr<RouterEngine> StartEngine(const TempDir& dir, const Clock* clock,
                                          const v1::Config& initial, EngineOptions options,
                                          dataplane::FakeDataplane** fake) {
  auto dp = std::make_unique<dataplane::FakeDataplane>();
  if (fake != nullptr) *fake = dp.get();
  return Start(dir, clock, initial, std::move(options), std::move(dp));
}

SlowDisk::SlowDisk(std::chrono::milliseconds max) : max_(max) {}

AuditLog::Syncer SlowDisk::syncer() const {
  return [s = s_, max = max_](int fd) {
    {
      std::unique_lock<std::mutex> lock(s->mu);
      if (s->stalled) {
        ++s->blocked;
        s->cv.notify_all();
        s->cv.wait_for(lock, max, [&] { return !s->stalled; });
        --s->blocked;
      }
      ++s->syncs;
    }
    return fdatasync(fd);
  };
}

void SlowDisk::Stall() {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->stalled = true;
}

void SlowDisk::Release() {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->stalled = false;
  s_->cv.notify_all();
}

bool SlowDisk::WaitBlocked(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(s_->mu);
  return s_->cv.wait_for(lock, timeout, [&] { return s_->blocked > 0; });
}

int SlowDisk::syncs() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->syncs;
}

std::unique_ptr<RouterEngine> StartEngine(const TempDir& dir, const Clock* clock,
                                          const v1::Config& initial, bool vip_ownership,
                                          dataplane::FakeDataplane** fake) {
  auto dp = std::make_unique<dataplane::FakeDataplane>();
  if (fake != nullptr) *fake = dp.get();
  return Start(dir, clock, initial, vip_ownership, std::move(dp));
}

SlowStore::SlowStore(std::string path) : file_(std::make_unique<FileStore>(std::move(path))) {}

std::string SlowStore::Describe() const { return file_->Describe(); }

absl::StatusOr<StoredState> SlowStore::Load() { return file_->Load(); }

absl::StatusOr<int64_t> SlowStore::Save(const v1::State& next, int64_t base, WriteKind kind) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stalled_) {
      blocked_ = true;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(5), [&] { return !stalled_; });
    }
  }
  return file_->Save(next, base, kind);
}

void SlowStore::Stall() {
  std::lock_guard<std::mutex> lock(mu_);
  stalled_ = true;
}

void SlowStore::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  stalled_ = false;
  cv_.notify_all();
}

bool SlowStore::WaitBlocked(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return blocked_; });
}

std::unique_ptr<RouterEngine> StartRealEngine(const TempDir& dir, const Clock* clock,
                                              const v1::Config& initial,
                                              const std::string& pin_dir) {
  RequireRoot();
  dataplane::Options o;
  o.pin_dir = pin_dir;
  o.flow_capacity = 4096;
  auto dp = dataplane::Dataplane::Open(o);
  if (!dp.ok()) FAIL("opening the data plane: " << dp.status().ToString());
  return Start(dir, clock, initial, /*vip_ownership=*/false, std::move(*dp));
}

std::string DataplaneText(const RouterEngine& e) {
  auto img = e.ReadDataplane();
  REQUIRE(img.ok());
  return DescribeImage(*img);
}

void RequireDataplaneMatchesState(const RouterEngine& e) {
  auto built = BuildImage(e.State(), nullptr);
  REQUIRE(built.ok());
  REQUIRE(DataplaneText(e) == DescribeImage(built->image));
}

void RequireTableMatchesState(const RouterEngine& e, const v1::VipKey& vip) {
  const v1::State s = e.State();
  std::vector<maglev::Backend> in;
  uint32_t m = 0;
  for (const v1::Vip& v : s.config().vips()) {
    if (VipKeyText(v.key()) != VipKeyText(vip)) continue;
    m = EffectiveTableSize(v);
    for (const v1::Backend& b : v.backends()) {
      in.push_back({BackendIdOf(s, v.key(), b.address()), CanonicalAddress(b.address()),
                    ViewOf(s, v.key(), b).effective_weight});
    }
  }
  REQUIRE(m != 0);
  auto want = maglev::BuildTable(in, m);
  REQUIRE(want.ok());
  auto got = e.ReadTable(vip);
  REQUIRE(got.ok());
  REQUIRE(*got == *want);
}

std::string Serialized(const v1::State& state) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    state.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace ballast::core::testing
