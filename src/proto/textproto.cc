// Text-format parsing with the first error as an Error (positions are 1-based).
#include "proto/textproto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

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
                      google::protobuf::Message* msg) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(name);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, msg)) return errors.ToError();
  return {};
}

}  // namespace brig::proto
