#include "runner/workspace/blob_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/file.h"

namespace warden {

Result<DirectoryBlobSink> DirectoryBlobSink::open(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "creating blob directory " + dir.string() + ": " + ec.message());
  return DirectoryBlobSink(dir);
}

Result<Digest> DirectoryBlobSink::put(std::string_view bytes) {
  Digest d = sha256(bytes);
  auto final_path = path_of(d);
  if (::access(final_path.c_str(), F_OK) == 0) return d;  // content-addressed: already there
  // Write a temporary sibling and rename it into place: readers never see a partial blob.
  // Output bodies are evidence the kernel re-hashes on use, so no fsync per blob.
  std::random_device rd;
  auto tmp = dir_ / (".tmp-" + d.hex().substr(0, 16) + "-" + std::to_string(rd()));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) return std::unexpected(errno_error("create " + tmp.string(), errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return std::unexpected(errno_error("write " + tmp.string(), err));
    }
    done += static_cast<size_t>(n);
  }
  fd.reset();
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return std::unexpected(errno_error("rename " + final_path.string(), err));
  }
  return d;
}

}  // namespace warden
