// The hostile programs of the sandbox tests, one per mode, each doing something a check must
// never get away with. Built static and without sanitizers: it runs inside the sandbox,
// where only the profile's binds exist and the limits would starve a sanitizer runtime.
// Every long-lived process keeps the caller's marker in its argv, so the tests can count
// survivors on the host by scanning /proc/*/cmdline.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const char* err_name(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "E?";
}

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

int result(const char* what, long rc) {
  if (rc < 0) std::printf("%s: %s\n", what, err_name(errno));
  else std::printf("%s: ok\n", what);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argv[1];
  const char* arg = argc > 2 ? argv[2] : "";
  std::setvbuf(stdout, nullptr, _IONBF, 0);

  if (!std::strcmp(mode, "forkbomb")) {
    for (;;) fork();
  }
  if (!std::strcmp(mode, "memhog")) {
    size_t total = 0;
    for (;;) {
      const size_t chunk = size_t{64} << 20;
      void* p = std::malloc(chunk);
      if (!p) {
        std::printf("allocated %zu MiB before malloc failed\n", total >> 20);
        return 3;
      }
      std::memset(p, 1, chunk);
      total += chunk;
    }
  }
  if (!std::strcmp(mode, "flood")) {
    static char buf[65536];
    std::memset(buf, 'x', sizeof buf);
    for (;;) {
      if (write(1, buf, sizeof buf) < 0 && errno != EINTR) return 4;
    }
  }
  if (!std::strcmp(mode, "sleep")) sleep_forever();
  if (!std::strcmp(mode, "daemon")) {
    // The classic double fork: the daemon is reparented and in its own session.
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        for (int fd = 0; fd < 3; ++fd) close(fd);
        sleep_forever();
      }
      _exit(0);
    }
    wait(nullptr);
    std::printf("daemon started\n");
    return 0;
  }
  if (!std::strcmp(mode, "closeout")) {
    // Children that keep running with the output redirected away, and a parent that exits.
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 1);
    close(2);
    for (int i = 0; i < 3; ++i) {
      if (fork() == 0) sleep_forever();
    }
    return 0;
  }
  if (!std::strcmp(mode, "connect")) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return result("socket", -1);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(arg)));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return result("connect", connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  }
  if (!std::strcmp(mode, "write")) return result("write", open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  if (!std::strcmp(mode, "read")) return result("read", open(arg, O_RDONLY));
  if (!std::strcmp(mode, "ptrace")) {
    result("ptrace_traceme", ptrace(PTRACE_TRACEME, 0, nullptr, nullptr));
    return result("ptrace_attach", ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr));
  }
  if (!std::strcmp(mode, "mount")) return result("mount", mount("none", "/tmp", "tmpfs", 0, nullptr));
  if (!std::strcmp(mode, "keyctl")) {
    return result("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  }
  if (!std::strcmp(mode, "unshare")) return result("unshare", unshare(CLONE_NEWUSER));
  if (!std::strcmp(mode, "ids")) {
    std::printf("uid=%d euid=%d gid=%d egid=%d\n", getuid(), geteuid(), getgid(), getegid());
    return 0;
  }
  if (!std::strcmp(mode, "cpu")) {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  if (!std::strcmp(mode, "bigfile")) {
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    static char buf[1 << 16];
    for (long total = 0;; total += sizeof buf) {
      if (write(fd, buf, sizeof buf) < 0) {
        std::printf("write failed after %ld bytes: %s\n", total, err_name(errno));
        return 0;
      }
    }
  }
  if (!std::strcmp(mode, "fill")) {
    // Bytes into `arg` in 256 KiB files (under any RLIMIT_FSIZE) until a write fails.
    static char buf[1 << 16];
    std::memset(buf, 'f', sizeof buf);
    long total = 0;
    for (int i = 0;; ++i) {
      char name[4096];
      std::snprintf(name, sizeof name, "%s/fill-%d", arg, i);
      int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) {
        std::printf("fill: %s\nfilled %ld bytes\n", err_name(errno), total);
        return 0;
      }
      for (int k = 0; k < 4; ++k) {
        ssize_t n = write(fd, buf, sizeof buf);
        if (n < 0) {
          std::printf("fill: %s\nfilled %ld bytes\n", err_name(errno), total);
          return 0;
        }
        total += n;
      }
      close(fd);
    }
  }
  if (!std::strcmp(mode, "inodes")) {
    // Empty files in `arg` until one cannot be made.
    for (long i = 0;; ++i) {
      char name[4096];
      std::snprintf(name, sizeof name, "%s/i%ld", arg, i);
      int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd < 0) {
        std::printf("inodes: %s\nmade %ld files\n", err_name(errno), i);
        return 0;
      }
      close(fd);
    }
  }
  if (!std::strcmp(mode, "print")) {
    std::printf("%s\n", arg);
    return argc > 3 ? std::atoi(argv[3]) : 0;
  }
  return 2;
}
