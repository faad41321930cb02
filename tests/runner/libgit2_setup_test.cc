// How Warden sets libgit2 up: the static link routes libgit2's CA-bundle loading to a
// function that loads nothing (cmake/dependencies.cmake), so no process pays for parsing the
// system's certificates and nothing could reach an HTTPS remote with a trusted chain.
#include <git2.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "runner/workspace/git_repo.h"

namespace warden::test {
namespace {

TEST(LibGit2Setup, LoadsNoCertificateAuthority) {
#if defined(WARDEN_LIBGIT2_OFFLINE)
  LibGit2 lib;
  const char* bundle = "/etc/ssl/certs/ca-certificates.crt";
  if (!std::filesystem::exists(bundle)) GTEST_SKIP() << bundle << " is absent on this host";
  // The same loader git_libgit2_init calls: refused, so the TLS configuration holds no CA
  // and a remote's certificate could never verify.
  EXPECT_NE(git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, bundle, nullptr), 0);
#else
  GTEST_SKIP() << "libgit2 is linked shared (WARDEN_STATIC_DEPS=OFF): its CA loading is its own";
#endif
}

}  // namespace
}  // namespace warden::test
