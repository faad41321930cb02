#include "runner/sandbox/seccomp_filter.h"

#include <seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "common/file.h"

namespace warden {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using FilterPtr = std::unique_ptr<void, CtxDeleter>;

constexpr std::pair<const char*, int> kFamilies[] = {
    {"AF_INET", AF_INET},         {"AF_INET6", AF_INET6},     {"AF_PACKET", AF_PACKET},
    {"AF_NETLINK", AF_NETLINK},   {"AF_VSOCK", AF_VSOCK},     {"AF_BLUETOOTH", AF_BLUETOOTH},
    {"AF_ALG", AF_ALG},           {"AF_KEY", AF_KEY},         {"AF_XDP", AF_XDP},
    {"AF_UNIX", AF_UNIX},         {"AF_CAN", AF_CAN},         {"AF_TIPC", AF_TIPC},
};

constexpr int kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,   CLONE_NEWUSER,
                                   CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};

Result<int> errno_value(const std::string& name) {
  if (name == "EPERM") return EPERM;
  if (name == "EACCES") return EACCES;
  if (name == "ENOSYS") return ENOSYS;
  return fail(Errc::invalid_argument, "seccomp errno \"" + name + "\" is not one of EPERM, EACCES, ENOSYS");
}

Error rule_error(int rc, const std::string& what) {
  return Error{Errc::internal, "seccomp: " + what + ": " + std::string(strerror(-rc))};
}

}  // namespace

Result<std::string> compile_seccomp(const SeccompPolicy& policy) {
  auto err = errno_value(policy.errno_name);
  if (!err) return std::unexpected(err.error());
  const uint32_t deny = SCMP_ACT_ERRNO(static_cast<uint32_t>(*err));
  FilterPtr ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return fail(Errc::internal, "seccomp_init failed");
  // The native architecture only (libseccomp's default); x32 calls on x86-64 are refused by
  // the architecture check libseccomp emits, and any other ABI kills the process.
  for (const std::string& name : policy.deny) {
    int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) return fail(Errc::invalid_argument, "seccomp: unknown system call \"" + name + "\"");
    if (int rc = seccomp_rule_add(ctx.get(), deny, nr, 0); rc != 0) return std::unexpected(rule_error(rc, name));
  }
  for (const std::string& family : policy.deny_socket_families) {
    const auto* found = std::find_if(std::begin(kFamilies), std::end(kFamilies),
                                     [&](const auto& f) { return family == f.first; });
    if (found == std::end(kFamilies)) return fail(Errc::invalid_argument, "seccomp: unknown socket family \"" + family + "\"");
    int rc = seccomp_rule_add(ctx.get(), deny, SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(found->second)));
    if (rc != 0) return std::unexpected(rule_error(rc, "socket " + family));
  }
  if (policy.deny_namespace_creation) {
    for (int flag : kNamespaceFlags) {
      auto f = static_cast<scmp_datum_t>(flag);
      if (int rc = seccomp_rule_add(ctx.get(), deny, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, f, f)); rc != 0) {
        return std::unexpected(rule_error(rc, "clone flags"));
      }
    }
    // clone3 passes its flags in memory, where BPF cannot look: ENOSYS makes libc use clone().
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0) {
      return std::unexpected(rule_error(rc, "clone3"));
    }
  }
  // Typing into the controlling terminal's input queue is never a check's business.
  for (unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    int rc = seccomp_rule_add(ctx.get(), deny, SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, static_cast<scmp_datum_t>(request)));
    if (rc != 0) return std::unexpected(rule_error(rc, "ioctl"));
  }

  UniqueFd mem(memfd_create("warden-seccomp", MFD_CLOEXEC));
  if (!mem) return std::unexpected(errno_error("memfd_create", errno));
  if (int rc = seccomp_export_bpf(ctx.get(), mem.get()); rc != 0) return std::unexpected(rule_error(rc, "export"));
  off_t size = lseek(mem.get(), 0, SEEK_END);
  if (size <= 0) return fail(Errc::internal, "seccomp: empty program");
  std::string program(static_cast<size_t>(size), '\0');
  if (pread(mem.get(), program.data(), program.size(), 0) != size) return std::unexpected(errno_error("seccomp read", errno));
  return program;
}

}  // namespace warden
