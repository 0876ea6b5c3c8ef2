// The standalone store: the local state file (state_store.h,
// atomic replace) is the state. There is one writer (this agent), so
// base_revision is not checked and every revision is 0.
//
// Header-only: the engine builds one when no other store is given.
#ifndef BALLAST_AGENT_CORE_FILE_STORE_H_
#define BALLAST_AGENT_CORE_FILE_STORE_H_

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/core/state_store.h"
#include "agent/core/store.h"

namespace ballast::core {

class FileStore final : public Store {
 public:
  explicit FileStore(std::string path) : file_(std::move(path)) {}

  std::string Describe() const override { return absl::StrCat("state file ", file_.path()); }

  absl::StatusOr<StoredState> Load() override {
    auto s = file_.Load();
    if (!s.ok()) return s.status();
    return StoredState{std::move(*s), 0, "file"};
  }

  absl::StatusOr<int64_t> Save(const v1::State& next, int64_t, WriteKind) override {
    if (auto s = file_.Save(next); !s.ok()) return s;
    return 0;
  }

 private:
  StateStore file_;
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_FILE_STORE_H_
