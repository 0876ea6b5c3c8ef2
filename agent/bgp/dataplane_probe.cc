#include "agent/bgp/dataplane_probe.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/xdp_attach.h"

namespace ballast::bgp {
namespace {

constexpr const char* kProgPin = "prog_xdp_lb";  // agent/dataplane/dataplane.cc
constexpr const char* kMaps[] = {"vips", "backends", "maglev_tables", "settings"};

DataplaneHealth Bad(std::string problem) { return {false, std::move(problem)}; }

}  // namespace

DataplaneHealth ProbeDataplane(const std::string& pin_dir, const std::string& interface) {
  if (interface.empty()) return Bad("no interface configured (global.interface)");
  const std::string prog_path = absl::StrCat(pin_dir, "/", kProgPin);
  dataplane::UniqueFd prog(bpf_obj_get(prog_path.c_str()));
  if (!prog)
    return Bad(absl::StrCat("cannot open the pinned program ", prog_path, ": ", strerror(errno)));
  auto info = dataplane::GetProgInfo(prog.get());
  if (!info.ok())
    return Bad(absl::StrCat("pinned program ", prog_path, ": ", info.status().message()));
  auto ifindex = dataplane::IfIndex(interface);
  if (!ifindex.ok())
    return Bad(absl::StrCat("interface ", interface, ": ", ifindex.status().message()));
  auto st = dataplane::QueryXdp(*ifindex);
  if (!st.ok()) return Bad(absl::StrCat("dev ", interface, ": ", st.status().message()));
  if (st->prog_id == 0) return Bad(absl::StrCat("dev ", interface, " runs no XDP program"));
  if (st->prog_id != info->id) {
    return Bad(absl::StrCat("dev ", interface, " runs XDP program id ", st->prog_id, " \"",
                            st->prog_name, "\", not ballast's pinned program id ", info->id));
  }
  for (const char* name : kMaps) {
    const std::string path = absl::StrCat(pin_dir, "/", name);
    dataplane::UniqueFd map(bpf_obj_get(path.c_str()));
    if (!map) return Bad(absl::StrCat("cannot open the pinned map ", path, ": ", strerror(errno)));
    auto mi = dataplane::GetMapInfo(map.get());
    if (!mi.ok()) return Bad(absl::StrCat("pinned map ", path, ": ", mi.status().message()));
    if (std::find(info->map_ids.begin(), info->map_ids.end(), mi->id) == info->map_ids.end()) {
      return Bad(absl::StrCat("pinned map ", path, " (id ", mi->id,
                              ") is not a map of the attached program id ", info->id));
    }
    std::vector<unsigned char> key(std::max<uint32_t>(mi->key_size, 1));
    if (bpf_map_get_next_key(map.get(), nullptr, key.data()) != 0 && errno != ENOENT) {
      return Bad(absl::StrCat("cannot read the pinned map ", path, ": ", strerror(errno)));
    }
  }
  return {true, ""};
}

}  // namespace ballast::bgp
