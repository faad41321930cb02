// warden merkle ...: RFC 6962 roots and proofs over arbitrary leaves, for auditing any log.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <iostream>

#include "common/encoding.h"
#include "common/file.h"
#include "ledger/merkle.h"
#include "tools/warden/cli.h"

namespace warden::cli {
namespace {

// What one --leaves input may hold. The leaves are read a line at a time and each is hashed
// as it arrives, so memory follows the tree (two digests a leaf), not the input; these bound
// the tree, one line, and the time spent hashing.
constexpr uint64_t kMaxLeaves = uint64_t{1} << 24;
constexpr uint64_t kMaxLeafHexBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxLeavesInputBytes = uint64_t{4} << 30;

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// One hex-encoded leaf per line; a final newline does not start another leaf, so the
// empty leaf is an empty line. A byte that cannot be part of a leaf is refused where it
// stands, without reading further (a device like /dev/zero never ends).
Result<MemoryTree> load_leaves(const std::string& path) {
  bool from_stdin = path == "-";
  std::string name = from_stdin ? "standard input" : path;
  UniqueFd owned;
  int fd = STDIN_FILENO;
  if (!from_stdin) {
    owned.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned) return std::unexpected(errno_error(path, errno));
    fd = owned.get();
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return fail(Errc::invalid_argument, path + ": is a directory, expected a file");
  }
  MemoryTree tree;
  std::string line;  // the hex of the leaf being read
  uint64_t line_no = 1, total = 0;
  auto bad = [&](Errc code, const std::string& why) { return fail(code, name + " line " + std::to_string(line_no) + ": " + why); };
  auto end_line = [&]() -> Status {
    std::string_view hex = line;
    if (!hex.empty() && hex.back() == '\r') hex.remove_suffix(1);
    auto data = from_hex(hex);
    if (!data) return bad(Errc::invalid_argument, data.error().message);
    if (tree.size() >= kMaxLeaves) return bad(Errc::limit_exceeded, "more than " + std::to_string(kMaxLeaves) + " leaves");
    tree.append_data(*data);
    line.clear();
    ++line_no;
    return {};
  };
  std::array<char, 65536> buf;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(errno_error(name, errno));
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > kMaxLeavesInputBytes) {
      return fail(Errc::limit_exceeded, name + ": larger than the limit of " + std::to_string(kMaxLeavesInputBytes) + " bytes");
    }
    for (char c : std::string_view(buf.data(), static_cast<size_t>(n))) {
      if (c == '\n') {
        if (auto st = end_line(); !st) return std::unexpected(st.error());
        continue;
      }
      if (!is_lower_hex(c) && c != '\r') {
        return bad(Errc::invalid_argument, "invalid hex character at offset " + std::to_string(line.size()) +
                                               " (lowercase 0-9a-f only)");
      }
      if (line.size() >= kMaxLeafHexBytes) {
        return bad(Errc::limit_exceeded, "longer than the limit of " + std::to_string(kMaxLeafHexBytes) + " hex digits");
      }
      line += c;
    }
  }
  if (!line.empty()) {
    if (auto st = end_line(); !st) return std::unexpected(st.error());
  }
  return tree;
}

int print_verdict(bool ok, bool json, const char* what) {
  if (json) print_json({{"ok", ok}});
  else std::cout << (ok ? "OK: " : "FAILED: ") << what << (ok ? " verifies" : " does not verify") << "\n";
  return ok ? kOk : kVerificationFailed;
}

}  // namespace

void add_merkle_commands(CLI::App& app, Action& action) {
  auto* merkle = app.add_subcommand("merkle", "RFC 6962 Merkle roots and proofs over arbitrary leaves");
  merkle->require_subcommand(1);

  struct Options {
    std::string leaves, leaf_hash, root, root1, root2, proof;
    uint64_t index = 0, size = 0, size1 = 0, size2 = 0;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  const char* leaves_help = "File with one hex-encoded leaf per line ('-' for standard input)";

  auto* root = merkle->add_subcommand("root", "Print the tree size and root hash of the leaves");
  root->add_option("--leaves", o->leaves, leaves_help)->required();
  root->add_flag("--json", o->json, "Print JSON");
  root->callback([o, &action] {
    action = [o]() -> int {
      auto tree = load_leaves(o->leaves);
      if (!tree) return report_error(tree.error(), o->json);
      Digest r = tree->root();
      if (o->json) print_json({{"size", tree->size()}, {"root", r.hex()}});
      else std::cout << "size " << tree->size() << "\nroot " << r.hex() << "\n";
      return kOk;
    };
  });

  auto* inclusion = merkle->add_subcommand("inclusion", "Print the inclusion proof of leaf INDEX");
  inclusion->add_option("--leaves", o->leaves, leaves_help)->required();
  inclusion->add_option("INDEX", o->index, "Zero-based leaf index")->required();
  auto* size_opt = inclusion->add_option("--size", o->size, "Tree size to prove against (default: all leaves)");
  inclusion->add_flag("--json", o->json, "Print JSON");
  inclusion->callback([o, size_opt, &action] {
    action = [o, given = size_opt->count() > 0]() -> int {
      auto tree = load_leaves(o->leaves);
      if (!tree) return report_error(tree.error(), o->json);
      uint64_t size = given ? o->size : tree->size();
      if (size > tree->size()) {
        return report_error({Errc::invalid_argument, "--size exceeds the number of leaves"}, o->json);
      }
      auto proof = inclusion_proof(*tree, o->index, size);
      if (!proof) return report_error(proof.error(), o->json);
      auto leaf = tree->node(0, o->index);
      auto r = tree->root_at(size);
      if (!leaf || !r) return report_error(!leaf ? leaf.error() : r.error(), o->json);
      if (o->json) {
        Json path = Json::array();
        for (const auto& d : *proof) path.push_back(d.hex());
        print_json({{"index", o->index}, {"size", size}, {"leaf_hash", leaf->hex()}, {"root", r->hex()}, {"proof", path}});
      } else {
        std::cout << "index " << o->index << "\nsize " << size << "\nleaf_hash " << leaf->hex() << "\nroot " << r->hex()
                  << "\nproof " << join_proof(*proof) << "\n";
      }
      return kOk;
    };
  });

  auto* consistency = merkle->add_subcommand("consistency", "Print the consistency proof between two tree sizes");
  consistency->add_option("--leaves", o->leaves, leaves_help)->required();
  consistency->add_option("SIZE1", o->size1, "Older tree size")->required();
  consistency->add_option("SIZE2", o->size2, "Newer tree size")->required();
  consistency->add_flag("--json", o->json, "Print JSON");
  consistency->callback([o, &action] {
    action = [o]() -> int {
      auto tree = load_leaves(o->leaves);
      if (!tree) return report_error(tree.error(), o->json);
      if (o->size2 > tree->size()) return report_error({Errc::invalid_argument, "SIZE2 exceeds the number of leaves"}, o->json);
      auto proof = consistency_proof(*tree, o->size1, o->size2);
      if (!proof) return report_error(proof.error(), o->json);
      auto r1 = tree->root_at(o->size1);
      auto r2 = tree->root_at(o->size2);
      if (o->json) {
        Json path = Json::array();
        for (const auto& d : *proof) path.push_back(d.hex());
        print_json({{"size1", o->size1}, {"size2", o->size2}, {"root1", r1->hex()}, {"root2", r2->hex()}, {"proof", path}});
      } else {
        std::cout << "size1 " << o->size1 << "\nsize2 " << o->size2 << "\nroot1 " << r1->hex() << "\nroot2 " << r2->hex()
                  << "\nproof " << join_proof(*proof) << "\n";
      }
      return kOk;
    };
  });

  auto* vi = merkle->add_subcommand("verify-inclusion", "Verify an inclusion proof (RFC 9162 2.1.3.2); exit 0 iff valid");
  vi->add_option("--leaf-hash", o->leaf_hash, "RFC 6962 leaf hash, SHA-256(0x00 || leaf)")->required();
  vi->add_option("--index", o->index, "Leaf index")->required();
  vi->add_option("--size", o->size, "Tree size")->required();
  vi->add_option("--root", o->root, "Root hash at that size")->required();
  vi->add_option("--proof", o->proof, "Comma-separated proof hashes (empty for a one-leaf tree)");
  vi->add_flag("--json", o->json, "Print {\"ok\": ...}");
  vi->callback([o, &action] {
    action = [o]() -> int {
      auto leaf = parse_hex_digest(o->leaf_hash, "--leaf-hash");
      auto r = parse_hex_digest(o->root, "--root");
      auto proof = parse_proof(o->proof);
      if (!leaf) return report_error(leaf.error(), o->json);
      if (!r) return report_error(r.error(), o->json);
      if (!proof) return report_error(proof.error(), o->json);
      return print_verdict(verify_inclusion(*leaf, o->index, o->size, *proof, *r), o->json, "inclusion proof");
    };
  });

  auto* vc = merkle->add_subcommand("verify-consistency", "Verify a consistency proof (RFC 9162 2.1.4.2); exit 0 iff valid");
  vc->add_option("--size1", o->size1, "Older tree size")->required();
  vc->add_option("--size2", o->size2, "Newer tree size")->required();
  vc->add_option("--root1", o->root1, "Root hash at size1")->required();
  vc->add_option("--root2", o->root2, "Root hash at size2")->required();
  vc->add_option("--proof", o->proof, "Comma-separated proof hashes");
  vc->add_flag("--json", o->json, "Print {\"ok\": ...}");
  vc->callback([o, &action] {
    action = [o]() -> int {
      auto r1 = parse_hex_digest(o->root1, "--root1");
      auto r2 = parse_hex_digest(o->root2, "--root2");
      auto proof = parse_proof(o->proof);
      if (!r1) return report_error(r1.error(), o->json);
      if (!r2) return report_error(r2.error(), o->json);
      if (!proof) return report_error(proof.error(), o->json);
      return print_verdict(verify_consistency(o->size1, o->size2, *r1, *r2, *proof), o->json, "consistency proof");
    };
  });
}

}  // namespace warden::cli
