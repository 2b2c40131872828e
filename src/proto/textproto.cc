// Text-format parsing with the first error as an Error (positions are 1-based).
#include "proto/textproto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>

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

}  // namespace

Status ParseTextProto(const std::string& text, const std::string& name,
                      google::protobuf::Message* msg,
                      google::protobuf::TextFormat::ParseInfoTree* locations) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(name);
  parser.RecordErrorsTo(&errors);
  if (locations) parser.WriteLocationsTo(locations);
  if (!parser.ParseFromString(text, msg)) return errors.ToError();
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
