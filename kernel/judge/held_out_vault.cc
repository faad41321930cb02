#include "kernel/judge/held_out_vault.h"

#include <sys/stat.h>

#include <algorithm>

#include "common/encoding.h"
#include "common/file.h"
#include "common/json_reader.h"

namespace warden::kernel {
namespace {

// `dir` as a directory only its owner reaches (0700), created when missing.
Status private_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "cannot create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return std::unexpected(errno_error("chmod " + dir.string(), errno));
  return {};
}

std::string hex_of(const Digest& d) { return d.str().substr(std::string_view("sha256:").size()); }

}  // namespace

Json SealedRun::to_json() const {
  Json bodies_json = Json::object();
  for (const auto& [digest, bytes] : bodies) bodies_json[digest.str()] = base64_encode(bytes);
  return {{"run_result_sha256", run_result_sha256.str()}, {"run_result", run_result}, {"bodies", std::move(bodies_json)}};
}

Result<SealedRun> SealedRun::from_json(const Json& json) {
  JsonReader r(json, "sealed run");
  SealedRun s;
  r.digest("run_result_sha256", s.run_result_sha256);
  if (const Json* result = r.value("run_result", Json::value_t::object)) s.run_result = *result;
  if (const Json* bodies = r.value("bodies", Json::value_t::object)) {
    for (const auto& [name, value] : bodies->items()) {
      auto digest = Digest::parse(name);
      auto bytes = value.is_string() ? base64_decode(value.get<std::string>()) : Result<std::string>(fail(Errc::invalid_argument, "not a string"));
      if (!digest || !bytes || sha256(*bytes) != *digest) {
        r.fail("bodies", name + " is not the base64 of bytes with that digest");
        break;
      }
      s.bodies.emplace(*digest, std::move(*bytes));
    }
  }
  if (auto st = r.finish(); !st) return std::unexpected(st.error());
  return s;
}

std::filesystem::path HeldOutVault::bundle_dir(const Digest& bundle) const { return dir_ / hex_of(bundle); }

Status HeldOutVault::seal(const HeldOutBundle& bundle) const {
  if (Status st = private_dir(dir_); !st) return st;
  const std::filesystem::path here = bundle_dir(bundle.digest());
  if (Status st = private_dir(here); !st) return st;
  if (Status st = private_dir(here / "runs"); !st) return st;
  auto bytes = canonicalize(bundle.to_json());
  if (!bytes) return std::unexpected(bytes.error());
  return write_file_atomic(here / "bundle.json", *bytes, 0600);
}

Result<HeldOutBundle> HeldOutVault::open(const Digest& bundle) const {
  const std::filesystem::path file = bundle_dir(bundle) / "bundle.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return fail(Errc::not_found, "held-out bundle " + bundle.str() + " is not sealed in " + dir_.string());
  }
  auto text = read_file(file);
  if (!text) return std::unexpected(text.error());
  auto json = parse_json(*text);
  if (!json) return fail(Errc::corrupt, file.string() + ": " + json.error().message);
  auto parsed = HeldOutBundle::from_json(*json);
  if (!parsed) return fail(Errc::corrupt, file.string() + ": " + parsed.error().message);
  if (parsed->digest() != bundle) return fail(Errc::corrupt, file.string() + ": its files and salt no longer hash to " + bundle.str());
  return parsed;
}

Status HeldOutVault::seal_run(const Digest& bundle, const SealedRun& run) const {
  const std::filesystem::path runs_dir = bundle_dir(bundle) / "runs";
  if (Status st = private_dir(runs_dir); !st) return st;
  auto bytes = canonicalize(run.to_json());
  if (!bytes) return std::unexpected(bytes.error());
  return write_file_atomic(runs_dir / (hex_of(run.run_result_sha256) + ".json"), *bytes, 0600);
}

Result<std::vector<SealedRun>> HeldOutVault::runs(const Digest& bundle) const {
  std::vector<SealedRun> out;
  const std::filesystem::path runs_dir = bundle_dir(bundle) / "runs";
  std::error_code ec;
  if (!std::filesystem::is_directory(runs_dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(runs_dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  if (ec) return fail(Errc::io_error, runs_dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    auto text = read_file(file);
    if (!text) return std::unexpected(text.error());
    auto json = parse_json(*text);
    auto run = json ? SealedRun::from_json(*json) : Result<SealedRun>(std::unexpected(json.error()));
    if (!run) return fail(Errc::corrupt, file.string() + ": " + run.error().message);
    if (hex_of(run->run_result_sha256) + ".json" != file.filename().string()) {
      return fail(Errc::corrupt, file.string() + ": holds the run " + run->run_result_sha256.str());
    }
    out.push_back(std::move(*run));
  }
  return out;
}

std::optional<HeldOutBundle> HeldOutVault::sealed_like(const HeldOutBundle& bundle) const {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) return std::nullopt;
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    if (std::filesystem::exists(d / "revealed", ec) || std::filesystem::exists(d / "one-run", ec)) continue;
    auto digest = Digest::parse("sha256:" + d.filename().string());
    if (!digest) continue;
    auto sealed = open(*digest);
    if (!sealed || sealed->at != bundle.at || sealed->files.size() != bundle.files.size()) continue;
    bool same = true;
    for (size_t i = 0; i < bundle.files.size() && same; ++i) {
      const HeldOutFile &a = sealed->files[i], &b = bundle.files[i];
      same = a.path == b.path && a.mode == b.mode && a.content == b.content;
    }
    if (same) return std::move(*sealed);
  }
  return std::nullopt;
}

Status HeldOutVault::note_error(const Digest& bundle, std::string_view why) const {
  const std::filesystem::path file = bundle_dir(bundle) / "errors.log";
  std::string text;
  if (auto old = read_file(file)) text = std::move(*old);
  for (char c : why) text += c == '\n' ? ' ' : c;
  text += '\n';
  return write_file_atomic(file, text, 0600);
}

Status HeldOutVault::mark_revealed(const Digest& bundle) const {
  return write_file_atomic(bundle_dir(bundle) / "revealed", "", 0600);
}

bool HeldOutVault::revealed(const Digest& bundle) const {
  std::error_code ec;
  return std::filesystem::exists(bundle_dir(bundle) / "revealed", ec);
}

Status HeldOutVault::seal_for_run(const HeldOutBundle& bundle) const {
  // The marker first: a bundle must never be offered as reusable, even for a moment.
  if (Status st = private_dir(dir_); !st) return st;
  if (Status st = private_dir(bundle_dir(bundle.digest())); !st) return st;
  if (Status st = write_file_atomic(bundle_dir(bundle.digest()) / "one-run", "", 0600); !st) return st;
  return seal(bundle);
}

}  // namespace warden::kernel
