// Protobuf text format with errors a person can act on: "file:line:column: message".
#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "brig/result.h"

namespace brig::proto {

// Parses `text` into `msg`. Unknown fields and malformed text are errors (kBadInput)
// naming `name`:line:column of the first problem.
Status ParseTextProto(const std::string& text, const std::string& name,
                      google::protobuf::Message* msg);

}  // namespace brig::proto
