// brig's JSON output (util/proto_json.h): protobuf's mapping with 64-bit integers as
// numbers (issue 32, item 7), read back by protobuf's own parser and by Python's as the
// same values.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>

#include "proto/brig.pb.h"
#include "testlib/testlib.h"
#include "util/proto_json.h"

namespace brig::util {
namespace {

TEST(ProtoJson, SixtyFourBitCountsAreNumbers) {
  v1::AuditEvent e;
  *e.mutable_time() = google::protobuf::util::TimeUtil::SecondsToTimestamp(1764806400);
  e.set_sandbox_id("brig-0123456789ab");
  v1::SandboxStart* s = e.mutable_sandbox_start();
  s->set_pids(4096);
  s->set_memory_bytes(4ull << 30);
  s->set_swap_bytes(UINT64_MAX);
  s->add_argv("sh");
  s->add_argv("a \"quoted\" <arg>\n\x01");
  std::string json = ProtoJson(e);
  EXPECT_NE(json.find("\"pids\":4096,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"memory_bytes\":4294967296,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"swap_bytes\":18446744073709551615,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"time\":\"2025-12-04T00:00:00Z\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"a \\\"quoted\\\" \\u003carg\\u003e\\n\\u0001\""), std::string::npos)
      << json;
  // Protobuf's parser reads it back as the same message.
  v1::AuditEvent back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok()) << json;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(e, back))
      << e.ShortDebugString() << "\n" << back.ShortDebugString();
  // And Python's, the pids as an int.
  testing::ScratchDir dir;
  std::string file = dir.Write("e.json", json);
  auto py = testing::RunCommand(
      {"python3", "-c",
       "import json,sys; s=json.load(open(sys.argv[1]))['sandbox_start']; "
       "print(type(s['pids']).__name__, s['pids'], s['swap_bytes'])",
       file});
  EXPECT_EQ(py.out, "int 4096 18446744073709551615\n") << py.err;
}

// Every field without presence is printed, zero or empty; a field with presence (a
// message, an optional, a oneof member) only when set; enums by name, maps as objects.
TEST(ProtoJson, PrintsWhatProtobufsMappingPrints) {
  v1::RunResult r;
  std::string json = ProtoJson(r);
  EXPECT_EQ(json.rfind("{\"ok\":false,\"exit_code\":0,\"signal\":0,\"error_code\":\"\"", 0), 0u)
      << json;
  EXPECT_EQ(json.find("\"network\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"denial_stop\""), std::string::npos) << json;
  v1::PodSupervisor p;
  (*p.mutable_annotations())["brig/profile"] = "untrusted-code-read";
  p.mutable_profile()->mutable_network()->set_posture(v1::POSTURE_ALLOWLIST);
  std::string pod = ProtoJson(p);
  EXPECT_NE(pod.find("\"annotations\":{\"brig/profile\":\"untrusted-code-read\"}"),
            std::string::npos)
      << pod;
  EXPECT_NE(pod.find("\"posture\":\"POSTURE_ALLOWLIST\""), std::string::npos) << pod;
  v1::PodSupervisor back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(pod, &back).ok()) << pod;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(p, back));
}

}  // namespace
}  // namespace brig::util
