// The OCI runtime verbs' front end inside cli (brig-oci(1)): what their flags fill in, a
// flag's shape, and each verb's action, for the table of verbs that lists them with the
// flags each takes (cli/verbs.cc).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "brig/result.h"
#include "cli/cli.h"
#include "oci/exec.h"
#include "oci/launch.h"
#include "proto/oci.pb.h"

namespace brig::cli {

// What an OCI verb's flags say, and the arguments after them.
struct OciRequest {
  std::string root;
  std::vector<std::string> positional;
  oci::CreateOptions create;
  bool detach = false, all = false, force = false, stats = false, rootless = false;
  bool json = false, help = false, keep = false, quiet = false;
  bool dry_run = false;  // create, run: print the plan (oci/dry_run.h) instead
  std::string resources_file;
  oci::Resources update;
  bool update_set = false;
  std::chrono::milliseconds interval{5000};
  oci::ExecOptions exec;
};

// One option of the OCI verbs, in runc's spelling; `metavar` is nullptr when it takes no
// value.
struct OciFlag {
  const char* name;
  const char* metavar;
  const char* help;
  Status (*apply)(OciRequest&, const std::string&);
};

// Refuses --systemd-cgroup where systemd is not init, parses the flags `verb` takes (and --help),
// prints its usage or runs its action under the global --root (default oci::DefaultRoot()). Errors
// are printed once, on stderr and in the --log file (containerd reads the last JSON line's msg).
int OciMain(const Verb& verb, const GlobalFlags& global, const std::vector<std::string>& args);

// Each OCI verb's action on its parsed request: the exit code, or the error to print.
Result<int> OciCreate(OciRequest& r);
Result<int> OciStart(OciRequest& r);
Result<int> OciState(OciRequest& r);
Result<int> OciKill(OciRequest& r);
Result<int> OciDelete(OciRequest& r);
Result<int> OciRun(OciRequest& r);
Result<int> OciExec(OciRequest& r);
Result<int> OciPs(OciRequest& r);
Result<int> OciPause(OciRequest& r);
Result<int> OciResume(OciRequest& r);
Result<int> OciUpdate(OciRequest& r);
Result<int> OciEvents(OciRequest& r);
Result<int> OciSpec(OciRequest& r);
Result<int> OciFeatures(OciRequest& r);
Result<int> OciList(OciRequest& r);

}  // namespace brig::cli
