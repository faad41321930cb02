// ledger_bench: Warden ledger throughput, each figure beside the raw LMDB or OpenSSL rate it
// is built on, all measured in one run on one disk so the comparisons hold.
//
//   1. Batched durable appends: Ledger::append_batch, 1000 records per transaction, 256-byte
//      canonical payloads built beforehand (canonicalization, hashing, fsync all timed).
//   2. Raw LMDB MDB_APPEND of as many record-sized values, 1000 per transaction (reference).
//   3. Single-record durable appends, one fsynced transaction each, against raw LMDB
//      single-put commits.
//   4. verify_ledger_dir over the ledger from 1: records/s and MB/s hashed, against OpenSSL
//      SHA-256 on 64 KiB buffers (and warden::Sha256 on 400-byte messages, for context).
//   5. Inclusion proofs from one snapshot at the full tree size: generated/s, verified/s.
//   6. data.mdb bytes per canonical payload byte of the ledger from 1.
//
// Usage:
//   cmake --build build --target ledger_bench
//   build/ledger_bench [--records N] [--dir PATH] [--json]   full run, N = 1,000,000 by default
//   build/ledger_bench --quick                                CI smoke run, a few seconds
//
// Without --dir everything goes in a fresh directory under the temp dir, removed at exit;
// with --dir the ledger stays there for inspection (`warden ledger verify PATH/ledger`).
// Exit status: 0; 1 when a full run misses a target; 2 when a step cannot run at all.
// MB means 10^6 bytes. Verification and proofs run on a warm page cache.
#include <lmdb.h>
#include <openssl/evp.h>
#include <stdlib.h>  // mkdtemp

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/sha256.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"
#include "ledger/verify.h"

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kBatchSize = 1000;
constexpr size_t kPayloadBytes = 256;
constexpr std::string_view kKind = "bench";
constexpr std::string_view kOrigin = "bench.local/ledger";
constexpr size_t kRawMapSize = size_t{1} << 36;  // address space only; the file grows as used

struct Options {
  uint64_t records = 1'000'000;
  bool records_given = false;
  bool quick = false;
  std::string dir;
  bool json = false;
};

// How much work each stage does.
struct Plan {
  uint64_t records;
  uint64_t single_appends;
  uint64_t proofs;
  uint64_t sha_large_bytes;
  uint64_t sha_small_messages;
};

Plan make_plan(const Options& o) {
  if (o.quick) return {o.records_given ? o.records : 20'000, 100, 20'000, uint64_t{64} << 20, 100'000};
  return {o.records, 500, 200'000, uint64_t{1} << 30, 2'000'000};
}

// ---------------------------------------------------------------- failures and timing

// A step that cannot run makes every later figure meaningless: stop with its reason.
[[noreturn]] void die(std::string_view what, std::string_view why) {
  throw std::runtime_error(std::string(what) + ": " + std::string(why));
}

template <typename T>
T must(warden::Result<T> result, std::string_view what) {
  if (!result) die(what, result.error().message);
  return std::move(*result);
}

void must(const warden::Status& status, std::string_view what) {
  if (!status) die(what, status.error().message);
}

void must_lmdb(int rc, std::string_view what) {
  if (rc != 0) die(what, mdb_strerror(rc));
}

template <typename Body>
double seconds(Body&& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void progress(std::string_view step) { std::cerr << "ledger_bench: " << step << "...\n"; }

// ---------------------------------------------------------------- work directory

// Where every stage writes: a fresh temp directory removed at exit, or the user's --dir,
// kept so the ledger can be inspected afterwards.
class WorkDir {
 public:
  explicit WorkDir(const std::string& requested) {
    if (!requested.empty()) {
      path_ = requested;
      fs::create_directories(path_);
      return;
    }
    std::string pattern = (fs::temp_directory_path() / "ledger-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) die("creating a temporary directory", std::strerror(errno));
    path_ = pattern;
    owned_ = true;
  }
  ~WorkDir() {
    std::error_code ignored;
    if (owned_) fs::remove_all(path_, ignored);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  const fs::path& path() const { return path_; }
  bool removed_at_exit() const { return owned_; }

  // A subdirectory no earlier run left behind: stale data would skew every figure.
  fs::path fresh(std::string_view name) const {
    fs::path p = path_ / name;
    if (fs::exists(p)) die(p.string(), "already exists; pass an empty --dir");
    return p;
  }

 private:
  fs::path path_;
  bool owned_ = false;
};

// ---------------------------------------------------------------- the records

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

// The payload's string: unique per index and needing no JSON escapes, so the canonical
// object {"data":"..."} is exactly kPayloadBytes long.
std::string filler(uint64_t index) {
  constexpr size_t kLength = kPayloadBytes - std::string_view(R"({"data":""})").size();
  std::string out = std::to_string(index) + '-';
  uint64_t state = index;
  while (out.size() < kLength) out += static_cast<char>('a' + splitmix64(state) % 26);
  return out;
}

// Canonical size of a Warden record midway through the ledger (ts == seq: logical clock).
size_t record_size(uint64_t records, std::string_view payload) {
  uint64_t mid = records / 2;
  warden::RecordView r{mid, kKind, warden::Digest(), static_cast<int64_t>(mid), payload};
  std::string bytes;
  r.append_canonical_bytes(bytes);
  return bytes.size();
}

// Everything the append stages write, built before any clock starts.
struct Workload {
  std::vector<warden::AppendEntry> entries;  // Warden's input
  std::string raw_values;                    // raw LMDB's input: value_size bytes per record
  size_t value_size = 0;                     // a Warden record's canonical size

  uint64_t count() const { return entries.size(); }
  uint64_t payload_bytes() const { return count() * kPayloadBytes; }
  std::string_view raw_value(uint64_t i) const {
    return std::string_view(raw_values).substr(i * value_size, value_size);
  }
};

Workload make_workload(uint64_t records) {
  Workload w;
  w.entries.reserve(records);
  for (uint64_t i = 0; i < records; ++i) {
    std::string data = filler(i);
    std::string canonical = R"({"data":")" + data + R"("})";
    if (i == 0) {
      w.value_size = record_size(records, canonical);
      w.raw_values.reserve(records * w.value_size);
    }
    // Raw LMDB gets the same payload padded to a whole record: equal value sizes.
    w.raw_values += canonical;
    w.raw_values.append(w.value_size - canonical.size(), ' ');
    w.entries.push_back({std::string(kKind), warden::Json{{"data", std::move(data)}}});
  }
  auto first = must(warden::canonicalize(w.entries.front().payload), "canonicalizing a payload");
  if (first.size() != kPayloadBytes) die("payload layout", "canonical form is " + std::to_string(first.size()) + " bytes");
  return w;
}

// ---------------------------------------------------------------- raw LMDB baseline

// A plain LMDB environment, default (durable) flags, one database: what Warden's own
// LMDB use is measured against.
class RawLmdb {
 public:
  explicit RawLmdb(const fs::path& dir) {
    fs::create_directory(dir);
    MDB_env* env = nullptr;
    must_lmdb(mdb_env_create(&env), "mdb_env_create");
    env_.reset(env);
    must_lmdb(mdb_env_set_mapsize(env, kRawMapSize), "mdb_env_set_mapsize");
    must_lmdb(mdb_env_open(env, dir.c_str(), 0, 0644), "mdb_env_open");
    MDB_txn* txn = begin();
    abort_unless(txn, mdb_dbi_open(txn, nullptr, 0, &dbi_), "mdb_dbi_open");
    must_lmdb(mdb_txn_commit(txn), "mdb_txn_commit");
  }

  // Puts records [first, first + count) under 8-byte big-endian keys in one transaction.
  void append(const Workload& w, uint64_t first, uint64_t count) {
    MDB_txn* txn = begin();
    for (uint64_t i = first; i < first + count; ++i) {
      std::array<unsigned char, 8> key = big_endian(i);
      std::string_view value = w.raw_value(i % w.count());
      MDB_val k{key.size(), key.data()};
      MDB_val v{value.size(), const_cast<char*>(value.data())};
      abort_unless(txn, mdb_put(txn, dbi_, &k, &v, MDB_APPEND), "mdb_put");
    }
    must_lmdb(mdb_txn_commit(txn), "mdb_txn_commit");  // frees the txn even when it fails
  }

 private:
  static std::array<unsigned char, 8> big_endian(uint64_t v) {
    std::array<unsigned char, 8> out;
    for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<unsigned char>(v & 0xff);
    return out;
  }
  MDB_txn* begin() {
    MDB_txn* txn = nullptr;
    must_lmdb(mdb_txn_begin(env_.get(), nullptr, 0, &txn), "mdb_txn_begin");
    return txn;
  }
  static void abort_unless(MDB_txn* txn, int rc, std::string_view what) {
    if (rc == 0) return;
    mdb_txn_abort(txn);
    must_lmdb(rc, what);
  }
  struct EnvCloser {
    void operator()(MDB_env* env) const { mdb_env_close(env); }
  };

  std::unique_ptr<MDB_env, EnvCloser> env_;
  MDB_dbi dbi_ = 0;
};

// ---------------------------------------------------------------- the stages

struct Measurements {
  size_t record_bytes = 0;
  double warden_batched = 0, raw_batched = 0;  // records/s
  double warden_single = 0, raw_single = 0;    // records/s
  double verify_records = 0, verify_mbps = 0;
  double sha_large_mbps = 0, sha_400b_mbps = 0;
  double proofs_generated = 0, proofs_verified = 0;  // proofs/s
  double disk_ratio = 0;
};

// OpenSSL's best case: one context fed 64 KiB buffers, no per-message cost.
double openssl_large_mbps(uint64_t total_bytes) {
  std::vector<unsigned char> chunk(64 << 10);
  uint64_t state = 1;
  for (auto& byte : chunk) byte = static_cast<unsigned char>(splitmix64(state));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest;
  unsigned length = 0;
  bool ok = ctx != nullptr;
  double s = seconds([&] {
    ok = ok && EVP_DigestInit_ex2(ctx.get(), EVP_sha256(), nullptr) == 1;
    for (uint64_t done = 0; ok && done < total_bytes; done += chunk.size()) {
      ok = EVP_DigestUpdate(ctx.get(), chunk.data(), chunk.size()) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(ctx.get(), digest.data(), &length) == 1;
  });
  if (!ok) die("OpenSSL SHA-256", "EVP digest call failed");
  return static_cast<double>(total_bytes) / s / 1e6;
}

// The shape of ledger hashing: short messages, each finished on its own.
double sha256_small_mbps(uint64_t messages) {
  constexpr size_t kMessageBytes = 400;
  std::string message(kMessageBytes, 'x');
  warden::Sha256 sha;
  double s = seconds([&] {
    for (uint64_t i = 0; i < messages; ++i) sha.update(message).finish();
  });
  return static_cast<double>(messages * kMessageBytes) / s / 1e6;
}

warden::Ledger new_ledger(const fs::path& dir, warden::Clock& clock, const warden::NoteSigner& signer) {
  warden::LedgerCreateOptions options{.origin = std::string(kOrigin), .verifier_key = signer.verifier().encoded()};
  must(warden::Ledger::create(dir, options), "creating a ledger");
  return must(warden::Ledger::open(dir, warden::Ledger::Mode::read_write, clock), "opening the ledger");
}

double raw_batched_rate(const fs::path& dir, const Workload& w) {
  double s = 0;
  {
    RawLmdb db(dir);
    s = seconds([&] {
      for (uint64_t first = 0; first < w.count(); first += kBatchSize) {
        db.append(w, first, std::min(kBatchSize, w.count() - first));
      }
    });
  }
  fs::remove_all(dir);  // only the ledger is worth keeping
  return static_cast<double>(w.count()) / s;
}

// Appends the whole workload in batches, then signs one checkpoint so that verification
// later checks a signature and a root as it would on a real ledger.
double build_ledger(const fs::path& dir, const Workload& w, const warden::NoteSigner& signer) {
  warden::LogicalClock clock;
  warden::Ledger ledger = new_ledger(dir, clock, signer);
  std::span<const warden::AppendEntry> all(w.entries);
  double s = seconds([&] {
    for (size_t first = 0; first < all.size(); first += kBatchSize) {
      must(ledger.append_batch(all.subspan(first, std::min<size_t>(kBatchSize, all.size() - first))), "append_batch");
    }
  });
  must(ledger.checkpoint(signer), "signing a checkpoint");
  return static_cast<double>(all.size()) / s;
}

// fsync latency drifts over seconds on shared and virtual disks; alternating short rounds
// gives Warden and raw LMDB the same conditions.
void measure_single_appends(const fs::path& raw_dir, const fs::path& ledger_dir, const Workload& w, uint64_t count,
                            const warden::NoteSigner& signer, Measurements& m) {
  constexpr uint64_t kRound = 10;
  double raw_s = 0, warden_s = 0;
  {
    RawLmdb raw(raw_dir);
    warden::LogicalClock clock;
    warden::Ledger ledger = new_ledger(ledger_dir, clock, signer);
    for (uint64_t first = 0; first < count; first += kRound) {
      uint64_t end = std::min(count, first + kRound);
      raw_s += seconds([&] {
        for (uint64_t i = first; i < end; ++i) raw.append(w, i, 1);
      });
      warden_s += seconds([&] {
        for (uint64_t i = first; i < end; ++i) must(ledger.append(kKind, w.entries[i % w.count()].payload), "append");
      });
    }
  }
  fs::remove_all(raw_dir);
  m.raw_single = static_cast<double>(count) / raw_s;
  m.warden_single = static_cast<double>(count) / warden_s;
}

void measure_verify(const fs::path& dir, uint64_t records, Measurements& m) {
  warden::Result<warden::VerifyReport> result;
  double s = seconds([&] { result = warden::verify_ledger_dir(dir, {}); });
  warden::VerifyReport report = must(std::move(result), "verify_ledger_dir");
  if (!report.ok()) die("verify_ledger_dir", report.problem->object + ": " + report.problem->message);
  if (report.records != records) die("verify_ledger_dir", "checked " + std::to_string(report.records) + " records");
  m.verify_records = static_cast<double>(report.records) / s;
  m.verify_mbps = static_cast<double>(report.bytes_hashed) / s / 1e6;
}

// Proofs for random leaves against the full tree from one snapshot, as a proof server would
// answer them; every proof must verify, or its rate means nothing.
void measure_proofs(const fs::path& dir, uint64_t count, Measurements& m) {
  warden::LogicalClock clock;
  warden::Ledger ledger = must(warden::Ledger::open(dir, warden::Ledger::Mode::read_only, clock), "opening the ledger");
  warden::LedgerSnapshot snap = must(ledger.snapshot(), "taking a snapshot");
  const uint64_t size = snap.size();
  const warden::Digest root = must(snap.root_at(size), "computing the root");

  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> pick(0, size - 1);
  std::vector<uint64_t> seqs(count);
  for (auto& seq : seqs) seq = pick(rng);

  std::vector<std::vector<warden::Digest>> proofs(count);
  double generate_s = seconds([&] {
    for (uint64_t i = 0; i < count; ++i) proofs[i] = must(snap.inclusion_proof(seqs[i], size), "inclusion_proof");
  });
  std::vector<warden::Digest> leaves(count);
  for (uint64_t i = 0; i < count; ++i) leaves[i] = must(snap.record_hash(seqs[i]), "reading a record hash");

  uint64_t failed = 0;
  double verify_s = seconds([&] {
    for (uint64_t i = 0; i < count; ++i) failed += !warden::verify_inclusion(leaves[i], seqs[i], size, proofs[i], root);
  });
  if (failed != 0) die("verify_inclusion", std::to_string(failed) + " proofs did not verify");
  m.proofs_generated = static_cast<double>(count) / generate_s;
  m.proofs_verified = static_cast<double>(count) / verify_s;
}

Measurements measure(const Plan& plan, const WorkDir& work) {
  Measurements m;
  auto signer = must(warden::NoteSigner::generate(kOrigin), "generating a checkpoint key");
  // Named up front so that a leftover directory stops the run before any work.
  const fs::path ledger_dir = work.fresh("ledger"), raw_batched_dir = work.fresh("lmdb-batched"),
                 single_ledger_dir = work.fresh("ledger-single"), raw_single_dir = work.fresh("lmdb-single");

  progress("hashing with OpenSSL");
  m.sha_large_mbps = openssl_large_mbps(plan.sha_large_bytes);
  m.sha_400b_mbps = sha256_small_mbps(plan.sha_small_messages);

  progress("preparing " + std::to_string(plan.records) + " payloads");
  uint64_t payload_bytes = 0;
  {
    Workload w = make_workload(plan.records);
    m.record_bytes = w.value_size;
    payload_bytes = w.payload_bytes();
    progress("raw LMDB batched appends");
    m.raw_batched = raw_batched_rate(raw_batched_dir, w);
    progress("Warden batched appends");
    m.warden_batched = build_ledger(ledger_dir, w, signer);
    progress("single-record durable appends");
    measure_single_appends(raw_single_dir, single_ledger_dir, w, plan.single_appends, signer, m);
  }
  progress("verifying the ledger");
  measure_verify(ledger_dir, plan.records, m);
  progress("inclusion proofs");
  measure_proofs(ledger_dir, plan.proofs, m);
  m.disk_ratio = static_cast<double>(fs::file_size(ledger_dir / "data.mdb")) / static_cast<double>(payload_bytes);
  return m;
}

// ---------------------------------------------------------------- judging and printing

struct Target {
  bool at_most = false;  // the value must not exceed `bound` (otherwise: reach it)
  double bound = 0;
  std::string basis;  // how a derived bound was obtained, e.g. "raw LMDB / 1.5"
};

struct Figure {
  std::string id;  // JSON key
  std::string label;
  double value = 0;
  std::string unit;
  int decimals = 0;
  std::optional<Target> target;  // none: a reference or context figure

  bool passed() const { return !target || (target->at_most ? value <= target->bound : value >= target->bound); }
};

Target at_least(double bound, std::string basis = {}) { return {false, bound, std::move(basis)}; }
Target at_most(double bound) { return {true, bound, {}}; }

std::vector<Figure> judge(const Measurements& m) {
  std::string record = std::to_string(m.record_bytes) + " B";
  return {
      {"batched_append", "Warden append_batch, 1000/txn", m.warden_batched, "records/s", 0, at_least(300'000)},
      {"raw_lmdb_batched", "  raw LMDB MDB_APPEND, 1000/txn, " + record, m.raw_batched, "records/s", 0, {}},
      {"single_append", "Warden append, 1 record/txn", m.warden_single, "records/s", 0,
       at_least(m.raw_single / 1.5, "raw LMDB / 1.5")},
      {"raw_lmdb_single", "  raw LMDB put + commit, 1/txn", m.raw_single, "records/s", 0, {}},
      {"verify_records", "verify_ledger_dir", m.verify_records, "records/s", 0, {}},
      {"verify_hashed", "verify_ledger_dir, hashed", m.verify_mbps, "MB/s", 1,
       at_least(m.sha_large_mbps / 2, "50% of OpenSSL")},
      {"openssl_sha256_64k", "  OpenSSL SHA-256, 64 KiB buffers", m.sha_large_mbps, "MB/s", 1, {}},
      {"sha256_400b", "  warden::Sha256, 400-byte messages", m.sha_400b_mbps, "MB/s", 1, {}},
      {"proof_generate", "inclusion proofs generated", m.proofs_generated, "proofs/s", 0, at_least(100'000)},
      {"proof_verify", "inclusion proofs verified", m.proofs_verified, "proofs/s", 0, {}},
      {"disk_per_payload_byte", "data.mdb bytes per payload byte", m.disk_ratio, "", 2, at_most(2.0)},
  };
}

// 1234567.8 -> "1,234,568" with no decimals.
std::string grouped(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  size_t digits_end = std::min(s.find('.'), s.size());
  size_t digits_begin = s.starts_with('-') ? 1 : 0;
  for (size_t i = digits_end; i > digits_begin + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

std::string target_text(const Figure& f) {
  if (!f.target) return "";
  std::string text = (f.target->at_most ? "<= " : ">= ") + grouped(f.target->bound, f.decimals);
  return f.target->basis.empty() ? text : text + " (" + f.target->basis + ")";
}

std::string verdict(const Figure& f) {
  if (!f.target) return "";
  return f.passed() ? "PASS" : "FAIL";
}

void print_table(const Plan& plan, const Measurements& m, const WorkDir& work, const std::vector<Figure>& figures,
                 bool quick) {
  std::printf("Warden ledger benchmark%s: %s records, %zu-byte payloads, %zu-byte records, %llu per batch\n",
              quick ? " (quick)" : "", grouped(static_cast<double>(plan.records), 0).c_str(), kPayloadBytes,
              m.record_bytes, static_cast<unsigned long long>(kBatchSize));
  std::printf("%s single appends, %s proofs; work dir %s%s\n\n",
              grouped(static_cast<double>(plan.single_appends), 0).c_str(),
              grouped(static_cast<double>(plan.proofs), 0).c_str(), work.path().c_str(),
              work.removed_at_exit() ? " (removed at exit)" : "");
  std::printf("%-38s %14s %-10s %-36s %s\n", "figure", "value", "unit", "target", "result");
  for (const auto& f : figures) {
    std::printf("%-38s %14s %-10s %-36s %s\n", f.label.c_str(), grouped(f.value, f.decimals).c_str(), f.unit.c_str(),
                target_text(f).c_str(), verdict(f).c_str());
  }
}

void print_json(const Plan& plan, const Measurements& m, const WorkDir& work, const std::vector<Figure>& figures,
                bool quick) {
  nlohmann::ordered_json out;
  out["mode"] = quick ? "quick" : "full";
  out["records"] = plan.records;
  out["batch_size"] = kBatchSize;
  out["payload_bytes"] = kPayloadBytes;
  out["record_bytes"] = m.record_bytes;
  out["single_appends"] = plan.single_appends;
  out["proofs"] = plan.proofs;
  out["dir"] = work.path().string();
  out["figures"] = nlohmann::ordered_json::object();
  out["failed"] = nlohmann::ordered_json::array();
  for (const auto& f : figures) {
    nlohmann::ordered_json& entry = out["figures"][f.id];
    entry["value"] = f.value;
    entry["unit"] = f.unit;
    if (!f.target) continue;
    entry["target"] = {{"op", f.target->at_most ? "<=" : ">="}, {"bound", f.target->bound}};
    if (!f.target->basis.empty()) entry["target"]["basis"] = f.target->basis;
    entry["pass"] = f.passed();
    if (!f.passed()) out["failed"].push_back(f.id);
  }
  out["pass"] = out["failed"].empty();
  std::cout << out.dump(2) << '\n';
}

int run(const Options& options) {
  const Plan plan = make_plan(options);
  WorkDir work(options.dir);
  const Measurements m = measure(plan, work);
  const std::vector<Figure> figures = judge(m);
  if (options.json) print_json(plan, m, work, figures, options.quick);
  else print_table(plan, m, work, figures, options.quick);

  std::vector<std::string> failed;
  for (const auto& f : figures) {
    if (!f.passed()) failed.push_back(f.id);
  }
  if (failed.empty()) return 0;
  std::cerr << "ledger_bench: missed targets:";
  for (const auto& id : failed) std::cerr << ' ' << id;
  std::cerr << (options.quick ? " (quick run: sizes too small to judge, exiting 0)\n" : "\n");
  return options.quick ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Warden ledger throughput against raw LMDB and OpenSSL SHA-256"};
  auto* records = app.add_option("--records", options.records, "Records in the big ledger (default 1000000; 20000 with --quick)")
                      ->check(CLI::Range(uint64_t{1}, std::numeric_limits<uint64_t>::max()));
  app.add_flag("--quick", options.quick, "Small sizes for a CI smoke run; always exits 0 unless a step fails");
  app.add_option("--dir", options.dir, "Work directory, kept afterwards (default: a temp dir, removed)");
  app.add_flag("--json", options.json, "Print one JSON object instead of a table");
  CLI11_PARSE(app, argc, argv);
  options.records_given = records->count() > 0;
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::cerr << "ledger_bench: " << e.what() << '\n';
    return 2;
  }
}
