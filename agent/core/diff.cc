#include "agent/core/diff.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <map>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/base/json.h"
#include "agent/core/names.h"
#include "absl/strings/string_view.h"

namespace ballast::core {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string ScalarText(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int v = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      const auto* ev = f->enum_type()->FindValueByNumber(v);
      return ev != nullptr ? ev->name() : absl::StrCat(v);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return base::JsonQuote(rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f));
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "?";
}

std::string FieldText(const Message& m, const FieldDescriptor* f) {
  if (!f->is_repeated()) return ScalarText(m, f, 0);
  std::vector<std::string> items;
  const int n = m.GetReflection()->FieldSize(m, f);
  for (int i = 0; i < n; ++i) items.push_back(ScalarText(m, f, i));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

// Appends "<prefix><path> <old> -> <new>" for every differing leaf field of
// two messages of the same type, in field-number order. Fields named in
// `skip` (top level only) are left out.
void DiffFields(const Message& a, const Message& b, const std::string& path_prefix,
                const std::string& line_prefix, const std::set<absl::string_view>& skip,
                std::vector<std::string>* out) {
  const auto* d = a.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (skip.count(f->name()) != 0) continue;
    const std::string path = absl::StrCat(path_prefix, f->name());
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_repeated()) {
      // A message's presence is a setting of its own (`health {}` turns
      // health checking on with every default), so it is a difference even
      // when the fields inside do not differ.
      const bool ha = a.GetReflection()->HasField(a, f);
      const bool hb = b.GetReflection()->HasField(b, f);
      if (ha != hb) {
        out->push_back(absl::StrCat(line_prefix, path, " ", ha ? "set" : "unset", " -> ",
                                    hb ? "set" : "unset"));
      }
      DiffFields(a.GetReflection()->GetMessage(a, f), b.GetReflection()->GetMessage(b, f),
                 absl::StrCat(path, "."), line_prefix, {}, out);
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) continue;  // repeated messages: callers
    const std::string va = FieldText(a, f);
    const std::string vb = FieldText(b, f);
    if (va != vb) out->push_back(absl::StrCat(line_prefix, path, " ", va, " -> ", vb));
  }
}

}  // namespace

std::vector<std::string> DiffConfig(const v1::Config& from, const v1::Config& to) {
  std::vector<std::string> out;
  DiffFields(from.global(), to.global(), "global.", "~ ", {}, &out);

  std::map<std::string, const v1::Vip*> a;
  std::map<std::string, const v1::Vip*> b;
  for (const v1::Vip& v : from.vips()) a.emplace(VipKeyText(v.key()), &v);
  for (const v1::Vip& v : to.vips()) b.emplace(VipKeyText(v.key()), &v);
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);

  for (const std::string& key : keys) {
    const auto ia = a.find(key);
    const auto ib = b.find(key);
    const v1::Vip* va = ia == a.end() ? nullptr : ia->second;
    const v1::Vip* vb = ib == b.end() ? nullptr : ib->second;
    std::map<std::string, const v1::Backend*> ba;
    std::map<std::string, const v1::Backend*> bb;
    if (va != nullptr) {
      for (const v1::Backend& x : va->backends()) ba.emplace(CanonicalAddress(x.address()), &x);
    }
    if (vb != nullptr) {
      for (const v1::Backend& x : vb->backends()) bb.emplace(CanonicalAddress(x.address()), &x);
    }
    if (va == nullptr) {
      out.push_back(absl::StrCat("+ vip ", key));
      const v1::Vip empty;
      DiffFields(empty, *vb, "", absl::StrCat("~ vip ", key, " "), {"key", "backends"}, &out);
    } else if (vb == nullptr) {
      out.push_back(absl::StrCat("- vip ", key));
    } else {
      DiffFields(*va, *vb, "", absl::StrCat("~ vip ", key, " "), {"key", "backends"}, &out);
    }
    std::set<std::string> addrs;
    for (const auto& [k, v] : ba) addrs.insert(k);
    for (const auto& [k, v] : bb) addrs.insert(k);
    for (const std::string& addr : addrs) {
      const auto xa = ba.find(addr);
      const auto xb = bb.find(addr);
      const std::string who = absl::StrCat("backend ", key, " ", addr);
      if (xa == ba.end()) {
        out.push_back(absl::StrCat("+ ", who, " weight ", xb->second->weight()));
        const v1::Backend empty;
        DiffFields(empty, *xb->second, "", absl::StrCat("~ ", who, " "), {"address", "weight"},
                   &out);
      } else if (xb == bb.end()) {
        out.push_back(absl::StrCat("- ", who));
      } else {
        DiffFields(*xa->second, *xb->second, "", absl::StrCat("~ ", who, " "), {"address"}, &out);
      }
    }
  }
  return out;
}

}  // namespace ballast::core
