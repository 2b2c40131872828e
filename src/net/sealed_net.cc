#include "net/sealed_net.h"

#include "net/inside_rules.h"
#include "net/netns.h"

namespace brig::net {

std::unique_ptr<SealedNet> SealedNet::Prepare(const Subnet& subnet) {
  std::unique_ptr<SealedNet> n(new SealedNet());
  n->address_ = AddressIn(subnet);
  return n;
}

SandboxAddress SealedNet::AddressIn(const Subnet& subnet) {
  return {Ipv4{subnet.Gateway().v + 1}, subnet};
}

std::string SealedNet::Table() { return InsideRules(kSealedPorts, {}, 0); }

Status SealedNet::Attach(int netns) {
  return InNetns(netns, "the sandbox's network namespace", [this]() -> Status {
    BRIG_TRY_CTX(CreateSandboxVeth("brig", 0, -1, MacFor(address_.addr)), "network");
    std::optional<Listeners> l = BRIG_TRY_CTX(SetUpInside(kSealedPorts, {}, 0), "network");
    listeners_ = std::move(*l);
    return {};
  });
}

}  // namespace brig::net
