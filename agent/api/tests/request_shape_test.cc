// Requests missing what the method needs are rejected naming the field.
#include <catch2/catch.hpp>

#include "agent/api/request_shape.h"

namespace ballast::api {
namespace {

v1::VipKey Key() {
  v1::VipKey k;
  k.set_address("198.18.0.10");
  k.set_port(80);
  k.set_protocol(v1::TCP);
  return k;
}

void ExpectMissing(const absl::Status& s, const std::string& field) {
  INFO(field);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Catch::StartsWith(field + " is required"));
}

TEST_CASE("AddVip shape", "[shape]") {
  v1::AddVipRequest r;
  ExpectMissing(CheckShape(r), "vip");
  r.mutable_vip();
  ExpectMissing(CheckShape(r), "vip.key");
  r.mutable_vip()->mutable_key()->set_port(80);
  ExpectMissing(CheckShape(r), "vip.key.address");
  r.mutable_vip()->mutable_key()->set_address("198.18.0.10");
  ExpectMissing(CheckShape(r), "vip.key.protocol");
  r.mutable_vip()->mutable_key()->set_protocol(v1::UDP);
  CHECK(CheckShape(r).ok());
  r.mutable_vip()->add_backends()->set_address("198.18.1.1");
  r.mutable_vip()->add_backends();
  ExpectMissing(CheckShape(r), "vip.backends[1].address");
  r.mutable_vip()->mutable_key()->set_port(0);  // all ports is a value, not a gap
  r.mutable_vip()->mutable_backends(1)->set_address("198.18.1.2");
  CHECK(CheckShape(r).ok());
}

TEST_CASE("backend requests need vip and address", "[shape]") {
  v1::SetWeightRequest r;
  ExpectMissing(CheckShape(r), "vip");
  *r.mutable_vip() = Key();
  ExpectMissing(CheckShape(r), "address");
  r.set_address("198.18.1.1");
  CHECK(CheckShape(r).ok());  // weight 0 is a valid weight

  v1::DrainRequest d;
  *d.mutable_vip() = Key();
  d.mutable_vip()->clear_protocol();
  d.set_address("198.18.1.1");
  ExpectMissing(CheckShape(d), "vip.protocol");

  v1::AddBackendRequest a;
  *a.mutable_vip() = Key();
  ExpectMissing(CheckShape(a), "backend");
  a.mutable_backend();
  ExpectMissing(CheckShape(a), "backend.address");

  v1::DeleteBackendRequest del;
  ExpectMissing(CheckShape(del), "vip");
  v1::UndrainRequest u;
  *u.mutable_vip() = Key();
  ExpectMissing(CheckShape(u), "address");
  v1::ReleaseRequest rel;
  *rel.mutable_vip() = Key();
  rel.set_address("2001:db8::1");
  CHECK(CheckShape(rel).ok());
  v1::DeleteVipRequest dv;
  ExpectMissing(CheckShape(dv), "key");
}

TEST_CASE("ApplyConfig, QueryAudit, Teardown shapes", "[shape]") {
  v1::ApplyConfigRequest c;
  ExpectMissing(CheckShape(c), "config");
  c.mutable_config();
  CHECK(CheckShape(c).ok());  // an empty config is deliberate
  c.mutable_config()->add_vips();
  ExpectMissing(CheckShape(c), "config.vips[0].key");

  v1::QueryAuditRequest q;
  q.set_since_unix_ms(-1);
  CHECK(CheckShape(q).code() == absl::StatusCode::kInvalidArgument);
  q.set_since_unix_ms(0);
  CHECK(CheckShape(q).ok());

  v1::TeardownRequest t;
  CHECK_THAT(std::string(CheckShape(t).message()), Catch::StartsWith("confirm must be true"));
  t.set_confirm(true);
  CHECK(CheckShape(t).ok());
}

TEST_CASE("QUIC-LB requests' shape", "[shape][quic]") {
  v1::RotateQuicConfigRequest rotate;
  ExpectMissing(CheckShape(rotate), "vip");
  *rotate.mutable_vip() = Key();
  CHECK(CheckShape(rotate).ok());
  v1::RetireQuicConfigRequest retire;
  ExpectMissing(CheckShape(retire), "vip");
  *retire.mutable_vip() = Key();
  CHECK(CheckShape(retire).ok());
  v1::ExportQuicConfigRequest exp;
  ExpectMissing(CheckShape(exp), "vip");
  *exp.mutable_vip() = Key();
  ExpectMissing(CheckShape(exp), "address");
  exp.set_address("198.18.1.1");
  CHECK(CheckShape(exp).ok());
}

}  // namespace
}  // namespace ballast::api
