// The state file: round trip, corruption is refused, and kill -9 during
// writes always leaves the old or the new state.
#include "agent/core/state_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <random>

#include "agent/core/ids.h"
#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

v1::State StateOf(const v1::Config& c, uint64_t generation) {
  v1::State s;
  *s.mutable_config() = c;
  s.set_generation(generation);
  REQUIRE(AssignIds(&s).ok());
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

TEST_CASE("Save then Load returns the same state; a missing file is NotFound") {
  testing::TempDir dir;
  StateStore store(dir.File("a/b/state.pb"));
  REQUIRE(store.Load().status().code() == absl::StatusCode::kNotFound);
  const v1::State s = StateOf(testing::SmallConfig(), 3);
  REQUIRE(store.Save(s).ok());
  auto back = store.Load();
  REQUIRE(back.ok());
  REQUIRE(testing::Serialized(*back) == testing::Serialized(s));
  REQUIRE(access(dir.File("a/b/state.pb.tmp").c_str(), F_OK) != 0);
}

TEST_CASE("A damaged file is DataLoss with a message naming the file and the problem") {
  testing::TempDir dir;
  const std::string path = dir.File("state.pb");
  StateStore store(path);
  REQUIRE(store.Save(StateOf(testing::SmallConfig(), 1)).ok());
  const std::string good = ReadFile(path);

  SECTION("truncated") {
    WriteFile(path, good.substr(0, good.size() - 10));
    auto s = store.Load();
    REQUIRE(s.status().code() == absl::StatusCode::kDataLoss);
    REQUIRE_THAT(std::string(s.status().message()),
                 Catch::StartsWith(path + " is corrupt: the header announces"));
  }
  SECTION("one bit flipped") {
    std::string bad = good;
    bad[bad.size() / 2] ^= 0x10;
    WriteFile(path, bad);
    auto s = store.Load();
    REQUIRE(s.status().code() == absl::StatusCode::kDataLoss);
    REQUIRE_THAT(std::string(s.status().message()), Catch::Contains("checksum mismatch"));
    REQUIRE_THAT(std::string(s.status().message()), Catch::Contains("Refusing to start"));
  }
  SECTION("not a state file") {
    WriteFile(path, "config { }\n this is text, not ours ...........");
    auto s = store.Load();
    REQUIRE(s.status().code() == absl::StatusCode::kDataLoss);
    REQUIRE_THAT(std::string(s.status().message()), Catch::Contains("not a ballast state file"));
  }
  SECTION("empty") {
    WriteFile(path, "");
    REQUIRE(store.Load().status().code() == absl::StatusCode::kDataLoss);
  }
}

TEST_CASE("kill -9 during state writes leaves the old or the new state, 200 times") {
  testing::TempDir dir;
  const std::string path = dir.File("state.pb");
  // Two states of some size (~100 KB), so kills land inside writes too.
  const v1::State a = StateOf(testing::BigConfig(40, 50, 251), 1);
  const v1::State b = StateOf(testing::BigConfig(41, 49, 257), 2);
  const std::string sa = testing::Serialized(a);
  const std::string sb = testing::Serialized(b);
  REQUIRE(sa.size() > 50000);
  StateStore store(path);

  // Kill at a random moment within ~3 saves, measured on this machine (fork
  // and fsync times vary a lot between disks).
  const auto t_save = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) REQUIRE(store.Save(i % 2 ? a : b).ok());
  REQUIRE(store.Save(a).ok());
  const auto save_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - t_save)
                           .count() /
                       6;
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int64_t> delay_us(0, 3 * save_us + 500);
  int saw_a = 0;
  int saw_b = 0;
  int interrupted = 0;  // kills that left <file>.tmp behind: a write was cut short
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    // The child says when it starts saving: the random delay counts from
    // there, not from fork(). And it saves the state the file already has
    // (a) once before that: a forked child's first save takes several times
    // as long as the others (its pages are copied on write), longer than
    // the whole delay here, so that every kill landed before any write
    // (saw_b == 0, interrupted == 0 in CI).
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(ready[0]);
      StateStore child(path);
      if (!child.Save(a).ok()) _exit(3);
      const char go = 1;
      if (write(ready[1], &go, 1) != 1) _exit(4);
      for (uint64_t n = 0;; ++n) {
        if (!child.Save(n % 2 == 0 ? b : a).ok()) _exit(3);
      }
    }
    close(ready[1]);
    char go = 0;
    REQUIRE(read(ready[0], &go, 1) == 1);
    close(ready[0]);
    usleep(static_cast<useconds_t>(delay_us(rng)));
    REQUIRE(kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFSIGNALED(status));  // not a child that failed to save (exit 3)
    if (access((path + ".tmp").c_str(), F_OK) == 0) ++interrupted;
    auto got = store.Load();
    INFO("iteration " << i << ", one save takes ~" << save_us << " us");
    REQUIRE(got.ok());
    const std::string sg = testing::Serialized(*got);
    REQUIRE((sg == sa || sg == sb));
    (sg == sa ? saw_a : saw_b)++;
    REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(120));
  }
  // Both outcomes happened: the kills really interrupted a writer mid-way.
  CHECK(saw_a > 0);
  CHECK(saw_b > 0);
  CHECK(interrupted > 0);
}

}  // namespace
}  // namespace ballast::core
