// An id map is given to mount_setattr as a user namespace: brig makes one for each map, in
// a child that does nothing but hold it, writes its maps as root, and ends the child.
#include "fs/idmap.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "sys/child.h"
#include "sys/id_map.h"
#include "sys/syscalls.h"
#include "util/dirs.h"

namespace brig::fs {
namespace {

// A user namespace of `maps`, as an fd.
Result<sys::UniqueFd> UserNamespace(const sys::IdMaps& maps) {
  sys::Child holder = BRIG_TRY(sys::Holder(CLONE_NEWUSER, "id map"));
  const std::string proc = "/proc/" + std::to_string(holder.pid()) + "/";
  BRIG_TRY_CTX(sys::WriteIdMaps(holder.pid(), maps), "id map");
  sys::UniqueFd ns(open((proc + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return SysError("open", proc + "ns/user").Wrap("id map");
  return ns;
}

// mount_setattr(MOUNT_ATTR_IDMAP) of `tree` through the user namespace `ns`: false where
// the tree's file system (or one mounted under it) cannot be id-mapped, or already is.
Result<bool> SetIdmap(int tree, unsigned flags, int ns, const std::string& subject) {
  if (auto s = sys::MountSetIdmap(tree, flags, ns, subject); !s) {
    if (s.error().err != EINVAL && s.error().err != EOPNOTSUPP) return std::move(s).error();
    return false;
  }
  return true;
}

// The directory `path`, or its nearest ancestor that exists (a cache not made yet is made
// under it, on its file system).
Result<sys::UniqueFd> OpenNearest(std::string path) {
  for (;;) {
    sys::UniqueFd dir(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir || errno != ENOENT || path.rfind('/') == 0) {
      if (!dir) return SysError("open", path);
      return dir;
    }
    path.resize(path.rfind('/'));
  }
}

}  // namespace

struct stat Seen(struct stat st, const IdMap& map) {
  if (st.st_uid == map.from_uid) st.st_uid = map.to_uid;
  if (st.st_gid == map.from_gid) st.st_gid = map.to_gid;
  return st;
}

Result<SandboxUser> ChooseSandboxUser(const Spec& spec, IdMapper& mapper) {
  // Without root the sandbox user is the caller's own uid, the one id there is to map.
  if (util::Rootless()) return SandboxUser{spec.sandbox_uid, spec.sandbox_gid};
  struct Given {
    std::string path;
    bool workspace;
    uid_t uid;
    gid_t gid;
  };
  std::vector<Given> given;
  if (!spec.workspace.empty()) given.push_back({spec.workspace, true, 0, 0});
  for (const NamedMount& m : spec.mounts) {
    given.push_back({m.cache ? util::CacheDir() + "/" + m.name : m.source, false, m.uid, m.gid});
  }
  for (const Given& g : given) {
    sys::UniqueFd dir = BRIG_TRY(OpenNearest(g.path));
    struct stat st;
    if (fstat(dir.get(), &st) < 0) return SysError("stat", g.path);
    IdMap map{g.workspace ? st.st_uid : g.uid, g.workspace ? st.st_gid : g.gid, spec.sandbox_uid,
              spec.sandbox_gid};
    sys::UniqueFd tree =
        BRIG_TRY(sys::OpenTree(dir.get(), "", OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH));
    if (!BRIG_TRY(mapper.Map(tree.get(), map, g.path))) {
      return SandboxUser{spec.owner_uid, spec.owner_gid};
    }
  }
  return SandboxUser{spec.sandbox_uid, spec.sandbox_gid};
}

Result<bool> IdMapper::Map(int tree, const IdMap& map, const std::string& subject) {
  // An id-mapped mount takes privilege over the file system's own user namespace, which
  // only root has for the host's file systems.
  if (util::Rootless()) return false;
  int ns = -1;
  for (const auto& [m, fd] : namespaces_) {
    if (m.from_uid == map.from_uid && m.from_gid == map.from_gid && m.to_uid == map.to_uid &&
        m.to_gid == map.to_gid) {
      ns = fd.get();
    }
  }
  if (ns < 0) {
    namespaces_.emplace_back(
        map, BRIG_TRY(UserNamespace({.uids = {{.inside = map.from_uid, .host = map.to_uid}},
                                     .gids = {{.inside = map.from_gid, .host = map.to_gid}}})));
    ns = namespaces_.back().second.get();
  }
  return SetIdmap(tree, AT_RECURSIVE, ns, subject);
}

Result<sys::UniqueFd> IdmappedClone(const std::string& path, bool recursive,
                                    const sys::IdMaps& maps, bool map_recursive,
                                    const std::string& subject) {
  sys::UniqueFd tree = BRIG_TRY_CTX(
      sys::OpenTree(AT_FDCWD, path, OPEN_TREE_CLONE | (recursive ? AT_RECURSIVE : 0)), subject);
  sys::UniqueFd ns = BRIG_TRY_CTX(UserNamespace(maps), subject);
  if (!BRIG_TRY(SetIdmap(tree.get(), map_recursive ? AT_RECURSIVE : 0, ns.get(), path))) {
    return Fail(subject, path,
                "its file system cannot be mounted id-mapped on this kernel, or it already is");
  }
  return tree;
}

}  // namespace brig::fs
