// brig's machine-readable output (the result, the audit log, the manifest, brig list's JSON):
// protobuf's JSON mapping with the proto field names, every field without presence printed
// (zero, empty) and each field with presence only when set, except that 64-bit integers
// are JSON numbers, as every other integer is, not the mapping's strings of digits (issue
// 32: a harness reads "pids":4096, not "pids":"4096"). A number past 2^53 is exact in the
// text; JavaScript and jq read it approximately. Written by reflection, so a field added to
// brig.proto is printed without a change here.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace brig::util {

// `m` as one line of JSON, without a newline.
std::string ProtoJson(const google::protobuf::Message& m);

}  // namespace brig::util
