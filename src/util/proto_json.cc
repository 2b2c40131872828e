#include "util/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/time_util.h>

#include <cmath>
#include <cstdio>

namespace brig::util {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A JSON string: quotes, backslashes and control characters escaped, and '<' and '>' as
// protobuf's mapping escapes them; every other byte as it is (strings are UTF-8).
void String(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f || c == '<' || c == '>') {
          char esc[8];
          snprintf(esc, sizeof esc, "\\u%04x", c);
          out += esc;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void Base64(const std::string& s, std::string& out) {
  static const char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out += '"';
  for (size_t i = 0; i < s.size(); i += 3) {
    uint32_t n = static_cast<unsigned char>(s[i]) << 16;
    if (i + 1 < s.size()) n |= static_cast<unsigned char>(s[i + 1]) << 8;
    if (i + 2 < s.size()) n |= static_cast<unsigned char>(s[i + 2]);
    out += kDigits[n >> 18 & 63];
    out += kDigits[n >> 12 & 63];
    out += i + 1 < s.size() ? kDigits[n >> 6 & 63] : '=';
    out += i + 2 < s.size() ? kDigits[n & 63] : '=';
  }
  out += '"';
}

void Double(double d, std::string& out) {
  if (std::isnan(d)) {
    out += "\"NaN\"";
  } else if (std::isinf(d)) {
    out += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "%.17g", d);
    out += buf;
  }
}

void Object(const Message& m, std::string& out);

// One value of `f` (element `i` of a repeated field; -1: the single one).
void Value(const Message& m, const FieldDescriptor* f, int i, std::string& out) {
  const Reflection* r = m.GetReflection();
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      out += std::to_string(rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      out += std::to_string(rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      out += std::to_string(rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      out += std::to_string(rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      Double(rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f), out);
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      Double(rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f), out);
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out += (rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f)) ? "true" : "false";
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      int n = rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
      const auto* v = f->enum_type()->FindValueByNumber(n);
      if (v) {
        String(v->name(), out);
      } else {
        out += std::to_string(n);
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        Base64(s, out);
      } else {
        String(s, out);
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      Object(rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f), out);
      break;
  }
}

// A map field: an object keyed by each entry's key, as text.
void Map(const Message& m, const FieldDescriptor* f, std::string& out) {
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* key = f->message_type()->map_key();
  const FieldDescriptor* value = f->message_type()->map_value();
  out += '{';
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    const Message& entry = r->GetRepeatedMessage(m, f, i);
    if (i) out += ',';
    std::string k;
    Value(entry, key, -1, k);
    if (k.empty() || k[0] != '"') k = "\"" + k + "\"";
    out += k + ':';
    Value(entry, value, -1, out);
  }
  out += '}';
}

void Object(const Message& m, std::string& out) {
  if (m.GetDescriptor()->full_name() == "google.protobuf.Timestamp") {
    String(google::protobuf::util::TimeUtil::ToString(
               static_cast<const google::protobuf::Timestamp&>(m)),
           out);
    return;
  }
  const Reflection* r = m.GetReflection();
  const auto* type = m.GetDescriptor();
  out += '{';
  bool first = true;
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    // A field with presence (a message, an optional, a oneof member) only when set.
    if (!f->is_repeated() && f->has_presence() && !r->HasField(m, f)) continue;
    if (!first) out += ',';
    first = false;
    String(f->name(), out);
    out += ':';
    if (f->is_map()) {
      Map(m, f, out);
    } else if (f->is_repeated()) {
      out += '[';
      for (int j = 0; j < r->FieldSize(m, f); ++j) {
        if (j) out += ',';
        Value(m, f, j, out);
      }
      out += ']';
    } else {
      Value(m, f, -1, out);
    }
  }
  out += '}';
}

}  // namespace

std::string ProtoJson(const google::protobuf::Message& m) {
  std::string out;
  Object(m, out);
  return out;
}

}  // namespace brig::util
