#include "tests/lib/test_pki.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ballast::testpki {
namespace {

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TestPki GeneratePki(const std::string& dir) {
  // EC P-256 keys: fast to generate. Leaf certificates carry the usual
  // extensions (not CA, key usage, EKU) so OpenSSL's purpose checks apply.
  const std::string script = R"SH(
set -eu
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; chmod 600 "$1.key"; }
ca() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 2 -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
  mkdir "$1.db"; : > "$1.db/index.txt"; echo 01 > "$1.db/crlnumber"
  printf '[ca]\ndefault_ca=d\n[d]\ndatabase=%s\ncrlnumber=%s\ndefault_md=sha256\ndefault_crl_days=2\n' \
    "$1.db/index.txt" "$1.db/crlnumber" > "$1.db/ca.cnf"
}
leaf() {  # name CN CA EKU SAN
  key "$1"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\n' "$4" > "$1.ext"
  if [ -n "$5" ]; then printf 'subjectAltName=%s\n' "$5" >> "$1.ext"; fi
  openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
crl() {  # CA out [openssl ca options]
  c=$1; out=$2; shift 2
  openssl ca -batch -config "$c.db/ca.cnf" -cert "$c.crt" -keyfile "$c.key" -gencrl -out "$out" "$@"
}
ca ca "ballast test CA"
ca otherca "some other CA"
ca fakeca "ballast test CA"
leaf server lbagent ca serverAuth "IP:127.0.0.1,DNS:localhost"
leaf server2 lbagent otherca serverAuth "IP:127.0.0.1,DNS:localhost"
leaf admin ops-admin ca clientAuth ""
leaf reader reader ca clientAuth "DNS:reader.example"
leaf uri svc ca clientAuth "URI:spiffe://ballast/admin-bot"
leaf stranger stranger ca clientAuth "DNS:stranger.example"
leaf rogue ops-admin otherca clientAuth ""
leaf mixed ops-admin ca clientAuth "DNS:someone-else"
leaf iponly ops-admin ca clientAuth "IP:192.0.2.1"
leaf revoked ops-admin ca clientAuth ""
openssl ca -batch -config ca.db/ca.cnf -cert ca.crt -keyfile ca.key -revoke revoked.crt
crl ca ca.crl
crl ca expired.crl -crl_lastupdate 20200101000000Z -crl_nextupdate 20200102000000Z
crl otherca otherca.crl
crl fakeca fakeca.crl
)SH";
  WriteFile(dir + "/gen.sh", script);
  const std::string cmd = "sh " + dir + "/gen.sh " + dir + " > " + dir + "/gen.log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    throw std::runtime_error("generating test certificates with openssl failed:\n" +
                             ReadFileOrDie(dir + "/gen.log"));
  }
  TestPki p;
  p.dir = dir;
  auto f = [&](const char* name) { return dir + "/" + name; };
  p.ca_crt = f("ca.crt");
  p.server_crt = f("server.crt");
  p.server_key = f("server.key");
  p.admin_crt = f("admin.crt");
  p.admin_key = f("admin.key");
  p.reader_crt = f("reader.crt");
  p.reader_key = f("reader.key");
  p.uri_crt = f("uri.crt");
  p.uri_key = f("uri.key");
  p.stranger_crt = f("stranger.crt");
  p.stranger_key = f("stranger.key");
  p.rogue_crt = f("rogue.crt");
  p.rogue_key = f("rogue.key");
  p.mixed_crt = f("mixed.crt");
  p.mixed_key = f("mixed.key");
  p.ip_only_crt = f("iponly.crt");
  p.ip_only_key = f("iponly.key");
  p.revoked_crt = f("revoked.crt");
  p.revoked_key = f("revoked.key");
  p.other_ca_crt = f("otherca.crt");
  p.server2_crt = f("server2.crt");
  p.server2_key = f("server2.key");
  p.ca_crl = f("ca.crl");
  p.expired_crl = f("expired.crl");
  p.other_ca_crl = f("otherca.crl");
  p.fake_ca_crl = f("fakeca.crl");
  return p;
}

}  // namespace ballast::testpki
