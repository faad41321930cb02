// A fresh directory under /tmp for one test, removed with everything in it when the test
// ends, even if the test made parts of it read-only.
#pragma once

#include <filesystem>

namespace warden::test {

class TempDir {
 public:
  TempDir();  // throws std::runtime_error if mkdtemp fails
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& p) const { return path_ / p; }

 private:
  std::filesystem::path path_;
};

}  // namespace warden::test
