// The backend-side decap program (bpf/xdp_decap.bpf.c).
//
// A Decap either loads a fresh copy of the program (Load) or attaches to the
// copy already running on a device (FromDevice, e.g. from a later lbdp
// process). Nothing is pinned: the program and its maps live as long as
// the program is attached to a device or a Decap holds them, and disappear
// when it is detached. Detach() and DetachFrom() remove it.
//
// Who may use the tunnel: AddSource() (the routers' outer sources) and
// AddVip()/AddVipAddress() (what is served here) each turn their check on
// with the first entry; until then anything is accepted (an open tunnel,
// which `lbdp decap attach` makes the operator choose explicitly). With
// VIPs, an inner packet passes only to a served protocol and port, or as
// an ICMP error about one (bpf/lib/decap_vips.h); others are `unserved`.
//
// Beside it, on the same device's tc egress hook, tc_decap_rst holds back
// the kernel's RST to a SYN the program passed up for a listener that went
// before TCP saw the SYN (a dying server closes its listener last); the
// client's retransmission then gets second chance. Attach() installs both,
// DetachFrom() removes both.
//
// Ownership: owns its fds (and the skeleton after Load). Destruction does
// not detach. Thread-safety: none; one owner thread.
#ifndef BALLAST_AGENT_DATAPLANE_DECAP_H_
#define BALLAST_AGENT_DATAPLANE_DECAP_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/vip_key.h"
#include "agent/dataplane/xdp_attach.h"
#include "ballast_abi.h"

struct xdp_decap;  // generated skeleton (xdp_decap.skel.h)

namespace ballast::dataplane {

class Decap {
 public:
  // Loads a new, unattached copy of the program with an empty address set.
  static absl::StatusOr<std::unique_ptr<Decap>> Load();
  // The decap program attached to `ifname` (current network namespace).
  // NotFound if the device runs no XDP program, FailedPrecondition if it
  // runs something other than xdp_decap.
  static absl::StatusOr<std::unique_ptr<Decap>> FromDevice(std::string_view ifname);
  // Detaches the decap program from `ifname` (only if it is xdp_decap),
  // and tc_decap_rst from its egress.
  static absl::Status DetachFrom(std::string_view ifname);
  // Whether tc_decap_rst is on the egress hook of `ifname`.
  static absl::StatusOr<bool> HoldsRsts(std::string_view ifname);

  ~Decap();
  Decap(const Decap&) = delete;
  Decap& operator=(const Decap&) = delete;

  // Adds/removes a local address encapsulated traffic is accepted for.
  absl::Status AddAddress(const IpAddress& addr);
  absl::Status RemoveAddress(const IpAddress& addr);
  absl::StatusOr<std::vector<IpAddress>> Addresses() const;

  // Allows encapsulated packets from `prefix` ("198.18.0.1",
  // "198.18.0.0/24", "2001:db8::/64"), and from then on only from the
  // prefixes added. Only on a copy made by Load().
  absl::Status AddSource(std::string_view prefix);
  // Accepts inner packets to `vip` (its protocol, TCP or UDP, and port; port
  // 0: every port of the protocol) and ICMP errors about them, and from then
  // on only what the VIPs added serve. Only on a copy made by Load().
  absl::Status AddVip(const VipKey& vip);
  // Accepts every inner packet to `addr`, whatever its protocol and port: a
  // config that names a VIP's address alone, as before ports were given.
  // An address is added either way, not both (InvalidArgument). Only on a
  // copy made by Load().
  absl::Status AddVipAddress(const IpAddress& addr);
  // What AddVip and AddVipAddress added (proto 0: the whole address).
  absl::StatusOr<std::vector<VipKey>> Vips() const;

  // Second chance (on by default): a pure TCP SYN that no socket here would
  // take goes back to its router rather than up the stack. Only on a copy
  // made by Load().
  absl::Status SetBounce(bool on);
  // Accepts GUE (the lb program's outer IP + UDP, a VIP with `mode: GUE`)
  // on UDP port `port` (1..65535), or no GUE (0, the default). Only on a
  // copy made by Load().
  absl::Status SetGuePort(uint16_t port);

  // Attaches to `ifname` (and tc_decap_rst to its egress). If the device
  // already runs an xdp_decap program it is replaced atomically (its
  // address set is not carried over); any other program:
  // FailedPrecondition, and nothing changes. Only on a copy made by Load().
  // Returns the mode used.
  absl::StatusOr<AttachMode> Attach(std::string_view ifname, AttachMode mode);

  // Per-verdict packet counts summed over CPUs.
  absl::StatusOr<std::array<uint64_t, BALLAST_DECAP_V_MAX>> Stats() const;

  int prog_fd() const { return prog_fd_; }
  // tc_decap_rst's fd on a copy made by Load(), else -1.
  int rst_prog_fd() const;

 private:
  Decap() = default;

  xdp_decap* skel_ = nullptr;  // set by Load()
  int prog_fd_ = -1;           // owned only when skel_ == nullptr
  int addrs_fd_ = -1;          // idem
  int vips_fd_ = -1;           // idem
  int stats_fd_ = -1;          // idem

  // Sets (`on`) or clears `bit` of decap_policy.
  absl::Status SetPolicyBit(uint32_t bit, bool on);
  // Writes the address entry of `addr` in decap_vips (`value`:
  // BALLAST_DECAP_VIP_*); `what` names the VIP in errors.
  absl::Status PutVipAddress(const IpAddress& addr, uint32_t value, const std::string& what);
};

}  // namespace ballast::dataplane

#endif  // BALLAST_AGENT_DATAPLANE_DECAP_H_
