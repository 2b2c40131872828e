// A sandbox's brokers at work (design.md, Broker; issue 8): the supervisor accepts on each
// broker's listeners (broker/listen.h) and forwards to the broker's target on the host.
// An http broker frames each request (http/framing.h), drops client-sent copies of the
// headers it sets, sets them with values read on the host and the attribution
// "<sandbox id>/<attempt>", sends its target only origin-form, and passes bodies and
// responses on as they come (keep-alive, chunked, server-sent events), originating TLS
// itself for an https target. A tcp broker splices bytes. A malformed or ambiguous request
// or one for another authority gets an immediate 400, TRACE and TRACK a 405, a method or
// path the broker's binding does not allow, or a path a target could read as another host
// whatever the binding (http::AnotherHost), a 403, Upgrade a 501, each then a close; a
// target that cannot be reached, a 502. An http broker dials its target only once the
// connection's first request is read and allowed, so a refused request reaches the target
// in no form, not even as a connection.
//
// Every failed request (tcp: connection) is counted per broker with its reason
// (BrokerTraffic.failures): the target unreachable or gone, TLS to it failed, it answered
// 5xx, brig refused the request, or the egress budget was spent.
//
// Everything runs in the supervisor's single-threaded event loop, behind one epoll fd:
// no thread, no process. Close() ends every connection, both sides, at once. Every request
// (tcp: every connection) is one audit event: never a body, a query or a header value.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "brig/result.h"
#include "broker/listen.h"
#include "broker/spec.h"
#include "egress/budget.h"
#include "proto/brig.pb.h"

namespace brig::broker {

using AuditSink = std::function<void(v1::AuditEvent)>;

class Service {
 public:
  // `brokers` as resolved (header values read); `listeners` as ListenUnix and ListenTcp
  // made them; `attribution` is "<sandbox id>/<attempt>". `budget` (null: none) outlives
  // the service and is charged for what goes to the targets (plaintext, before brig's own
  // TLS), shared with the proxy (egress/budget.h).
  static Result<std::unique_ptr<Service>> Start(std::vector<Config> brokers, Listeners listeners,
                                                std::string attribution, AuditSink audit,
                                                egress::Budget* budget);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Readable when something needs attention; then call Handle().
  int fd() const;
  void Handle();
  // Closes every connection (each gets its audit event) and the listeners.
  void Close();
  std::vector<v1::BrokerTraffic> Summary() const;

  class Impl;

 private:
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brig::broker
