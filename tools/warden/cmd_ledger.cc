// warden ledger ...: create, append to, inspect, prove, checkpoint, verify, export, import.
#include <sys/stat.h>

#include <filesystem>
#include <iostream>

#include "common/clock.h"
#include "common/file.h"
#include "ledger/export.h"
#include "ledger/ledger.h"
#include "ledger/ledger_keys.h"
#include "ledger/verify.h"
#include "tools/warden/cli.h"
#include "tools/warden/record_listing.h"
#include "tools/warden/signer_keys.h"
#include "tools/warden/verify_flags.h"

namespace warden::cli {
namespace {

namespace fs = std::filesystem;

Json hashes_json(const std::vector<Digest>& proof) {
  Json out = Json::array();
  for (const auto& d : proof) out.push_back(d.hex());
  return out;
}

Result<Ledger> open_ledger(const std::string& dir, Ledger::Mode mode, Clock& clock) {
  return Ledger::open(dir, mode, clock);
}

struct Options {
  std::string dir, out, kind, payload = "", signer_key, origin, file, digest;
  VerifyFlags verify;
  uint64_t seq = 0, size = 0, size1 = 0, size2 = 0, max_payload = uint64_t{1} << 20;
  bool json = false;
  // ledger show: SEQ or a range, and the filters that make it a listing
  std::string records, run;
  std::vector<std::string> kinds;
  bool pretty = false;
};

int run_init(const Options& o) {
  std::error_code ec;
  if (fs::exists(fs::path(o.dir) / "data.mdb", ec)) {
    return report_error(Error{Errc::already_exists, "a ledger already exists in " + o.dir}, o.json);
  }
  std::string origin = o.origin.empty() ? "warden.local/" + fs::absolute(o.dir).filename().string() : o.origin;
  // The key: --signer-key's, else one left in DIR/signer.key, else a new one named after the origin.
  auto signer = signer_for_ledger(o.dir, o.signer_key, origin, "--signer-key");
  if (!signer) return report_error(signer.error(), o.json);
  if (o.origin.empty()) {
    origin = signer->name();
  } else if (signer->name() != o.origin) {
    // C2SP tlog-checkpoint: the origin line is the name of the key that signs the checkpoint.
    return report_error(Error{Errc::invalid_argument,
                              "--origin " + o.origin + " is not the signer key's name (" + signer->name() +
                                  "): a checkpoint's origin must be the name of the key that signs it (C2SP "
                                  "tlog-checkpoint). Give --origin " + signer->name() + ", or a key of that name: "
                                  "warden key generate " + o.origin + " --signer-out FILE"},
                        o.json);
  }
  LedgerCreateOptions create{origin, signer->verifier().encoded(), o.max_payload, &*signer};
  if (auto st = Ledger::create(o.dir, create); !st) return report_error(st.error(), o.json);
  const fs::path key_path = ledger_signer_key_path(o.dir), pub_path = ledger_verifier_key_path(o.dir);
  if (o.json) {
    print_json({{"dir", o.dir},
                {"origin", origin},
                {"verifier_key", create.verifier_key},
                {"signer_key_file", key_path.string()},
                {"verifier_key_file", pub_path.string()}});
  } else {
    std::cout << "initialized ledger " << o.dir << "\norigin " << origin << "\nverifier_key " << create.verifier_key
              << "\nsigner key stored in " << key_path.string() << " (mode 0600)\nverifier key stored in "
              << pub_path.string() << "\n";
  }
  return kOk;
}

int run_append(const Options& o) {
  Json payload = Json::object();
  if (!o.payload.empty()) {
    auto text = read_file(o.payload, uint64_t{64} << 20);
    if (!text) return report_error(text.error(), o.json);
    auto parsed = parse_json(*text, o.payload == "-" ? "payload (standard input)" : "payload file " + o.payload);
    if (!parsed) return report_error(parsed.error(), o.json);
    payload = std::move(*parsed);
  }
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_write, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto appended = ledger->append(o.kind, payload);
  if (!appended) return report_error(appended.error(), o.json);
  if (o.json) print_json({{"seq", appended->seq}, {"hash", appended->hash.hex()}});
  else std::cout << appended->seq << " " << appended->hash.hex() << "\n";
  return kOk;
}

int run_show(const Options& o) {
  RecordQuery query;
  query.kinds = o.kinds;
  query.run = o.run;
  std::optional<uint64_t> one;  // a single SEQ: the record in full
  if (!o.records.empty()) {
    if (o.records.find("..") != std::string::npos) {
      if (auto st = parse_seq_range(o.records, query); !st) return report_error(st.error(), o.json);
    } else {
      auto seq = parse_seq(o.records);
      if (!seq) return report_error(seq.error(), o.json);
      one = *seq;
    }
  }
  const bool listing = !one && (!o.records.empty() || !o.kinds.empty() || !o.run.empty());
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_only, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto snap = ledger->snapshot();
  if (!snap) return report_error(snap.error(), o.json);
  if (listing) {
    RecordFormat format = o.json ? RecordFormat::json_lines : o.pretty ? RecordFormat::pretty : RecordFormat::line;
    auto printed = print_records(*snap, query, format, std::cout);
    if (!printed) return report_error(printed.error(), o.json);
    if (o.json) print_json({{"records", *printed}, {"size", snap->size()}});
    return kOk;
  }
  if (one) {
    auto record = snap->record(*one);
    if (!record) return report_error(record.error(), o.json);
    auto hash = snap->record_hash(*one);
    if (!hash) return report_error(hash.error(), o.json);
    if (o.json) {
      print_json({{"seq", *one}, {"hash", hash->hex()}, {"record", record->to_json()}});
    } else {
      std::cout << "seq " << record->seq << "\nkind " << record->kind << "\nts " << record->ts << "\nhash "
                << hash->hex() << "\nprev " << record->prev.hex() << "\npayload";
      if (o.pretty) std::cout << "\n" << indented_payload(record->payload, "  ");
      else std::cout << " " << record->payload << "\n";
    }
    return kOk;
  }
  auto root = snap->root();
  auto checkpoints = snap->checkpoints();
  auto kinds = snap->kind_counts();
  if (!root) return report_error(root.error(), o.json);
  if (!checkpoints) return report_error(checkpoints.error(), o.json);
  if (!kinds) return report_error(kinds.error(), o.json);
  if (o.json) {
    Json k = Json::object();
    for (const auto& [kind, count] : *kinds) k[kind] = count;
    Json sizes = Json::array();
    for (const auto& cp : *checkpoints) sizes.push_back(cp.size);
    print_json({{"dir", o.dir},
                {"origin", ledger->origin()},
                {"verifier_key", ledger->verifier_key()},
                {"size", snap->size()},
                {"root", root->hex()},
                {"kinds", k},
                {"checkpoint_sizes", sizes}});
  } else {
    std::cout << "origin " << ledger->origin() << "\nverifier_key " << ledger->verifier_key() << "\nsize "
              << snap->size() << "\nroot " << root->hex() << "\ncheckpoints " << checkpoints->size() << "\n";
    for (const auto& [kind, count] : *kinds) std::cout << "kind " << kind << " " << count << "\n";
  }
  return kOk;
}

int run_prove(const Options& o, bool has_size) {
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_only, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto snap = ledger->snapshot();
  if (!snap) return report_error(snap.error(), o.json);
  uint64_t size = has_size ? o.size : snap->size();
  auto proof = snap->inclusion_proof(o.seq, size);
  if (!proof) return report_error(proof.error(), o.json);
  auto leaf = snap->record_hash(o.seq);
  auto root = snap->root_at(size);
  if (!leaf) return report_error(leaf.error(), o.json);
  if (!root) return report_error(root.error(), o.json);
  if (o.json) {
    print_json({{"index", o.seq}, {"size", size}, {"leaf_hash", leaf->hex()}, {"root", root->hex()}, {"proof", hashes_json(*proof)}});
  } else {
    std::cout << "index " << o.seq << "\nsize " << size << "\nleaf_hash " << leaf->hex() << "\nroot " << root->hex()
              << "\nproof " << join_proof(*proof) << "\n";
  }
  return kOk;
}

int run_consistency(const Options& o) {
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_only, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto snap = ledger->snapshot();
  if (!snap) return report_error(snap.error(), o.json);
  auto proof = snap->consistency_proof(o.size1, o.size2);
  if (!proof) return report_error(proof.error(), o.json);
  auto r1 = snap->root_at(o.size1);
  auto r2 = snap->root_at(o.size2);
  if (!r1) return report_error(r1.error(), o.json);
  if (!r2) return report_error(r2.error(), o.json);
  if (o.json) {
    print_json({{"size1", o.size1}, {"size2", o.size2}, {"root1", r1->hex()}, {"root2", r2->hex()}, {"proof", hashes_json(*proof)}});
  } else {
    std::cout << "size1 " << o.size1 << "\nsize2 " << o.size2 << "\nroot1 " << r1->hex() << "\nroot2 " << r2->hex()
              << "\nproof " << join_proof(*proof) << "\n";
  }
  return kOk;
}

int run_checkpoint(const Options& o) {
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_write, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto signer = signer_of_ledger(o.dir, o.signer_key, "--signer-key");
  if (!signer) return report_error(signer.error(), o.json);
  auto cp = ledger->checkpoint(*signer);
  if (!cp) return report_error(cp.error(), o.json);
  if (o.json) print_json({{"size", cp->size}, {"note", cp->note}});
  else std::cout << cp->note;
  return kOk;
}

int run_verify(const Options& o) {
  auto options = verify_options(o.verify);
  if (!options) return report_error(options.error(), o.json);
  auto report = verify_path(o.dir, *options);
  if (!report) return report_error(report.error(), o.json);
  for (const auto& w : report->warnings) std::cerr << "warden: warning: " << w << "\n";
  if (o.json) {
    Json out = {{"ok", report->ok()},
                {"records", report->records},
                {"checkpoints", report->checkpoints},
                {"kept_checkpoints", report->kept_checkpoints},
                {"blobs", report->blobs},
                {"blob_references", report->blob_references},
                {"signed_size", report->signed_size},
                {"unsigned_records", report->unsigned_records},
                {"unsigned_tail", unsigned_tail_json(report->signed_size, report->unsigned_records)},
                {"key_source", report->key_source},
                {"warnings", report->warnings}};
    if (report->ok()) out["root"] = report->root.hex();
    if (report->problem) {
      out["problem"] = {{"object", report->problem->object}, {"message", report->problem->message}};
      if (report->problem->seq) out["problem"]["seq"] = *report->problem->seq;
    }
    print_json(out);
  } else if (report->ok()) {
    std::cout << "OK: " << report->records << " records, " << report->checkpoints << " signed checkpoints";
    if (report->kept_checkpoints > 0) std::cout << ", " << report->kept_checkpoints << " kept checkpoints extended";
    std::cout << ", " << report->blobs << " blobs verified, " << report->blob_references << " blob references resolved\n";
    if (report->unsigned_records > 0) {
      std::cout << "unsigned tail: " << report->unsigned_records << " records (seq " << report->signed_size << ".."
                << report->records - 1 << ") after the last signed checkpoint\n";
    }
    std::cout << "root " << report->root.hex() << "\n";
  } else {
    std::cout << "FAILED: " << report->problem->object << ": " << report->problem->message << "\n";
    if (report->problem->seq) std::cout << "first bad seq " << *report->problem->seq << "\n";
  }
  return report->ok() ? kOk : kVerificationFailed;
}

int run_export(const Options& o) {
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_only, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto summary = export_ledger(*ledger, o.out);
  if (!summary) return report_error(summary.error(), o.json);
  if (o.json) {
    print_json({{"out", o.out}, {"records", summary->records}, {"checkpoints", summary->checkpoints},
                {"blobs", summary->blobs}, {"root", summary->root.hex()}});
  } else {
    std::cout << "exported " << summary->records << " records, " << summary->checkpoints << " checkpoints, "
              << summary->blobs << " blobs to " << o.out << "\nroot " << summary->root.hex() << "\n";
  }
  return kOk;
}

int run_import(const Options& o) {
  auto options = verify_options(o.verify);
  if (!options) return report_error(options.error(), o.json);
  auto summary = import_ledger(o.out, o.dir, *options);
  if (!summary) return report_error(summary.error(), o.json);
  if (o.json) {
    print_json({{"dir", o.dir}, {"records", summary->records}, {"checkpoints", summary->checkpoints},
                {"blobs", summary->blobs}, {"root", summary->root.hex()}});
  } else {
    std::cout << "imported " << summary->records << " records, " << summary->checkpoints << " checkpoints, "
              << summary->blobs << " blobs into " << o.dir << "\nroot " << summary->root.hex() << "\n";
  }
  return kOk;
}

int run_blob_put(const Options& o) {
  auto bytes = read_file(o.file, uint64_t{1} << 31);
  if (!bytes) return report_error(bytes.error(), o.json);
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_write, clock);
  if (!ledger) return report_error(ledger.error(), o.json);
  auto digest = ledger->put_blob(*bytes);
  if (!digest) return report_error(digest.error(), o.json);
  if (o.json) print_json({{"digest", digest->str()}, {"bytes", bytes->size()}});
  else std::cout << digest->str() << "\n";
  return kOk;
}

int run_blob_get(const Options& o) {
  auto digest = Digest::parse(o.digest);
  if (!digest) return report_error(digest.error(), false);
  SystemClock clock;
  auto ledger = open_ledger(o.dir, Ledger::Mode::read_only, clock);
  if (!ledger) return report_error(ledger.error(), false);
  auto snap = ledger->snapshot();
  if (!snap) return report_error(snap.error(), false);
  auto bytes = snap->blob(*digest);
  if (!bytes) return report_error(bytes.error(), false);
  std::cout.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  return kOk;
}

}  // namespace

void add_ledger_commands(CLI::App& app, Action& action) {
  auto* ledger = app.add_subcommand("ledger", "The tamper-evident LMDB ledger");
  ledger->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto dir_arg = [&](CLI::App* cmd) { cmd->add_option("DIR", o->dir, "Ledger directory")->required(); };
  auto json_flag = [&](CLI::App* cmd) { cmd->add_flag("--json", o->json, "Print JSON"); };
  auto bind = [&action, o](CLI::App* cmd, std::function<int(const Options&)> run) {
    cmd->callback([&action, o, run] { action = [o, run] { return run(*o); }; });
  };

  auto* init = ledger->add_subcommand(
      "init", "Create an empty ledger in DIR (and its missing parents). Without --signer-key a new key named after "
              "the origin is generated. The ledger's keys live in DIR, where every command finds them: DIR/signer.key "
              "(mode 0600) signs its checkpoints, DIR/signer.pub is the verifier key to publish. (build, propose, "
              "pipeline run and plan commit create a missing ledger the same way.)");
  dir_arg(init);
  init->add_option("--signer-key", o->signer_key, "File holding the signer key for checkpoints (a copy is kept in DIR/signer.key)");
  init->add_option("--origin", o->origin,
                   "Checkpoint origin line: the signer key's name, as C2SP requires (default: the key's name, or "
                   "warden.local/<dir name> for a new key)");
  init->add_option("--max-payload-bytes", o->max_payload, "Largest canonical payload a record may carry")
      ->capture_default_str();
  json_flag(init);
  bind(init, run_init);

  auto* append = ledger->add_subcommand("append", "Append one record durably; prints its seq and record hash");
  dir_arg(append);
  append->add_option("--kind", o->kind, "Record kind: a-z, 0-9, '_', '.', '-'")->required();
  append->add_option("--payload", o->payload, "JSON object file ('-' for standard input; default {})");
  json_flag(append);
  bind(append, run_append);

  auto* show = ledger->add_subcommand(
      "show", "Summarize the ledger; print record SEQ in full; or list records: a range A..B (both included; A.. "
              "and ..B run to an end), --kind, --run, or any of them together. A listing prints one line per "
              "record (SEQ KIND PAYLOAD), --pretty indents payloads, --json prints JSON Lines: one object per record "
              "with seq, kind, ts, hash, prev and payload.");
  dir_arg(show);
  show->add_option("SEQ", o->records, "A record number, or a range A..B, A.., ..B");
  show->add_option("--kind", o->kinds, "List only records of this kind (repeatable)")->allow_extra_args(false);
  show->add_option("--run", o->run, "List only the records of this run (build, propose or pipeline run id)");
  show->add_flag("--pretty", o->pretty, "Print payloads indented, one field per line");
  json_flag(show);
  bind(show, run_show);

  auto* verify = ledger->add_subcommand(
      "verify", "Verify a ledger directory or an export: chain, Merkle nodes, checkpoint roots and signatures, "
                "blob digests, and every blob a record refers to (present, hashing right). With --key, records after "
                "the last signed checkpoint fail unless --allow-unsigned-tail, and a ledger with no signed checkpoint "
                "fails. Exit 0 only when all of it holds; otherwise names the first bad seq or object.");
  verify->add_option("PATH", o->dir, "Ledger directory or export directory")->required();
  add_verify_flags(verify, o->verify, "Trusted verifier key or key file (repeatable; default: the ledger's own)");
  json_flag(verify);
  bind(verify, run_verify);

  auto* prove = ledger->add_subcommand("prove", "Print the inclusion proof of record SEQ");
  dir_arg(prove);
  prove->add_option("SEQ", o->seq, "Record sequence number")->required();
  auto* size_opt = prove->add_option("--size", o->size, "Tree size to prove against (default: current size)");
  json_flag(prove);
  prove->callback([&action, o, size_opt] { action = [o, has = size_opt->count() > 0] { return run_prove(*o, has); }; });

  auto* consistency = ledger->add_subcommand("consistency", "Print the consistency proof between tree sizes");
  dir_arg(consistency);
  consistency->add_option("SIZE1", o->size1, "Older tree size (> 0)")->required();
  consistency->add_option("SIZE2", o->size2, "Newer tree size")->required();
  json_flag(consistency);
  bind(consistency, run_consistency);

  auto* checkpoint = ledger->add_subcommand("checkpoint", "Sign and store a checkpoint of the current tree; print the note");
  dir_arg(checkpoint);
  checkpoint->add_option("--signer-key", o->signer_key, "Signer key file (default: the ledger's DIR/signer.key)");
  json_flag(checkpoint);
  bind(checkpoint, run_checkpoint);

  auto* exp = ledger->add_subcommand("export", "Write the portable form: ledger.json, records.jsonl, checkpoints/, blobs/");
  dir_arg(exp);
  exp->add_option("OUT", o->out, "Export directory (must not exist)")->required();
  json_flag(exp);
  bind(exp, run_export);

  auto* imp = ledger->add_subcommand("import", "Verify an export completely, then build a ledger from it in DIR");
  imp->add_option("EXPORT", o->out, "Export directory")->required();
  dir_arg(imp);
  add_verify_flags(imp, o->verify, "Trusted verifier key or key file (repeatable; default: the export's own)");
  json_flag(imp);
  bind(imp, run_import);

  auto* blob = ledger->add_subcommand("blob", "The content-addressed blob store");
  blob->require_subcommand(1);
  auto* put = blob->add_subcommand("put", "Store FILE's bytes; prints sha256:<hex>");
  dir_arg(put);
  put->add_option("FILE", o->file, "File to store ('-' for standard input)")->required();
  json_flag(put);
  bind(put, run_blob_put);
  auto* get = blob->add_subcommand("get", "Write the blob's bytes to standard output, verified");
  dir_arg(get);
  get->add_option("DIGEST", o->digest, "sha256:<hex>")->required();
  bind(get, run_blob_get);
}

}  // namespace warden::cli
