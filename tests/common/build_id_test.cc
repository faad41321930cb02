// The running executable's build id, read from its loaded notes, is the one the linker wrote
// into the file (as readelf shows it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/build_id.h"

namespace warden {
namespace {

TEST(BuildId, IsTheOneTheLinkerWroteIntoThisExecutable) {
  const std::string id = executable_build_id();
  ASSERT_GE(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(executable_build_id(), id);
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string notes;
  if (FILE* p = ::popen(("readelf -n '" + exe + "' 2>/dev/null").c_str(), "r")) {
    std::array<char, 4096> buf;
    for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) notes.append(buf.data(), n);
    ::pclose(p);
  }
  if (notes.empty()) GTEST_SKIP() << "readelf is not available";
  EXPECT_NE(notes.find("Build ID: " + id + "\n"), std::string::npos) << notes;
}

}  // namespace
}  // namespace warden
