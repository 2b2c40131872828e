// Protobuf text format with errors a person can act on: "file:line:column: message".
#pragma once

#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <string>

#include "brig/result.h"

namespace brig::proto {

// Parses `text` into `msg`. Unknown fields and malformed text are errors (kBadInput)
// naming `name`:line:column of the first problem.
// With `locations`, the place of each field parsed is recorded there, so that a later
// check can name file:line:column of the field it refuses (FieldLocation).
Status ParseTextProto(const std::string& text, const std::string& name,
                      google::protobuf::Message* msg,
                      google::protobuf::TextFormat::ParseInfoTree* locations = nullptr);

// "name:line:column" of the field at `path` ("filesystem.protected_paths", dots between
// nested fields) of `msg`'s type, element `index` of a repeated one (-1: the first), or
// `name` alone if `locations` does not have it.
std::string FieldLocation(const google::protobuf::Descriptor* type,
                          const google::protobuf::TextFormat::ParseInfoTree* locations,
                          const std::string& name, const std::string& path, int index);

}  // namespace brig::proto
