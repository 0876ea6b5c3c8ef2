#include "agent/dataplane/quic.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>
#include <utility>

#include "agent/base/strcat.h"

namespace ballast::dataplane {
namespace {

using base::Cat;

// ---- AES-128 (FIPS-197), tables from GF(2^8) arithmetic ----

constexpr uint8_t XTime(uint8_t a) {
  return static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
}

constexpr uint8_t GfMul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  while (b != 0) {
    if (b & 1) r ^= a;
    a = XTime(a);
    b >>= 1;
  }
  return r;
}

constexpr uint8_t GfInv(uint8_t a) {
  if (a == 0) return 0;
  for (int b = 1; b < 256; ++b) {
    if (GfMul(a, static_cast<uint8_t>(b)) == 1) return static_cast<uint8_t>(b);
  }
  return 0;
}

constexpr uint8_t Rotl8(uint8_t v, int n) {
  return static_cast<uint8_t>((v << n) | (v >> (8 - n)));
}

struct SBoxes {
  std::array<uint8_t, 256> fwd{};
  std::array<uint8_t, 256> inv{};
};

constexpr SBoxes MakeSBoxes() {
  SBoxes s;
  for (int x = 0; x < 256; ++x) {
    const uint8_t b = GfInv(static_cast<uint8_t>(x));
    const uint8_t v =
        static_cast<uint8_t>(b ^ Rotl8(b, 1) ^ Rotl8(b, 2) ^ Rotl8(b, 3) ^ Rotl8(b, 4) ^ 0x63);
    s.fwd[static_cast<size_t>(x)] = v;
    s.inv[v] = static_cast<uint8_t>(x);
  }
  return s;
}

const SBoxes& Boxes() {
  static const SBoxes boxes = MakeSBoxes();
  return boxes;
}

uint32_t Word(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return static_cast<uint32_t>(a) << 24 | static_cast<uint32_t>(b) << 16 |
         static_cast<uint32_t>(c) << 8 | d;
}

uint8_t Byte(uint32_t w, int i) { return static_cast<uint8_t>(w >> (24 - 8 * i)); }

uint32_t SubWord(uint32_t w) {
  const auto& s = Boxes().fwd;
  return Word(s[Byte(w, 0)], s[Byte(w, 1)], s[Byte(w, 2)], s[Byte(w, 3)]);
}

std::array<uint32_t, 44> ExpandKey(const QuicKey& key) {
  std::array<uint32_t, 44> w{};
  for (int i = 0; i < 4; ++i)
    w[i] = Word(key[4 * i], key[4 * i + 1], key[4 * i + 2], key[4 * i + 3]);
  uint8_t rcon = 1;
  for (size_t i = 4; i < 44; ++i) {
    uint32_t t = w[i - 1];
    if (i % 4 == 0) {
      t = SubWord((t << 8) | (t >> 24)) ^ (static_cast<uint32_t>(rcon) << 24);
      rcon = XTime(rcon);
    }
    w[i] = w[i - 4] ^ t;
  }
  return w;
}

// InvMixColumns of one column (a big-endian word).
uint32_t InvMixColumn(uint32_t w) {
  const uint8_t a0 = Byte(w, 0), a1 = Byte(w, 1), a2 = Byte(w, 2), a3 = Byte(w, 3);
  auto col = [&](uint8_t m0, uint8_t m1, uint8_t m2, uint8_t m3) {
    return static_cast<uint8_t>(GfMul(a0, m0) ^ GfMul(a1, m1) ^ GfMul(a2, m2) ^ GfMul(a3, m3));
  };
  return Word(col(14, 11, 13, 9), col(9, 14, 11, 13), col(13, 9, 14, 11), col(11, 13, 9, 14));
}

absl::Status Invalid(std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(Cat("QUIC-LB config: ", field, " ", what));
}

}  // namespace

std::array<uint32_t, BALLAST_QUIC_AES_ROUND_WORDS> Aes128DecryptSchedule(const QuicKey& key) {
  const std::array<uint32_t, 44> w = ExpandKey(key);
  std::array<uint32_t, BALLAST_QUIC_AES_ROUND_WORDS> dk{};
  for (int j = 0; j < 4; ++j) {
    dk[static_cast<size_t>(j)] = w[static_cast<size_t>(40 + j)];
    dk[static_cast<size_t>(40 + j)] = w[static_cast<size_t>(j)];
  }
  for (int r = 1; r < 10; ++r) {
    for (int j = 0; j < 4; ++j) {
      dk[static_cast<size_t>(4 * r + j)] = InvMixColumn(w[static_cast<size_t>(4 * (10 - r) + j)]);
    }
  }
  return dk;
}

std::array<uint8_t, 16> Aes128Encrypt(const QuicKey& key, const std::array<uint8_t, 16>& block) {
  const std::array<uint32_t, 44> w = ExpandKey(key);
  const auto& sb = Boxes().fwd;
  std::array<uint8_t, 16> s = block;  // column-major: s[4c + r]
  auto add_key = [&](int round) {
    for (int c = 0; c < 4; ++c) {
      for (int r = 0; r < 4; ++r) {
        s[static_cast<size_t>(4 * c + r)] ^= Byte(w[static_cast<size_t>(4 * round + c)], r);
      }
    }
  };
  add_key(0);
  for (int round = 1; round <= 10; ++round) {
    std::array<uint8_t, 16> t{};
    for (int c = 0; c < 4; ++c) {  // SubBytes and ShiftRows
      for (int r = 0; r < 4; ++r) {
        t[static_cast<size_t>(4 * c + r)] = sb[s[static_cast<size_t>(4 * ((c + r) % 4) + r)]];
      }
    }
    if (round < 10) {  // MixColumns
      for (int c = 0; c < 4; ++c) {
        const uint8_t* a = &t[static_cast<size_t>(4 * c)];
        const uint8_t m[4] = {static_cast<uint8_t>(GfMul(a[0], 2) ^ GfMul(a[1], 3) ^ a[2] ^ a[3]),
                              static_cast<uint8_t>(a[0] ^ GfMul(a[1], 2) ^ GfMul(a[2], 3) ^ a[3]),
                              static_cast<uint8_t>(a[0] ^ a[1] ^ GfMul(a[2], 2) ^ GfMul(a[3], 3)),
                              static_cast<uint8_t>(GfMul(a[0], 3) ^ a[1] ^ a[2] ^ GfMul(a[3], 2))};
        std::memcpy(&t[static_cast<size_t>(4 * c)], m, 4);
      }
    }
    s = t;
    add_key(round);
  }
  return s;
}

std::optional<QuicShapeProblem> QuicShapeProblemOf(uint32_t sid_len, uint32_t nonce_len,
                                                   bool keyed) {
  if (sid_len < 1 || sid_len > BALLAST_QUIC_SID_MAX) {
    return QuicShapeProblem{"server_id_len",
                            Cat(sid_len, " is out of range 1..", BALLAST_QUIC_SID_MAX)};
  }
  if (nonce_len < BALLAST_QUIC_NONCE_MIN) {
    return QuicShapeProblem{"nonce_len", Cat(nonce_len, " is below ", BALLAST_QUIC_NONCE_MIN)};
  }
  if (1u + uint64_t{sid_len} + nonce_len > BALLAST_QUIC_CID_MAX) {
    return QuicShapeProblem{"nonce_len", Cat("server_id_len ", sid_len, " + nonce_len ", nonce_len,
                                             " is over 19 (a connection ID holds 20 octets)")};
  }
  if (keyed && sid_len + nonce_len != 16) {
    return QuicShapeProblem{
        "key",
        Cat("needs server_id_len + nonce_len = 16 (single-pass AES), not ", sid_len + nonce_len,
            ": the four-pass form is not implemented in the data plane")};
  }
  return std::nullopt;
}

absl::Status CheckQuicConfig(const QuicConfig& c) {
  if (c.config_id >= BALLAST_QUIC_CR_UNROUTABLE) {
    return Invalid("config_id", Cat(c.config_id, " is out of range 0..6 (7 is unroutable)"));
  }
  if (auto p = QuicShapeProblemOf(c.sid_len, c.nonce_len, c.key.has_value())) {
    return Invalid(p->field, p->problem);
  }
  return absl::OkStatus();
}

absl::Status CheckQuicConfigs(std::span<const QuicConfig> configs) {
  if (configs.size() > BALLAST_QUIC_CONFIGS) {
    return Invalid("configs",
                   Cat(configs.size(), " given, at most ", BALLAST_QUIC_CONFIGS, " live at once"));
  }
  for (const QuicConfig& c : configs) {
    if (absl::Status st = CheckQuicConfig(c); !st.ok()) return st;
  }
  if (configs.size() == 2 && configs[0].config_id == configs[1].config_id) {
    return Invalid("config_id", Cat(configs[0].config_id, " given twice"));
  }
  return absl::OkStatus();
}

absl::Status CheckQuicServers(std::span<const QuicConfig> configs,
                              std::span<const QuicServer> servers) {
  std::set<std::pair<uint8_t, std::vector<uint8_t>>> seen;
  for (const QuicServer& s : servers) {
    const QuicConfig* c = nullptr;
    for (const QuicConfig& k : configs) {
      if (k.config_id == s.config_id) c = &k;
    }
    if (c == nullptr) {
      return Invalid("server", Cat("of config_id ", s.config_id, ": no such configuration"));
    }
    if (s.sid.size() != c->sid_len) {
      return Invalid("server_id", Cat("has ", s.sid.size(), " octets, config_id ", s.config_id,
                                      " takes ", c->sid_len));
    }
    if (s.backend_id == BALLAST_INVALID_ID || s.backend_id >= BALLAST_MAX_BACKENDS) {
      return Invalid("backend_id",
                     Cat(s.backend_id, " is out of range 1..", BALLAST_MAX_BACKENDS - 1));
    }
    if (!seen.emplace(s.config_id, s.sid).second) {
      return Invalid("server_id", Cat("given twice in config_id ", s.config_id));
    }
  }
  return absl::OkStatus();
}

bool QuicServerLive(std::span<const QuicConfig> configs, uint8_t config_id, size_t sid_len) {
  for (const QuicConfig& c : configs) {
    if (c.config_id == config_id && c.sid_len == sid_len) return true;
  }
  return false;
}

absl::StatusOr<ballast_quic_vip> QuicVipToAbi(std::span<const QuicConfig> configs) {
  if (absl::Status st = CheckQuicConfigs(configs); !st.ok()) return st;
  ballast_quic_vip v;
  std::memset(&v, 0, sizeof v);
  for (size_t i = 0; i < configs.size(); ++i) {
    const QuicConfig& c = configs[i];
    ballast_quic_config& a = v.config[i];
    a.mode = c.key ? BALLAST_QUIC_MODE_AES_SINGLE : BALLAST_QUIC_MODE_PLAINTEXT;
    a.config_id = c.config_id;
    a.sid_len = c.sid_len;
    a.nonce_len = c.nonce_len;
    if (c.key) {
      const auto dk = Aes128DecryptSchedule(*c.key);
      std::memcpy(a.dec_rk, dk.data(), sizeof a.dec_rk);
    }
  }
  return v;
}

std::vector<QuicConfig> QuicVipFromAbi(const ballast_quic_vip& v) {
  std::vector<QuicConfig> out;
  for (const ballast_quic_config& a : v.config) {
    if (a.mode == BALLAST_QUIC_MODE_OFF) continue;
    QuicConfig c{.config_id = a.config_id, .sid_len = a.sid_len, .nonce_len = a.nonce_len};
    if (a.mode == BALLAST_QUIC_MODE_AES_SINGLE) {
      QuicKey k{};  // the schedule's last round key is the key itself
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) k[static_cast<size_t>(4 * i + j)] = Byte(a.dec_rk[40 + i], j);
      }
      c.key = k;
    }
    out.push_back(c);
  }
  return out;
}

ballast_quic_sid_key QuicSidKey(uint32_t vip_id, uint8_t config_id, std::span<const uint8_t> sid) {
  ballast_quic_sid_key k;
  std::memset(&k, 0, sizeof k);
  k.vip_id = vip_id;
  k.config_id = config_id;
  k.sid_len = static_cast<uint8_t>(sid.size());
  std::memcpy(k.sid, sid.data(), std::min(sid.size(), sizeof k.sid));
  return k;
}

absl::StatusOr<std::vector<uint8_t>> EncodeQuicCid(const QuicConfig& c,
                                                   std::span<const uint8_t> sid,
                                                   std::span<const uint8_t> nonce) {
  if (absl::Status st = CheckQuicConfig(c); !st.ok()) return st;
  if (sid.size() != c.sid_len) {
    return Invalid("server_id", Cat("has ", sid.size(), " octets, not ", c.sid_len));
  }
  if (nonce.size() != c.nonce_len) {
    return Invalid("nonce", Cat("has ", nonce.size(), " octets, not ", c.nonce_len));
  }
  std::vector<uint8_t> cid;
  const size_t rest = sid.size() + nonce.size();
  cid.push_back(static_cast<uint8_t>(c.config_id << 5 | rest));
  cid.insert(cid.end(), sid.begin(), sid.end());
  cid.insert(cid.end(), nonce.begin(), nonce.end());
  if (c.key) {
    std::array<uint8_t, 16> block{};
    std::memcpy(block.data(), cid.data() + 1, 16);
    block = Aes128Encrypt(*c.key, block);
    std::memcpy(cid.data() + 1, block.data(), 16);
  }
  return cid;
}

}  // namespace ballast::dataplane
