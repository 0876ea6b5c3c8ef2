// The schema side of gRPC probes: a method looked up in a descriptor set
// file, requests built from protobuf text format with a dynamic message
// factory, and assertions on fields of the reply.
//
// Assertion syntax (one per ProbeSpec.grpc_expect entry):
//
//   assertion := path op literal
//   path      := field ('.' field)*     singular fields; messages in between
//   op        := '==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains'
//   literal   := "quoted string" (C escapes) | integer | decimal | true | false
//              | ENUM_VALUE_NAME
//
// The last field must be a scalar, string, bytes or enum; `contains` is for
// strings and bytes, the orderings for numbers. An unset field has its
// default value (proto3). Examples: `name == "b1"`, `healthy == true`,
// `message contains "from b1"`.
//
// Thread-safety: GrpcSchema and Expectation are immutable after creation;
// every const method may be called from several threads at once.
#ifndef BALLAST_AGENT_PROBES_GRPC_SCHEMA_H_
#define BALLAST_AGENT_PROBES_GRPC_SCHEMA_H_

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include "absl/status/statusor.h"

namespace ballast::probes {

class GrpcSchema {
 public:
  // Reads a FileDescriptorSet (protoc --include_imports
  // --descriptor_set_out=FILE) and finds `full_method`
  // ("/pkg.Service/Method"). InvalidArgument naming the file, or the
  // services it does define, otherwise. Streaming methods are refused.
  static absl::StatusOr<std::unique_ptr<GrpcSchema>> Load(const std::string& path,
                                                          std::string_view full_method);

  const google::protobuf::MethodDescriptor* method() const { return method_; }
  const std::string& full_method() const { return full_method_; }

  // A new request message from text format ("" = empty message). The error
  // carries the text-format parser's line:column and message.
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ParseRequest(
      std::string_view text) const;
  // An empty message of the reply type.
  std::unique_ptr<google::protobuf::Message> NewReply() const;

 private:
  GrpcSchema() = default;

  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_{&pool_};
  const google::protobuf::MethodDescriptor* method_ = nullptr;
  const google::protobuf::Message* request_proto_ = nullptr;  // owned by factory_
  const google::protobuf::Message* reply_proto_ = nullptr;    // owned by factory_
  std::string full_method_;
};

// One parsed assertion, bound to a message type. Holds descriptor pointers:
// must not outlive the GrpcSchema (pool) it was parsed against.
class Expectation {
 public:
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kContains };

  // InvalidArgument with the problem (unknown field "nmae" of
  // ballast.testing.v1.HelloReply, literal type mismatch, ...).
  static absl::StatusOr<Expectation> Parse(std::string_view text,
                                           const google::protobuf::Descriptor* type);

  // "" when the assertion holds for `reply`, else what was found, e.g.
  // `name is "b2" (want == "b1")`.
  std::string Check(const google::protobuf::Message& reply) const;

  const std::string& text() const { return text_; }

 private:
  using Literal = std::variant<std::string, bool, int64_t, uint64_t, double>;

  std::string text_;
  std::string path_text_;
  std::vector<const google::protobuf::FieldDescriptor*> path_;
  Op op_ = Op::kEq;
  Literal literal_;
  std::string literal_text_;
};

}  // namespace ballast::probes

#endif  // BALLAST_AGENT_PROBES_GRPC_SCHEMA_H_
