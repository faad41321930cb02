// EnvironmentStore: environments on disk, content-addressed and deduplicated by file.
//
//   <dir>/objects/<2 hex>/<64 hex>[x]  each distinct file once (x: executable), 0444/0555
//   <dir>/envs/<64 hex>/root/          the environment, its files hard links to objects
//   <dir>/envs/<64 hex>/manifest       its manifest (tree_manifest.h)
//   <dir>/envs/<64 hex>/environment.json  its record (environment.h)
//   <dir>/envs/<64 hex>/used           touched on every use: least-recently-used collection;
//                                      a run holds a shared flock on it (use())
//   <dir>/fetching                     fetches hold it shared, gc's object sweep exclusively
//   <dir>/recipes/<64 hex>             a recipe's digest -> the environment it built
//   <dir>/memo                         file digests by stat (file_digest_memo.h)
//   <dir>/lock                         writers (install, gc, remove) hold it exclusively
//
// An environment is installed from a manifest and a way to get each file's bytes: every
// object is hashed again as it arrives and refused when it is not what the manifest says
// (nothing a source or a server sends is believed), the tree is made in a temporary
// directory, scanned once more, and renamed into place only when it has the digest it will
// be found by. open_verified() scans a stored root again before a run uses it (stat() alone
// when nothing changed), so a tree changed after install is refused, not run on.
//
// The store is readable by everyone (0755 directories, 0444/0555 files: the sandbox's uid
// reads environments through binds) and writable only by Warden's uid (ensure_owned_dir):
// what it holds is run on. Every directory above it must be searchable by the sandbox's uid;
// open() refuses (verification_failed, naming the directory and the fix) a store a sandbox
// could not reach.
//
// An environment a process uses (use()) is not removed: remove() refuses it and gc() passes
// it over. Objects added for an install still to come (add_object) are not removed while the
// fetch holds the store (hold_fetched_objects()).
//
// Ownership and threads: an EnvironmentStore is a handle on the directory; several processes
// may share it (writers serialize on the lock). Not thread-safe within a process: one per
// thread. Errors: io errors naming the path, corrupt for a stored record or tree that fails
// its own checks, not_found for an environment the store does not hold.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "common/error.h"
#include "common/file.h"
#include "runner/environment/environment.h"
#include "runner/environment/tree_manifest.h"

namespace warden {

// A shared flock on a file of the store, held for as long as this lives (it moves, it does
// not copy): on an environment's `used` file (use()), remove() and gc() in any process leave
// that environment alone; on the store's `fetching` file (hold_fetched_objects()), gc()
// removes no object.
class StoreHold {
 public:
  StoreHold() = default;

 private:
  friend class EnvironmentStore;
  UniqueFd fd_;
};

class EnvironmentStore {
 public:
  // As root: /var/cache/warden-environments (a sandbox dropped to another uid must reach it,
  // and neither root's home nor the private /var/cache/warden lets it); otherwise $XDG_CACHE_HOME/warden/environments, or
  // ~/.cache/warden/environments. WARDEN_ENV_STORE overrides both.
  static std::filesystem::path default_dir();
  // Makes or checks the layout above. `sandbox_uid`, when given, must be able to search
  // every directory down to the store.
  static Result<EnvironmentStore> open(std::filesystem::path dir, std::optional<uid_t> sandbox_uid = std::nullopt);

  const std::filesystem::path& dir() const { return dir_; }

  // Writes the bytes of `entry` (a file of the manifest) to `dest`. A source: a directory's
  // files, a server's object stream.
  using ObjectWriter = std::function<Status(const TreeEntry& entry, const std::filesystem::path& dest)>;
  // Installs the tree `manifest` describes with `env` and `source`; objects already held are
  // not asked for. Installing an environment the store holds returns it unchanged.
  Result<Environment> install(const TreeManifest& manifest, const std::map<std::string, std::string>& env,
                              const Json& source, const ObjectWriter& write);
  // Stores `bytes` as the object `sha256` (a file of an environment still to be installed),
  // refused unless they hash to it. A fetch that stops part way keeps what it stored, so the
  // next asks only for the rest; gc removes objects no environment links, except while a
  // fetch holds the store (hold_fetched_objects()).
  Status add_object(const Digest& sha256, bool executable, std::string_view bytes);
  // A directory's tree, read as an environment holds it.
  Result<Environment> import_tree(const std::filesystem::path& root, const std::map<std::string, std::string>& env,
                                  const Json& source);

  // The stored environment, its use recorded; nullopt when not held.
  Result<std::optional<Environment>> find(const Digest& digest);
  // find() and then the root scanned again: corrupt when it no longer has its digest.
  Result<Environment> open_verified(const Digest& digest);
  // Holds the stored environment against removal: not_found when the store does not hold it,
  // io_error when another process keeps it locked exclusively for 30 s. Taken before
  // open_verified(), the tree verified is the one held. Thread-safe (it reads only dir()).
  Result<StoreHold> use(const Digest& digest) const;
  // Held while objects are added for an environment not installed yet (add_object, then
  // install): gc removes no object meanwhile. Thread-safe.
  Result<StoreHold> hold_fetched_objects() const;
  // What install() refuses of a manifest and variables before it stores anything: reserved
  // variables, devices, sockets and fifos, paths outside the tree (invalid_argument).
  static Status check_installable(const TreeManifest& manifest, const std::map<std::string, std::string>& env);
  Result<TreeManifest> manifest(const Digest& digest) const;
  // Every stored environment, most recently used first.
  Result<std::vector<Environment>> list() const;
  // The path of a stored object (for serving it), or not_found.
  Result<std::filesystem::path> object(const Digest& sha256, bool executable) const;

  // What a recipe built (recipes/), if it is still stored.
  Result<std::optional<Environment>> built_from(const Digest& recipe);
  Status remember_recipe(const Digest& recipe, const Digest& environment);

  struct Budget {
    uint64_t max_bytes = uint64_t{20} << 30;  // distinct objects' bytes
    size_t max_count = 20;
  };
  struct GcReport {
    std::vector<Digest> removed;
    std::vector<Digest> in_use;  // over a bound, but held by a run (use())
    bool kept_for_fetch = false;  // a fetch held the store: no object was removed
    uint64_t objects_removed = 0, bytes_freed = 0;
    uint64_t bytes_kept = 0;
    size_t kept = 0;
  };
  // Removes least-recently-used environments until both bounds hold (never `keep`, nor one
  // in use), then every object no environment links, unless a fetch holds the store.
  Result<GcReport> gc(const Budget& budget, std::optional<Digest> keep = std::nullopt);
  // failed_precondition while a run holds it (use()).
  Status remove(const Digest& digest);
  // Bytes of all distinct objects.
  Result<uint64_t> object_bytes() const;

  // A fresh directory below <dir>/tmp (for builds), removed by the caller.
  Result<std::filesystem::path> make_temp(std::string_view prefix);
  // The memo the store hashes with (shared with the caller's scans of trees to import).
  FileDigestMemo& memo() { return memo_; }

 private:
  EnvironmentStore() = default;
  std::filesystem::path env_dir(const Digest& d) const;
  std::filesystem::path object_path(const Digest& sha256, bool executable) const;
  Result<Environment> read_env(const std::filesystem::path& dir) const;
  // The object `sha256` made from what `write` puts at a temporary path, once it hashes right.
  Status put_object(const Digest& sha256, bool executable, const std::function<Status(const std::filesystem::path&)>& write,
                    std::string_view what);

  std::filesystem::path dir_;
  FileDigestMemo memo_;
};

}  // namespace warden
