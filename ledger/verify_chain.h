// What the two forms of verification (verify.h) share, private to ledger/: the chain checker
// (checkpoints, the prev chain, the Merkle tree), the blob references records make and the
// blob store's scan, the unsigned tail and the choice of keys. verify.cc verifies a ledger
// directory (its records hashed in parallel), verify_export.cc an export.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ledger/checkpoint.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"
#include "ledger/verify.h"

namespace warden::detail {

// Few distinct kinds: a vector searched linearly beats hashing every record's kind.
using KindCounts = std::vector<std::pair<std::string, uint64_t>>;

inline void count_kind(KindCounts& counts, std::string_view kind, uint64_t n = 1) {
  for (auto& [k, c] : counts) {
    if (k == kind) {
      c += n;
      return;
    }
  }
  counts.emplace_back(std::string(kind), n);
}

// The part of verification both forms share: checkpoints, the prev chain, the tree.
class ChainChecker {
 public:
  ChainChecker(std::string origin, std::vector<NoteVerifier> keys, VerifyReport& report)
      : origin_(std::move(origin)), keys_(std::move(keys)), report_(report) {}

  bool signed_anything() const { return !expected_roots_.empty(); }

  bool problem(std::string object, std::optional<uint64_t> seq, std::string message) {
    if (!report_.problem) report_.problem = VerifyProblem{std::move(object), seq, std::move(message)};
    return false;
  }
  bool record_problem(uint64_t seq, std::string message) {
    return problem("record " + std::to_string(seq), seq, std::move(message));
  }

  // Signatures and bodies first: a checkpoint that is not genuine proves nothing. `kept`
  // are the auditor's own notes: the ledger must reach each of them with the same root.
  bool load_checkpoints(const std::vector<StoredCheckpoint>& stored, const std::vector<std::string>& kept) {
    for (const auto& cp : stored) {
      auto body = open_checkpoint(cp.note, "checkpoint " + std::to_string(cp.size));
      if (!body) return false;
      if (body->size != cp.size) {
        return problem("checkpoint " + std::to_string(cp.size), {},
                       "signed tree size " + std::to_string(body->size) + " differs from where it is stored");
      }
      expected_roots_.emplace(cp.size, Expected{body->root, false});
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      auto body = open_checkpoint(kept[i], "kept checkpoint #" + std::to_string(i + 1));
      if (!body) return false;
      expected_roots_.emplace(body->size, Expected{body->root, true});
    }
    next_ = expected_roots_.begin();
    return check_due_checkpoints();
  }

  // The prev chain. `prior_verified`: the previous record's bytes were already checked
  // against a stored hash, so a mismatch is this record's fault; otherwise either may be.
  bool check_prev(uint64_t seq, const Digest& prev, bool prior_verified) {
    if (seq == 0) return prev.is_zero() || record_problem(0, "the first record's prev must be all zeros");
    if (prev == last_) return true;
    std::string detail = "prev " + prev.str() + " does not match the recomputed hash of record " +
                         std::to_string(seq - 1) + " (" + last_.str() + ")";
    if (prior_verified) return record_problem(seq, detail);
    return record_problem(seq - 1, "record " + std::to_string(seq) + "'s " + detail + ": record " +
                                       std::to_string(seq - 1) + " was altered, or record " + std::to_string(seq) +
                                       "'s prev was");
  }

  // Adds the next leaf; parent(level, index, left, right) supplies each completed subtree
  // root and sink(level, index, hash) sees every new stored node.
  template <typename Parent, typename Sink>
  bool append_leaf(const Digest& leaf, Parent&& parent, Sink&& sink) {
    range_.append_with(leaf, std::forward<Parent>(parent), std::forward<Sink>(sink));
    last_ = leaf;
    report_.records = range_.size();
    return !report_.problem && check_due_checkpoints();
  }

  // One record from its canonical bytes, hashing everything here (the export path).
  bool add(const RecordView& r, std::string_view canonical) {
    uint64_t expected = range_.size();
    if (r.seq != expected) {
      return record_problem(expected, r.seq > expected ? "missing: the next record present is " + std::to_string(r.seq)
                                                       : "out of order: found seq " + std::to_string(r.seq) + " where " +
                                                             std::to_string(expected) +
                                                             " belongs (duplicated or reordered)");
    }
    if (!check_prev(r.seq, r.prev, false)) return false;
    Digest leaf = hasher_.leaf(canonical);
    report_.bytes_hashed += canonical.size() + 1;
    return append_leaf(
        leaf, [this](unsigned, uint64_t, const Digest& l, const Digest& r) { return hash_node(l, r); },
        [](unsigned, uint64_t, const Digest&) {});
  }

  Digest hash_node(const Digest& left, const Digest& right) {
    report_.bytes_hashed += 65;
    return hasher_.node(left, right);
  }

  // Checkpoints beyond the last record mean records were removed; a kept one, that this
  // copy does not extend what the auditor saw.
  bool finish() {
    if (next_ != expected_roots_.end()) {
      const uint64_t want = next_->first;
      const std::string have = std::to_string(range_.size());
      if (next_->second.kept) {
        return problem("kept checkpoint " + std::to_string(want), range_.size(),
                       "signs a tree of " + std::to_string(want) + " records but this ledger holds only " + have +
                           ": it does not extend the kept checkpoint (cut short, or an older copy)");
      }
      return problem("checkpoint " + std::to_string(want), range_.size(),
                     "signs a tree of " + std::to_string(want) + " records but only " + have +
                         " are present (records missing from the end)");
    }
    report_.root = range_.root(hasher_);
    report_.signed_size = expected_roots_.empty() ? 0 : expected_roots_.rbegin()->first;
    report_.unsigned_records = range_.size() - report_.signed_size;
    return true;
  }

  uint64_t size() const { return range_.size(); }

 private:
  struct Expected {
    Digest root;
    bool kept = false;  // the auditor's note, not one stored in the ledger
  };

  // The body of a note signed by a trusted key and naming this ledger's origin.
  std::optional<Checkpoint> open_checkpoint(std::string_view note, const std::string& object) {
    auto opened = open_note(note, keys_);
    auto body = opened ? Checkpoint::parse_body(opened->text) : Result<Checkpoint>(std::unexpected(opened.error()));
    if (!body) {
      problem(object, {}, body.error().message);
      return std::nullopt;
    }
    if (body->origin != origin_) {
      problem(object, {}, "origin \"" + body->origin + "\" is not this ledger's (\"" + origin_ + "\")");
      return std::nullopt;
    }
    return std::move(*body);
  }

  bool check_due_checkpoints() {
    while (next_ != expected_roots_.end() && next_->first == range_.size()) {
      if (range_.root(hasher_) != next_->second.root) {
        uint64_t last = next_->first == 0 ? 0 : next_->first - 1;
        std::optional<uint64_t> seq = next_->first == 0 ? std::optional<uint64_t>() : last;
        if (next_->second.kept) {
          return problem("kept checkpoint " + std::to_string(next_->first), seq,
                         "the root recomputed over records 0.." + std::to_string(last) +
                             " differs from the kept checkpoint's: this ledger does not extend the history the "
                             "auditor kept (rewritten at or before seq " + std::to_string(last) + ")");
        }
        return problem("checkpoint " + std::to_string(next_->first), seq,
                       "signed root does not match the root recomputed over records 0.." + std::to_string(last) +
                           " (a record at or before seq " + std::to_string(last) + " was altered)");
      }
      ++(next_->second.kept ? report_.kept_checkpoints : report_.checkpoints);
      ++next_;
    }
    return true;
  }

  std::string origin_;
  std::vector<NoteVerifier> keys_;
  VerifyReport& report_;
  std::multimap<uint64_t, Expected> expected_roots_;
  std::multimap<uint64_t, Expected>::iterator next_ = expected_roots_.end();
  MerkleHasher hasher_;
  CompactRange range_;
  Digest last_;  // zero before the first record
};

// What records refer to in the blob store, gathered in seq order while the records are
// checked (one pass), then held against the blob store: a blob's first referrer is the
// record a missing or altered blob is reported at.
class ReferenceLog {
 public:
  // The references of record `seq`; false (with a problem) when it names a blob wrongly.
  bool add(ChainChecker& checker, uint64_t seq, std::string_view kind, const Result<std::vector<BlobReference>>& refs) {
    if (!refs) return checker.record_problem(seq, std::string(kind) + " record: " + refs.error().message);
    for (const auto& ref : *refs) {
      ++count_;
      if (seen_.insert(ref.digest).second) first_uses_.push_back(FirstUse{ref.digest, seq, std::string(kind), ref.field});
    }
    return true;
  }

  // `intact`: every blob present, and whether its bytes hash to its name.
  bool check(ChainChecker& checker, const std::map<Digest, bool>& intact, VerifyReport& report) const {
    for (const auto& use : first_uses_) {
      auto blob = intact.find(use.digest);
      if (blob != intact.end() && blob->second) continue;
      std::string what = blob == intact.end() ? "which is missing from the blob store"
                                              : "whose content does not match its digest (altered or swapped)";
      return checker.record_problem(use.seq, use.kind + " record: " + use.field + " names blob " + use.digest.str() +
                                                 ", " + what);
    }
    report.blob_references = count_;
    return true;
  }

 private:
  struct FirstUse {
    Digest digest;
    uint64_t seq = 0;
    std::string kind, field;
  };
  std::vector<FirstUse> first_uses_;
  std::set<Digest> seen_;
  uint64_t count_ = 0;
};

// The blob store, hashed once. A blob that fails its own name is reported at the record that
// refers to it when one does, else as itself.
class BlobScan {
 public:
  // A blob file or key that is not a digest at all.
  void malformed(std::string object, std::string why) {
    if (!first_bad_) first_bad_ = VerifyProblem{std::move(object), {}, std::move(why)};
  }
  void add(const Digest& name, std::string_view bytes, VerifyReport& report) {
    bool ok = sha256(bytes) == name;
    intact_[name] = ok;
    report.bytes_hashed += bytes.size();
    if (ok) ++report.blobs;
    else malformed("blob " + name.str(), "content does not match its digest (altered or swapped)");
  }
  bool finish(ChainChecker& checker, const ReferenceLog& refs, VerifyReport& report) const {
    if (!refs.check(checker, intact_, report)) return false;
    if (first_bad_) return checker.problem(first_bad_->object, {}, first_bad_->message);
    return true;
  }

 private:
  std::map<Digest, bool> intact_;
  std::optional<VerifyProblem> first_bad_;
};

// With a trusted key, what no signature covers is not evidence (verify_chain.cc).
void check_signed_tail(ChainChecker& checker, const VerifyOptions& options, VerifyReport& report);
// The keys checkpoints are checked against: the caller's, else the one the ledger records.
Result<std::vector<NoteVerifier>> choose_keys(const std::vector<NoteVerifier>& given, const std::string& recorded,
                                              VerifyReport& report);

}  // namespace warden::detail
