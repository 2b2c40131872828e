// config::DiffProfiles: a walk over both profiles' fields through protobuf reflection, so
// that a field added to brig.proto is compared without a change here.
#include "config/profile_diff.h"

#include <google/protobuf/text_format.h>

#include <algorithm>

namespace brig::config {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A field's value (element `index` of a repeated one, -1: a single one) as text format
// writes it: strings quoted, enums by name, messages on one line.
std::string ValueText(const Message& m, const FieldDescriptor* f, int index) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string out;
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    const Reflection* r = m.GetReflection();
    const Message& sub = index < 0 ? r->GetMessage(m, f) : r->GetRepeatedMessage(m, f, index);
    printer.PrintToString(sub, &out);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return "{ " + out + " }";
  }
  printer.PrintFieldValueToString(m, f, index, &out);
  return out;
}

std::vector<std::string> Elements(const Message& m, const FieldDescriptor* f) {
  std::vector<std::string> out;
  for (int i = 0; i < m.GetReflection()->FieldSize(m, f); ++i) out.push_back(ValueText(m, f, i));
  return out;
}

// Each element of `from` that `other` lacks, as "only in SIDE".
void OnlyIn(const std::string& path, const std::vector<std::string>& from,
            const std::vector<std::string>& other, const char* side,
            std::vector<std::string>& out) {
  for (const std::string& v : from) {
    if (std::find(other.begin(), other.end(), v) == other.end()) {
      out.push_back("- " + path + ": " + v + " only in " + side);
    }
  }
}

void DiffMessages(const Message& a, const Message& b, const std::string& prefix,
                  std::vector<std::string>& out) {
  const auto* type = a.GetDescriptor();
  const Reflection* r = a.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    std::string path = prefix + f->name();
    if (path == "description") continue;
    if (f->is_repeated()) {
      std::vector<std::string> va = Elements(a, f), vb = Elements(b, f);
      OnlyIn(path, va, vb, "A", out);
      OnlyIn(path, vb, va, "B", out);
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      DiffMessages(r->GetMessage(a, f), r->GetMessage(b, f), path + ".", out);
      continue;
    }
    // A field without presence is "set" when it is not its zero value: "" reads (unset).
    bool ha = r->HasField(a, f), hb = r->HasField(b, f);
    std::string ta = ha ? ValueText(a, f, -1) : "(unset)";
    std::string tb = hb ? ValueText(b, f, -1) : "(unset)";
    if (ta != tb) out.push_back("- " + path + ": " + ta + " (A)  vs  " + tb + " (B)");
  }
}

}  // namespace

std::vector<std::string> DiffProfiles(const v1::Profile& a, const v1::Profile& b) {
  std::vector<std::string> out;
  DiffMessages(a, b, "", out);
  return out;
}

}  // namespace brig::config
