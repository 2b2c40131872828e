// Text-format parsing with the first error as an Error (positions are 1-based).
#include "proto/textproto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <vector>

#include "util/parse.h"

namespace brig::proto {
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstError(std::string name) : name_(std::move(name)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (seen_) return;
    seen_ = true;
    where_ = name_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
    message_ = message;
  }
  Error ToError() const {
    if (!seen_) return BadInput(name_, "", "malformed");
    return Fail(where_, "", message_, ErrorKind::kBadInput);
  }

 private:
  std::string name_, where_, message_;
  bool seen_ = false;
};

// The text format takes any bytes in a string ("\\313" as well as raw ones), but what brig
// reads from a policy ends up in JSON and on terminals: a string field that is not UTF-8
// is refused, named by its path. Returns the path of the first such field, or "".
std::string FirstNotUtf8(const google::protobuf::Message& msg) {
  const auto* refl = msg.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  refl->ListFields(msg, &fields);
  for (const auto* f : fields) {
    int count = f->is_repeated() ? refl->FieldSize(msg, f) : 1;
    for (int k = 0; k < count; ++k) {
      std::string at = f->name() + (f->is_repeated() ? "[" + std::to_string(k) + "]" : "");
      if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
        std::string v = f->is_repeated() ? refl->GetRepeatedString(msg, f, k)
                                         : refl->GetString(msg, f);
        if (!util::IsUtf8(v)) return at;
      } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
        const auto& sub = f->is_repeated() ? refl->GetRepeatedMessage(msg, f, k)
                                           : refl->GetMessage(msg, f);
        if (std::string inner = FirstNotUtf8(sub); !inner.empty()) return at + "." + inner;
      }
    }
  }
  return "";
}

}  // namespace

Status ParseTextProto(const std::string& text, const std::string& name,
                      google::protobuf::Message* msg,
                      google::protobuf::TextFormat::ParseInfoTree* locations) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(name);
  parser.RecordErrorsTo(&errors);
  if (locations) parser.WriteLocationsTo(locations);
  if (!parser.ParseFromString(text, msg)) return errors.ToError();
  if (std::string at = FirstNotUtf8(*msg); !at.empty()) {
    return BadInput(name, "", "field '" + at + "' is not UTF-8 text");
  }
  return {};
}

std::string FieldLocation(const google::protobuf::Descriptor* type,
                          const google::protobuf::TextFormat::ParseInfoTree* locations,
                          const std::string& name, const std::string& path, int index) {
  const google::protobuf::TextFormat::ParseInfoTree* tree = locations;
  size_t start = 0;
  while (tree && type) {
    size_t dot = path.find('.', start);
    const auto* field = type->FindFieldByName(path.substr(start, dot - start));
    if (!field) break;
    int at = field->is_repeated() ? std::max(index, 0) : -1;
    if (dot == std::string::npos) {
      auto loc = tree->GetLocation(field, at);
      if (loc.line < 0) break;
      return name + ":" + std::to_string(loc.line + 1) + ":" + std::to_string(loc.column + 1);
    }
    tree = tree->GetTreeForNested(field, field->is_repeated() ? 0 : -1);
    type = field->message_type();
    start = dot + 1;
  }
  return name;
}

}  // namespace brig::proto
