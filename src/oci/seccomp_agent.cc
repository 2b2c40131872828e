// Handing listeners to a container's seccomp agent (seccomp_agent.h).
#include "oci/seccomp_agent.h"

#include <google/protobuf/util/json_util.h>

#include "oci/spec.h"
#include "sys/syscalls.h"

namespace brig::oci {

Status SendToAgent(const brig::v1::SeccompPolicy& seccomp, const State& state, pid_t pid,
                   int listener) {
  ContainerProcessState message;
  message.set_oci_version(std::string(kSpecVersion));
  message.add_fds("seccompFd");
  message.set_pid(pid);
  message.set_metadata(seccomp.listener_metadata());
  *message.mutable_state() = state;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json).ok()) {
    return Fail("seccomp agent", "", "the process's state is no JSON", ErrorKind::kInternal);
  }
  const std::string& path = seccomp.listener_path();
  auto agent = sys::ConnectUnix(path, "linux.seccomp.listenerPath");
  if (!agent) return std::move(agent).error().Wrap("failed to connect with seccomp agent");
  struct iovec iov = {json.data(), json.size()};
  BRIG_TRY_CTX(sys::SendWithFd(agent->get(), &iov, 1, listener, path), "seccomp agent");
  return {};
}

void HandListenersToAgent(container::Channel& sync, const Container& rec, ContainerStatus status,
                          pid_t pid) {
  sync.OnListener([&rec, status, pid](sys::UniqueFd listener) -> Status {
    pid_t of = pid ? pid : rec.pid();
    return SendToAgent(rec.config().linux().seccomp(), StateOf(rec, status), of, listener.get());
  });
}

}  // namespace brig::oci
