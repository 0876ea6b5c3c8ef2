// RouterEngine: where second-chance bounces arrive (bounce_path.h decides;
// this file looks the routes up, attaches and detaches, logs and records).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "agent/core/file_util.h"
#include "agent/core/log.h"
#include "agent/core/router_engine.h"

namespace ballast::core {
namespace {

// Every backend address of the config, once.
std::vector<IpAddress> BackendAddresses(const v1::State& state) {
  std::set<IpAddress> addrs;
  for (const v1::Vip& vip : state.config().vips()) {
    for (const v1::Backend& b : vip.backends()) {
      if (auto a = IpAddress::Parse(b.address()); a.ok()) addrs.insert(*a);
    }
  }
  return {addrs.begin(), addrs.end()};
}

constexpr char kBounceFileHeader[] =
    "# Devices lbagent attached its lb program to because second-chance bounces arrive\n"
    "# there (docs/dataplane.md). The next start detaches those no backend needs.\n";

}  // namespace

std::set<std::string> RouterEngine::LoadBounceDevices(const std::string& path) {
  std::set<std::string> devices;
  if (path.empty()) return devices;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') devices.insert(line);
  }
  return devices;
}

absl::Status RouterEngine::SaveBounceDevices() const {
  const std::string& path = options_.bounce_devices_file;
  if (path.empty()) return absl::OkStatus();
  if (bounce_.attached.empty()) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrCat("removing ", path));
    }
    return absl::OkStatus();
  }
  std::string text = kBounceFileHeader;
  for (const std::string& dev : bounce_.attached) absl::StrAppend(&text, dev, "\n");
  const std::string tmp = absl::StrCat(path, ".tmp");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("creating ", tmp));
  absl::Status s = WriteAll(fd, text, tmp);
  close(fd);
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    s = ErrnoStatus(errno, absl::StrCat("renaming ", tmp, " to ", path));
  }
  if (!s.ok()) unlink(tmp.c_str());
  return s;
}

bool RouterEngine::KeepForBounces(const std::string& device) {
  if (!BouncesNeed(bounce_facts_, device)) return false;
  bounce_.attached.insert(device);
  Log(LogLevel::kInfo, "lb program kept for second-chance bounces",
      {{"device", device}, {"why", "no longer configured, but backends are reached through it"}});
  if (absl::Status s = SaveBounceDevices(); !s.ok()) {
    Log(LogLevel::kWarning, "could not record the devices attached for bounces",
        {{"error", std::string(s.message())}});
  }
  return true;
}

absl::Status RouterEngine::RefreshBouncePaths() {
  if (!options_.route_lookup) return absl::OkStatus();
  std::vector<IpAddress> addrs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.torn_down) return absl::OkStatus();
    if (!state_->config().global().interface().empty()) addrs = BackendAddresses(*state_);
  }
  // Netlink, without the lock. The state may change meanwhile: the next
  // refresh (after each change) sees the new backends.
  std::vector<RouteFact> found;
  if (!addrs.empty()) found = options_.route_lookup(addrs);

  std::lock_guard<std::mutex> lock(mu_);
  if (health_.torn_down) return absl::OkStatus();
  BounceFacts facts = BounceFactsOf(state_->config().global());
  for (size_t i = 0; i < addrs.size(); ++i) {
    facts.routes[addrs[i]] =
        i < found.size() ? found[i] : RouteFact{"", "the route lookup gave no answer"};
  }
  const int64_t now_ms = clock_->NowUnixMs();
  const BouncePlan plan = PlanBounceDevices(bounce_, facts, now_ms);
  const std::set<std::string> before = bounce_.attached;

  for (const std::string& dev : plan.release) {
    bounce_.attached.erase(dev);
    bounce_.inherited.erase(dev);
  }
  for (const std::string& dev : plan.detach) {
    const absl::Status s = dp_->Detach(dev);
    // NotFound: gone already (or the device is); FailedPrecondition: it
    // runs another program now, which is not ours to remove.
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound &&
        s.code() != absl::StatusCode::kFailedPrecondition) {
      Log(LogLevel::kWarning, "could not detach the lb program attached for bounces",
          {{"device", dev}, {"error", std::string(s.message())}});
      continue;  // tried again on the next refresh
    }
    if (s.ok()) {
      Log(LogLevel::kInfo, "lb program detached: no backend's bounces arrive there any more",
          {{"device", dev}});
    }
    bounce_.attached.erase(dev);
    bounce_.inherited.erase(dev);
  }
  for (const std::string& dev : plan.forget) bounce_.failed.erase(dev);
  for (const std::string& dev : plan.attach) {
    const absl::Status s = dp_->Attach(dev, options_.attach_mode);
    if (!s.ok()) {
      bounce_.failed[dev] = {std::string(s.message()), now_ms};
      continue;  // reported (and logged once) below
    }
    bounce_.failed.erase(dev);
    const bool inherited = bounce_.inherited.erase(dev) != 0;
    bounce_.attached.insert(dev);
    Log(LogLevel::kInfo,
        inherited ? "lb program kept for second-chance bounces (attached by the previous run)"
                  : "lb program attached for second-chance bounces",
        {{"device", dev}, {"why", "backends are reached through it (route lookup)"}});
  }

  BounceReport report = ReportBouncePaths(bounce_, facts);
  for (const std::string& key : report.warn) {
    const BounceReport::Problem& p = report.problems.at(key);
    Log(LogLevel::kWarning,
        "second-chance bounces are lost: a SYN these backends refuse waits for the client's "
        "retransmission (1 s)",
        {{"where", key}, {"backends", p.backends}, {"problem", p.text}});
  }
  for (const std::string& key : report.recovered) {
    Log(LogLevel::kInfo, "second-chance bounces reach the lb program again", {{"where", key}});
  }
  bounce_.warned.clear();
  for (const auto& [key, p] : report.problems) bounce_.warned.insert(key);
  bounce_view_ = std::move(report.backends);
  bounce_facts_ = std::move(facts);
  if (bounce_.attached != before) return SaveBounceDevices();
  return absl::OkStatus();
}

}  // namespace ballast::core
