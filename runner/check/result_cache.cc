#include "runner/check/result_cache.h"

#include <system_error>

#include "runner/sandbox/private_dir.h"

namespace warden {

Result<ResultCache> ResultCache::open(const std::filesystem::path& dir) {
  // A result found here is believed without a run: nobody else may have written it.
  if (Status st = ensure_private_dir(dir); !st) return std::unexpected(st.error());
  for (const char* file : {"data.mdb", "lock.mdb"}) {
    if (Status st = check_private_file(dir / file); !st) return std::unexpected(st.error());
  }
  // MDB_NOTLS: a memo's read transaction may stay open while the same thread writes.
  auto env = lmdb::Env::open(dir, MDB_NOTLS, size_t{4} << 30, 4);
  if (!env) return std::unexpected(env.error());
  auto txn = lmdb::Txn::begin(*env, false);
  if (!txn) return std::unexpected(txn.error());
  auto results = txn->open_db("results", MDB_CREATE);
  if (!results) return std::unexpected(results.error());
  auto hashes = txn->open_db("tree_hashes", MDB_CREATE);
  if (!hashes) return std::unexpected(hashes.error());
  auto bodies = txn->open_db("bodies", MDB_CREATE);
  if (!bodies) return std::unexpected(bodies.error());
  if (Status st = txn->commit(); !st) return std::unexpected(st.error());
  return ResultCache(std::move(*env), *results, *hashes, *bodies);
}

bool ResultCache::cacheable(const RunResult& result) {
  for (const auto& c : result.checks) {
    if (c.verdict != kPassed && c.verdict != kFailed) return false;
  }
  return true;
}

Result<std::optional<ResultCache::Hit>> ResultCache::get(const Digest& key) {
  auto txn = lmdb::Txn::begin(env_, true);
  if (!txn) return std::unexpected(txn.error());
  auto value = txn->get(results_, key.view());
  if (!value) {
    if (value.error().code == Errc::not_found) return std::optional<Hit>();
    return std::unexpected(value.error());
  }
  auto json = parse_canonical_json(*value, "cached run result");
  if (!json) return std::unexpected(Error{Errc::corrupt, json.error().message});
  auto result = RunResult::from_json(*json);
  if (!result) return std::unexpected(Error{Errc::corrupt, "cached run result: " + result.error().message});
  Hit hit{std::move(*result), {}};
  for (const Digest& d : hit.result.named_blobs()) {
    auto body = txn->get(bodies_, d.view());
    // A body that is gone or no longer matches its name makes the entry useless, not wrong.
    if (!body || sha256(*body) != d) return std::optional<Hit>();
    hit.bodies.emplace(d, std::string(*body));
  }
  return std::optional<Hit>(std::move(hit));
}

Status ResultCache::put(const Digest& key, const RunResult& result, const RunBodies& bodies) {
  auto bytes = canonicalize(result.to_json());
  if (!bytes) return std::unexpected(bytes.error());
  auto txn = lmdb::Txn::begin(env_, false);
  if (!txn) return std::unexpected(txn.error());
  for (const Digest& d : result.named_blobs()) {
    auto body = bodies.find(d);
    if (body == bodies.end()) return fail(Errc::invalid_argument, "the result names blob " + d.str() + " without its bytes");
    if (Status st = txn->put(bodies_, d.view(), body->second, 0, "storing an output body"); !st) return st;
  }
  if (Status st = txn->put(results_, key.view(), *bytes, 0, "storing a run result"); !st) return st;
  return txn->commit();
}

std::optional<Digest> ResultCache::Memo::get(const git_oid& id) {
  if (auto fresh = fresh_.get(id)) return fresh;
  if (!read_) {
    auto txn = lmdb::Txn::begin(cache_->env_, true);
    if (!txn) return std::nullopt;  // a cache that cannot be read is recomputed, not trusted
    read_.emplace(std::move(*txn));
  }
  auto value = read_->get(cache_->hashes_, std::string_view(reinterpret_cast<const char*>(id.id), GIT_OID_RAWSZ));
  if (!value) return std::nullopt;
  auto d = Digest::from_bytes(*value);
  if (!d) return std::nullopt;
  return *d;
}

Status ResultCache::Memo::store() {
  read_.reset();
  if (fresh_.entries().empty()) return {};
  auto txn = lmdb::Txn::begin(cache_->env_, false);
  if (!txn) return std::unexpected(txn.error());
  for (const auto& [id, hash] : fresh_.entries()) {
    if (Status st = txn->put(cache_->hashes_, id, hash.view(), 0, "storing a tree hash"); !st) return st;
  }
  if (Status st = txn->commit(); !st) return st;
  fresh_.clear();
  return {};
}

}  // namespace warden
