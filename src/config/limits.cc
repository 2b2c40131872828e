// A profile's limits: the built-in defaults and the one parse of their strings.
#include "config/limits.h"

#include "util/parse.h"

namespace brig::config {
namespace {

Error Field(const std::string& file, const std::string& field, const std::string& why) {
  return Fail(file, field, why, ErrorKind::kBadInput);
}

// The built-in limits: what a profile says where it says nothing. Why these values:
// limits.user_counts in brig-profile(5).
v1::Limits Defaults() {
  v1::Limits l;
  l.set_timeout("30m");
  l.set_grace("10s");
  l.set_tmp_size("1G");
  l.set_rlimit_nofile(4096);
  l.set_rlimit_nproc(4096);
  l.set_rlimit_core(0);
  v1::UserCounts* u = l.mutable_user_counts();
  u->set_inotify_instances(32);
  u->set_inotify_watches(4096);
  u->set_fanotify_groups(8);
  u->set_fanotify_marks(4096);
  u->set_namespaces(64);
  u->set_msgqueue_bytes(65536);
  u->set_pending_signals(1024);
  return l;
}

// Parses `text` of `field` with `parse`, unless it is empty.
template <typename T, typename Parse>
Result<std::optional<T>> Optional(const std::string& text, const std::string& file,
                                  const char* field, Parse parse) {
  if (text.empty()) return std::optional<T>();
  auto v = parse(text);
  if (!v) return Field(file, field, v.error().detail);
  return std::optional<T>(*v);
}

// memory, swap (0 unless set: none beyond memory), cpus and pids, and which of them the
// run may go without.
Result<cgroup::Limits> ParseCgroup(const v1::Limits& l, const std::string& file) {
  cgroup::Limits c;
  c.memory = BRIG_TRY(Optional<uint64_t>(l.memory(), file, "limits.memory", util::ParseMemory));
  auto swap = BRIG_TRY(Optional<uint64_t>(l.swap(), file, "limits.swap", util::ParseSizeLimit));
  if (!l.swap().empty() && l.swap() != "0" && l.memory().empty()) {
    return Field(file, "limits.swap", "needs limits.memory: swap is allowed beyond memory");
  }
  c.swap = swap.value_or(0);
  c.cpu_milli = BRIG_TRY(Optional<uint64_t>(l.cpus(), file, "limits.cpus", util::ParseCpus));
  if (l.has_pids() && (l.pids() == 0 || l.pids() > kMaxPids)) {
    return Field(file, "limits.pids", "must be from 1 to 4194304");
  }
  if (l.has_pids()) c.pids = l.pids();
  return c;
}

Status MarkOptional(const v1::Limits& l, const std::string& file, cgroup::Limits& c) {
  for (int k : l.optional_limits()) {
    if (k == v1::LIMIT_UNSPECIFIED) {
      return Field(file, "limits.optional_limits", "LIMIT_UNSPECIFIED is not a limit");
    }
    c.memory_optional |= k == v1::LIMIT_MEMORY;
    c.pids_optional |= k == v1::LIMIT_PIDS;
    c.cpu_optional |= k == v1::LIMIT_CPUS;
  }
  return {};
}

// The kernel keeps these as ints; 0 would stop brig init making its own cgroup namespace.
Result<uint64_t> Count(const std::string& file, const char* name, uint64_t v) {
  if (v == 0 || v > 2147483647) {
    return Field(file, std::string("limits.user_counts.") + name, "must be from 1 to 2147483647");
  }
  return v;
}

Status ParseCounts(const v1::Limits& l, const std::string& file, Limits& out) {
  const v1::UserCounts& u = l.user_counts();
  security::UserCounts& c = out.user_counts;
  c.inotify_instances = BRIG_TRY(Count(file, "inotify_instances", u.inotify_instances()));
  c.inotify_watches = BRIG_TRY(Count(file, "inotify_watches", u.inotify_watches()));
  c.fanotify_groups = BRIG_TRY(Count(file, "fanotify_groups", u.fanotify_groups()));
  c.fanotify_marks = BRIG_TRY(Count(file, "fanotify_marks", u.fanotify_marks()));
  c.namespaces = BRIG_TRY(Count(file, "namespaces", u.namespaces()));
  // Per-user rlimits the kernel also charges to host root (security/ucounts.h).
  out.rlimits.msgqueue = BRIG_TRY(Count(file, "msgqueue_bytes", u.msgqueue_bytes()));
  out.rlimits.sigpending = BRIG_TRY(Count(file, "pending_signals", u.pending_signals()));
  return {};
}

}  // namespace

v1::Limits WithDefaults(const v1::Limits& given, bool isolated) {
  v1::Limits l = Defaults();
  if (!isolated) l.clear_tmp_size();
  // Merging fills what `given` leaves unset: an empty string, an absent optional number or
  // message field, leaves the default's.
  l.MergeFrom(given);
  // Swap is 0 unless set (ParseCgroup), and means something only beside a memory limit:
  // said so, an unset swap and "0" read, show and diff as the one thing they are.
  if (!l.memory().empty() && l.swap().empty()) l.set_swap("0");
  if (l.memory().empty() && l.swap() == "0") l.clear_swap();
  return l;
}

Result<Limits> ParseLimits(const v1::Limits& given, const std::string& file) {
  const v1::Limits l = WithDefaults(given, true);
  Limits out;
  auto timeout = util::ParseDuration(l.timeout());
  if (!timeout) return Field(file, "limits.timeout", timeout.error().detail);
  out.timeout = *timeout;
  auto grace = util::ParseDuration(l.grace());
  if (!grace) return Field(file, "limits.grace", grace.error().detail);
  out.grace = *grace;
  auto tmp = util::ParseSize(l.tmp_size());
  if (!tmp) return Field(file, "limits.tmp_size", tmp.error().detail);
  out.tmp_size = *tmp;
  out.output_limit =
      BRIG_TRY(Optional<uint64_t>(l.output_limit(), file, "limits.output_limit", util::ParseSize));
  out.egress_bytes =
      BRIG_TRY(Optional<uint64_t>(l.egress_bytes(), file, "limits.egress_bytes", util::ParseSize));
  out.cgroup = BRIG_TRY(ParseCgroup(l, file));
  out.disk = BRIG_TRY(Optional<uint64_t>(l.disk(), file, "limits.disk", util::ParseDiskSize));
  BRIG_TRY(ParseCounts(l, file, out));
  BRIG_TRY(MarkOptional(l, file, out.cgroup));
  out.rlimits.nofile = l.rlimit_nofile();
  out.rlimits.nproc = l.rlimit_nproc();
  out.rlimits.core = l.rlimit_core();
  return out;
}

}  // namespace brig::config
