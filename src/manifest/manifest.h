// The enforcement manifest (brig-run(1), --dry-run and --manifest): what one run may do,
// built from the values brig enforces rather than described beside them. The mount steps
// are the plan init executes (fs::MountPlan), the nftables elements are net::PortElements,
// which brig installs, rendered; the seccomp digests are of the text brig compiled and the
// program it loads. One section a function in manifest.cc: a new field of the plan is one
// line in its section.
//
// The digest (SandboxStart.manifest_sha256) is the sha256 of the JSON text brig prints,
// final newline included: exactly the bytes of the --manifest file.
#pragma once

#include <string>

#include "brig/result.h"
#include "broker/spec.h"
#include "config/sandbox.h"
#include "fs/mount_plan.h"
#include "net/nft.h"
#include "proto/brig.pb.h"
#include "security/seccomp.h"

namespace brig::manifest {

// What the manifest is made of. A real run passes what it made (the sandbox's rules once
// its address is leased); a dry run has no address, and says so.
struct Inputs {
  const config::Sandbox& sb;
  const fs::MountPlan& plan;
  const security::SeccompProgram* seccomp = nullptr;  // null without isolation
  const net::PortRules* rules = nullptr;  // null: no interface, or not allocated (dry run)
};

v1::Manifest Build(const Inputs& in);

// The manifest (or an OCI container's plan, oci/dry_run.h) as brig prints it: JSON, proto
// field names, 64-bit integers as numbers (util/proto_json.h), one line and a newline.
std::string Json(const google::protobuf::Message& m);

// One broker as the manifest and the audit's sandbox_start show it: never a header's value
// or where that value is read.
v1::ManifestBroker Broker(const broker::Config& b);

// One step of a mount plan, native or an OCI container's (oci/dry_run.h), as the manifest
// lists it.
v1::ManifestMount Mount(const fs::Step& s);

// A CPU count as the profile writes it: "0.5", "2".
std::string CpuCount(uint64_t milli);

}  // namespace brig::manifest
