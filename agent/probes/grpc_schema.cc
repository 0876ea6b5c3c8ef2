#include "agent/probes/grpc_schema.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/base/strcat.h"

namespace ballast::probes {
namespace {

using base::AV;
using base::Cat;
namespace pb = google::protobuf;

// Collects text-format parse errors as "line:col: message".
class ErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!errors.empty()) errors += "; ";
    errors += Cat(line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  std::string errors;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

const char* OpText(Expectation::Op op) {
  switch (op) {
    case Expectation::Op::kEq:
      return "==";
    case Expectation::Op::kNe:
      return "!=";
    case Expectation::Op::kLt:
      return "<";
    case Expectation::Op::kLe:
      return "<=";
    case Expectation::Op::kGt:
      return ">";
    case Expectation::Op::kGe:
      return ">=";
    case Expectation::Op::kContains:
      return "contains";
  }
  return "?";
}

template <typename T>
bool Compare(Expectation::Op op, const T& have, const T& want) {
  switch (op) {
    case Expectation::Op::kEq:
      return have == want;
    case Expectation::Op::kNe:
      return have != want;
    case Expectation::Op::kLt:
      return have < want;
    case Expectation::Op::kLe:
      return have <= want;
    case Expectation::Op::kGt:
      return have > want;
    case Expectation::Op::kGe:
      return have >= want;
    case Expectation::Op::kContains:
      return false;
  }
  return false;
}

std::string Quote(const std::string& s) { return Cat("\"", absl::CEscape(s), "\""); }

}  // namespace

// ---- GrpcSchema -------------------------------------------------------------

absl::StatusOr<std::unique_ptr<GrpcSchema>> GrpcSchema::Load(const std::string& path,
                                                             std::string_view full_method) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        Cat("cannot read descriptor set ", path, ": ", std::strerror(errno)));
  }
  pb::FileDescriptorSet set;
  if (!set.ParseFromIstream(&in)) {
    return absl::InvalidArgumentError(
        Cat(path,
            " is not a FileDescriptorSet (make it with protoc --include_imports "
            "--descriptor_set_out)"));
  }
  std::unique_ptr<GrpcSchema> schema(new GrpcSchema());
  // Files must be added dependencies first; protoc writes them in that
  // order with --include_imports, but do not rely on it.
  std::vector<const pb::FileDescriptorProto*> pending;
  for (const auto& f : set.file()) pending.push_back(&f);
  while (!pending.empty()) {
    std::vector<const pb::FileDescriptorProto*> next;
    for (const auto* f : pending) {
      bool ready = true;
      for (const auto& dep : f->dependency()) {
        if (schema->pool_.FindFileByName(dep) == nullptr) ready = false;
      }
      if (!ready) {
        next.push_back(f);
        continue;
      }
      if (schema->pool_.BuildFile(*f) == nullptr) {
        return absl::InvalidArgumentError(Cat("descriptor set ", path, ": file ", f->name(),
                                              " does not build (inconsistent definitions)"));
      }
    }
    if (next.size() == pending.size()) {
      return absl::InvalidArgumentError(
          Cat("descriptor set ", path, ": ", next.front()->name(),
              " imports a file the set does not contain (use protoc --include_imports)"));
    }
    pending = std::move(next);
  }

  schema->full_method_ = std::string(full_method);
  const size_t slash = full_method.rfind('/');
  if (full_method.empty() || full_method.front() != '/' || slash == 0 ||
      slash + 1 >= full_method.size()) {
    return absl::InvalidArgumentError(
        Cat("\"", full_method, "\" is not of the form \"/pkg.Service/Method\""));
  }
  const std::string service_name(full_method.substr(1, slash - 1));
  const std::string method_name(full_method.substr(slash + 1));
  const pb::ServiceDescriptor* service = schema->pool_.FindServiceByName(service_name);
  if (service == nullptr) {
    std::vector<std::string> services;
    for (const auto& f : set.file()) {
      for (const auto& s : f.service()) {
        services.push_back(f.package().empty() ? s.name() : Cat(f.package(), ".", s.name()));
      }
    }
    return absl::InvalidArgumentError(Cat(
        "descriptor set ", path, " has no service ", service_name,
        " (it has: ", services.empty() ? std::string("none") : absl::StrJoin(services, ", "), ")"));
  }
  schema->method_ = service->FindMethodByName(method_name);
  if (schema->method_ == nullptr) {
    std::vector<std::string> methods;
    for (int i = 0; i < service->method_count(); ++i) methods.push_back(service->method(i)->name());
    return absl::InvalidArgumentError(Cat("service ", service_name, " has no method ", method_name,
                                          " (it has: ", absl::StrJoin(methods, ", "), ")"));
  }
  if (schema->method_->client_streaming() || schema->method_->server_streaming()) {
    return absl::InvalidArgumentError(
        Cat("method ", full_method, " is streaming; probes call unary methods only"));
  }
  schema->request_proto_ = schema->factory_.GetPrototype(schema->method_->input_type());
  schema->reply_proto_ = schema->factory_.GetPrototype(schema->method_->output_type());
  return schema;
}

absl::StatusOr<std::unique_ptr<pb::Message>> GrpcSchema::ParseRequest(std::string_view text) const {
  std::unique_ptr<pb::Message> msg(request_proto_->New());
  pb::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), msg.get())) {
    return absl::InvalidArgumentError(
        Cat("not a ", method_->input_type()->full_name(), " in text format: ", errors.errors));
  }
  return msg;
}

std::unique_ptr<pb::Message> GrpcSchema::NewReply() const {
  return std::unique_ptr<pb::Message>(reply_proto_->New());
}

// ---- Expectation ------------------------------------------------------------

absl::StatusOr<Expectation> Expectation::Parse(std::string_view text, const pb::Descriptor* type) {
  Expectation e;
  e.text_ = std::string(text);
  std::string_view rest = Trim(text);
  size_t n = 0;
  while (n < rest.size() &&
         (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_' || rest[n] == '.')) {
    ++n;
  }
  if (n == 0) {
    return absl::InvalidArgumentError(
        Cat("\"", text,
            "\" does not start with a field path (want `field op literal`, e.g. "
            "`name == \"b1\"`)"));
  }
  e.path_text_ = std::string(rest.substr(0, n));
  rest = Trim(rest.substr(n));

  static constexpr std::pair<const char*, Op> kOps[] = {{"contains", Op::kContains},
                                                        {"==", Op::kEq},
                                                        {"!=", Op::kNe},
                                                        {"<=", Op::kLe},
                                                        {">=", Op::kGe},
                                                        {"<", Op::kLt},
                                                        {">", Op::kGt}};
  bool found = false;
  for (const auto& [op_text, op] : kOps) {
    const std::string_view ot(op_text);
    if (rest.substr(0, ot.size()) == ot) {
      e.op_ = op;
      rest = Trim(rest.substr(ot.size()));
      found = true;
      break;
    }
  }
  if (!found) {
    return absl::InvalidArgumentError(
        Cat("\"", text, "\": after ", e.path_text_,
            " an operator is expected (==, !=, <, <=, >, >=, contains)"));
  }
  if (rest.empty()) return absl::InvalidArgumentError(Cat("\"", text, "\": no literal"));
  e.literal_text_ = std::string(rest);

  // Resolve the path.
  const pb::Descriptor* d = type;
  const pb::FieldDescriptor* fd = nullptr;
  for (absl::string_view part : absl::StrSplit(AV(e.path_text_), '.')) {
    if (part.empty()) {
      return absl::InvalidArgumentError(Cat("\"", text, "\": empty field name in ", e.path_text_));
    }
    if (d == nullptr) {
      return absl::InvalidArgumentError(Cat("\"", text, "\": ", fd->name(), " is a ",
                                            fd->type_name(), ", it has no field ", part));
    }
    fd = d->FindFieldByName(std::string(part));
    if (fd == nullptr) {
      std::vector<std::string> names;
      for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
      return absl::InvalidArgumentError(Cat("\"", text, "\": ", d->full_name(), " has no field ",
                                            part, " (fields: ", absl::StrJoin(names, ", "), ")"));
    }
    if (fd->is_repeated()) {
      return absl::InvalidArgumentError(Cat("\"", text, "\": ", fd->full_name(),
                                            " is repeated; assertions take singular fields"));
    }
    e.path_.push_back(fd);
    d = fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE ? fd->message_type() : nullptr;
  }
  if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    return absl::InvalidArgumentError(Cat("\"", text, "\": ", e.path_text_, " is a message (",
                                          fd->message_type()->full_name(),
                                          "); name one of its fields"));
  }

  // Operator and literal against the field's type.
  const std::string& lit = e.literal_text_;
  auto bad = [&](std::string_view want) {
    return absl::InvalidArgumentError(Cat("\"", text, "\": ", e.path_text_, " is ", fd->type_name(),
                                          ", so the literal must be ", want, " (got ", lit, ")"));
  };
  auto bad_op = [&]() {
    return absl::InvalidArgumentError(Cat("\"", text, "\": operator ", OpText(e.op_),
                                          " does not apply to ", e.path_text_, " (",
                                          fd->type_name(), ")"));
  };
  const bool ordering =
      e.op_ == Op::kLt || e.op_ == Op::kLe || e.op_ == Op::kGt || e.op_ == Op::kGe;
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      if (ordering) return bad_op();
      if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') {
        return bad("a \"quoted string\"");
      }
      std::string value;
      std::string error;
      if (!absl::CUnescape(AV(std::string_view(lit).substr(1, lit.size() - 2)), &value, &error)) {
        return absl::InvalidArgumentError(Cat("\"", text, "\": bad string literal: ", error));
      }
      e.literal_ = value;
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      if (ordering || e.op_ == Op::kContains) return bad_op();
      if (lit == "true") {
        e.literal_ = true;
      } else if (lit == "false") {
        e.literal_ = false;
      } else {
        return bad("true or false");
      }
      break;
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      if (e.op_ == Op::kContains) return bad_op();
      int64_t v = 0;
      if (!absl::SimpleAtoi(AV(lit), &v)) return bad("an integer");
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT32 &&
          (v < INT32_MIN || v > INT32_MAX)) {
        return bad("a 32-bit integer");
      }
      e.literal_ = v;
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      if (e.op_ == Op::kContains) return bad_op();
      uint64_t v = 0;
      if (!absl::SimpleAtoi(AV(lit), &v)) return bad("a non-negative integer");
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT32 && v > UINT32_MAX) {
        return bad("a 32-bit unsigned integer");
      }
      e.literal_ = v;
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      if (e.op_ == Op::kContains) return bad_op();
      double v = 0;
      if (!absl::SimpleAtod(AV(lit), &v)) return bad("a number");
      e.literal_ = v;
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      if (ordering || e.op_ == Op::kContains) return bad_op();
      const pb::EnumValueDescriptor* ev = fd->enum_type()->FindValueByName(lit);
      int64_t number = 0;
      if (ev != nullptr) {
        number = ev->number();
      } else if (!absl::SimpleAtoi(AV(lit), &number)) {
        std::vector<std::string> names;
        for (int i = 0; i < fd->enum_type()->value_count(); ++i) {
          names.push_back(fd->enum_type()->value(i)->name());
        }
        return bad(Cat("a value of ", fd->enum_type()->full_name(), " (",
                       absl::StrJoin(names, ", "), ")"));
      }
      e.literal_ = number;
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;  // refused above
  }
  return e;
}

std::string Expectation::Check(const pb::Message& reply) const {
  const pb::Message* m = &reply;
  for (size_t i = 0; i + 1 < path_.size(); ++i) {
    m = &m->GetReflection()->GetMessage(*m, path_[i]);
  }
  const pb::FieldDescriptor* fd = path_.back();
  const pb::Reflection* r = m->GetReflection();
  std::string have;
  bool holds = false;
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      const std::string v = r->GetString(*m, fd);
      const std::string& want = std::get<std::string>(literal_);
      holds = op_ == Op::kContains ? v.find(want) != std::string::npos : Compare(op_, v, want);
      have = Quote(v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      const bool v = r->GetBool(*m, fd);
      holds = Compare(op_, v, std::get<bool>(literal_));
      have = v ? "true" : "false";
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      const int64_t v = fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT32 ? r->GetInt32(*m, fd)
                                                                             : r->GetInt64(*m, fd);
      holds = Compare(op_, v, std::get<int64_t>(literal_));
      have = Cat(v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t v = fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT32
                             ? r->GetUInt32(*m, fd)
                             : r->GetUInt64(*m, fd);
      holds = Compare(op_, v, std::get<uint64_t>(literal_));
      have = Cat(v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT ? r->GetFloat(*m, fd)
                                                                            : r->GetDouble(*m, fd);
      holds = Compare(op_, v, std::get<double>(literal_));
      have = Cat(v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const int v = r->GetEnumValue(*m, fd);
      holds = Compare(op_, static_cast<int64_t>(v), std::get<int64_t>(literal_));
      const pb::EnumValueDescriptor* ev = fd->enum_type()->FindValueByNumber(v);
      have = ev != nullptr ? ev->name() : Cat(v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  if (holds) return "";
  return Cat(path_text_, " is ", have, " (want ", OpText(op_), " ", literal_text_, ")");
}

}  // namespace ballast::probes
