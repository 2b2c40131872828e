// brig-probe: run inside a sandbox by the host tests to attempt one thing and say how it
// went: "allowed" or "denied <errno name> <ms>". It is the attacker's side of the tests.
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace {

auto g_start = std::chrono::steady_clock::now();

int Report(long rc) {
  long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - g_start)
                .count();
  if (rc < 0) {
    printf("denied %s %ld\n", strerrorname_np(errno), ms);
  } else {
    printf("allowed\n");
  }
  return 0;
}

int Fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return Report(-1);
  int self = dirfd(d);
  std::string out;
  while (struct dirent* de = readdir(d)) {
    if (de->d_name[0] == '.' || atoi(de->d_name) == self) continue;
    out += std::string(de->d_name) + " ";
  }
  closedir(d);
  printf("%s\n", out.c_str());
  return 0;
}

int Connect(const char* ip, int port) {
  int s = socket(strchr(ip, ':') ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (s < 0) return Report(-1);
  if (strchr(ip, ':')) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, ip, &a.sin6_addr);
    return Report(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a));
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return Report(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a));
}

// Calls syscall(nr, 0, 0, 0, 0, 0, 0) for each number and prints "<nr> ok" or "<nr>
// <errno name>", one line each, flushed as it goes (a probe that dies shows how far it
// got). Meant for numbers the filter denies, which seccomp stops before the kernel runs
// them (tests/host/seccomp_deny_test.cc): one sandbox checks hundreds of syscalls.
int Syscalls(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  for (int i = 2; i < argc; ++i) {
    char* end = nullptr;
    long nr = strtol(argv[i], &end, 10);
    if (end == argv[i] || *end != '\0' || nr < 0) {
      fprintf(stderr, "brig-probe: not a syscall number: %s\n", argv[i]);
      return 2;
    }
    long rc = syscall(nr, 0L, 0L, 0L, 0L, 0L, 0L);
    if (rc == -1) {
      int e = errno;
      const char* name = strerrorname_np(e);
      if (name) {
        printf("%ld %s\n", nr, name);
      } else {
        printf("%ld E%d\n", nr, e);
      }
    } else {
      printf("%ld ok\n", nr);
    }
  }
  return 0;
}

// Connects to the unix stream socket at `path` and sends a byte: what a client of a host
// process's socket (an agent, an editor, git's fsmonitor) would do.
int ConnectUnix(const char* path) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return Report(-1);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return Report(-1);
  return Report(write(s, "x", 1));
}

// Opens the FIFO at `path` for writing, without waiting for a reader, and writes a byte.
int WriteFifo(const char* path) {
  int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Report(-1);
  return Report(write(fd, "x", 1));
}

long I386Getpid() {
  long rc;
  // The i386 ABI from a 64-bit process: getpid is 20 there.
  asm volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: brig-probe WHAT [ARGS]\n");
    return 2;
  }
  std::string what = argv[1];
  if (what == "fds") return Fds();
  if (what == "ls" && argc > 2) {
    DIR* d = opendir(argv[2]);
    if (!d) return Report(-1);
    std::string out;
    while (struct dirent* de = readdir(d)) {
      if (de->d_name[0] != '.') out += std::string(de->d_name) + " ";
    }
    closedir(d);
    printf("%s\n", out.c_str());
    return 0;
  }
  if (what == "cat" && argc > 2) {
    int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Report(-1);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, static_cast<size_t>(n), stdout);
    close(fd);
    return 0;
  }
  if (what == "mount") return Report(mount("none", "/tmp", "tmpfs", 0, nullptr));
  if (what == "socket" && argc > 4) {
    return Report(socket(atoi(argv[2]), atoi(argv[3]), atoi(argv[4])));
  }
  if (what == "unshare") return Report(unshare(CLONE_NEWUSER));
  if (what == "unshare-ns") return Report(unshare(CLONE_NEWNS));
  if (what == "setns") {
    int fd = open("/proc/self/ns/net", O_RDONLY);
    if (fd < 0) return Report(-1);
    return Report(setns(fd, 0));
  }
  if (what == "ptrace" && argc > 2) {
    return Report(ptrace(PTRACE_ATTACH, atoi(argv[2]), nullptr, nullptr));
  }
  if (what == "keyctl") {
    return Report(syscall(SYS_add_key, "user", "brig-probe", "x", 1, KEY_SPEC_SESSION_KEYRING));
  }
  if (what == "bpf") {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    return Report(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
  }
  if (what == "unix" && argc > 2) return ConnectUnix(argv[2]);
  if (what == "fifo" && argc > 2) return WriteFifo(argv[2]);
  if (what == "connect" && argc > 3) return Connect(argv[2], atoi(argv[3]));
  if (what == "tiocsti") {
    char c = 'x';
    long a = ioctl(0, TIOCSTI, &c);
    int e1 = errno;
    long b = syscall(SYS_ioctl, 0, 0x100005412UL, &c);
    errno = e1;
    if (a >= 0 || b >= 0) return Report(0);
    return Report(-1);
  }
  if (what == "sigqueue" && argc > 3) {
    // A signal that claims to come from pid 0, the way the kernel shows a sender outside
    // the pid namespace; only a negative si_code may be chosen for another process.
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = atoi(argv[3]);
    si.si_code = SI_QUEUE;
    si.si_pid = 0;
    si.si_uid = 0;
    return Report(syscall(SYS_rt_sigqueueinfo, atoi(argv[2]), si.si_signo, &si));
  }
  if (what == "ctty") return Report(open("/dev/tty", O_RDWR));
  if (what == "i386") return Report(I386Getpid());
  // The x32 ABI: the same syscall instruction, the number with __X32_SYSCALL_BIT set.
  if (what == "x32") return Report(syscall(0x40000000L | SYS_getpid));
  if (what == "syscalls") return Syscalls(argc, argv);
  // Erases what its stdout already holds: the harness's file, if it were the caller's.
  if (what == "clobber-stdout") {
    long t = ftruncate(1, 0);
    int e = errno;
    long w = pwrite(1, "CLOBBERED\n", 10, 0);
    errno = t < 0 ? e : errno;
    return Report(t < 0 && w < 0 ? -1 : 0);
  }
  if (what == "write" && argc > 2) {
    return Report(open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644));
  }
  fprintf(stderr, "brig-probe: unknown probe %s\n", what.c_str());
  return 2;
}
