// warden env build|import|list|show|gc: environments, the read-only root file systems checks
// run in instead of the host's /usr, named by the digest of their content
// (runner/environment). Each subcommand opens a store (--env-store), calls it and prints.
#include <unistd.h>

#include <iomanip>
#include <iostream>

#include "runner/environment/environment_recipe.h"
#include "tools/warden/cli.h"
#include "tools/warden/env_flags.h"
#include "tools/warden/run_view.h"

namespace warden::cli {
namespace {

namespace fs = std::filesystem;

struct Options {
  std::string store;
  bool json = false;
  std::string recipe;  // build
  bool rebuild = false;
  std::string dir;  // import
  std::string oci;
  std::string tag;
  std::vector<std::string> env;
  std::string digest;  // show
  std::optional<uint64_t> max_bytes;  // gc
  std::optional<size_t> max_count;
  std::vector<std::string> remove;
};

// The short spelling `env list` shows and every subcommand accepts.
std::string short_digest(const Digest& d) { return d.hex().substr(0, 12); }

std::string source_kind(const Environment& e) {
  return e.source.contains("kind") && e.source["kind"].is_string() ? e.source["kind"].get<std::string>() : "-";
}

Json summary(const Environment& e) {
  return {{"digest", e.digest.str()}, {"tree", e.tree.str()}, {"files", e.files}, {"bytes", e.bytes}, {"root", e.root.string()}};
}

int run_build(const Options& o) {
  const SandboxHost host = SandboxHost::detect();
  // The prepare steps run sandboxed on the tree being built, below the store.
  auto store = open_env_store(o.store, host.drop ? std::optional<uid_t>(host.uid) : std::nullopt);
  if (!store) return report_error(store.error(), o.json);
  auto recipe = EnvironmentRecipe::load(o.recipe);
  if (!recipe) return report_error(recipe.error(), o.json);
  auto earlier = store->built_from(recipe->digest());
  if (!earlier) return report_error(earlier.error(), o.json);
  RecipeBuildOptions options;
  options.rebuild = o.rebuild;
  options.host = host;
  options.progress = [](std::string_view line) { std::cerr << "warden: env: " << line << "\n"; };
  auto built = build_recipe(*store, *recipe, options);
  if (!built) return report_error(built.error(), o.json);
  const bool compared = o.rebuild && earlier->has_value() && !built->reused;
  if (o.json) {
    Json out = summary(built->environment);
    out["recipe"] = recipe->digest().str();
    out["reused"] = built->reused;
    if (compared) out["matches_previous"] = !built->previous.has_value();
    if (built->previous) {
      out["previous"] = built->previous->str();
      out["differing"] = built->differing;
    }
    print_json(out);
    return kOk;
  }
  std::cout << built->environment.digest.str() << "\n";
  if (built->reused) std::cerr << "warden: env: built before from this recipe (--rebuild builds it again)\n";
  if (compared && !built->previous) std::cout << "same as the earlier build of this recipe\n";
  if (built->previous) {
    std::cout << "differs from the earlier build " << built->previous->str() << " at:\n";
    for (const auto& p : built->differing) std::cout << "  /" << p << "\n";
  }
  return kOk;
}

int run_import(const Options& o) {
  if (o.dir.empty() == o.oci.empty()) {
    return report_error(Error{Errc::invalid_argument, "env import: give a directory or --oci IMAGE (one of them)"}, o.json, kUsage);
  }
  if (!o.tag.empty() && o.oci.empty()) return report_error(Error{Errc::invalid_argument, "env import: --tag goes with --oci"}, o.json, kUsage);
  auto env = parse_env_assignments(o.env);
  if (!env) return report_error(env.error(), o.json);
  auto store = open_env_store(o.store);
  if (!store) return report_error(store.error(), o.json);
  // Absolute, so the record's source says where it came from wherever it is read.
  std::error_code ec;
  const fs::path dir = o.dir.empty() ? fs::path() : fs::absolute(o.dir, ec);
  auto imported = o.oci.empty() ? store->import_tree(dir, *env, {{"kind", "directory"}, {"path", dir.string()}})
                                : import_oci_image(*store, fs::absolute(o.oci, ec), o.tag, *env);
  if (!imported) return report_error(imported.error(), o.json);
  if (o.json) {
    Json out = summary(*imported);
    out["source"] = imported->source;
    print_json(out);
    return kOk;
  }
  std::cout << imported->digest.str() << "\n";
  return kOk;
}

int run_list(const Options& o) {
  auto store = open_env_store(o.store);
  if (!store) return report_error(store.error(), o.json);
  auto envs = store->list();
  if (!envs) return report_error(envs.error(), o.json);
  if (o.json) {
    // Most recently used first: "order" 0 is the last used.
    for (size_t i = 0; i < envs->size(); ++i) {
      Json item = summary((*envs)[i]);
      item["order"] = i;
      item["source"] = (*envs)[i].source.contains("kind") ? (*envs)[i].source["kind"] : Json();
      item["created_ms"] = (*envs)[i].created_ms;
      print_item("environment", item);
    }
    print_json({{"environments", envs->size()}, {"store", store->dir().string()}});
    return kOk;
  }
  if (envs->empty()) {
    std::cout << "no environments in " << store->dir().string() << "\n";
    return kOk;
  }
  auto row = [](std::string_view digest, std::string_view files, std::string_view bytes, std::string_view kind, std::string_view created) {
    std::cout << std::left << std::setw(14) << digest << std::right << std::setw(8) << files << std::setw(14) << bytes << "  "
              << std::left << std::setw(10) << kind << created << "\n";
  };
  row("ENVIRONMENT", "FILES", "BYTES", "SOURCE", "CREATED (UTC)");
  for (const auto& e : *envs) row(short_digest(e.digest), std::to_string(e.files), std::to_string(e.bytes), source_kind(e), utc(e.created_ms));
  return kOk;
}

int run_show(const Options& o) {
  auto store = open_env_store(o.store);
  if (!store) return report_error(store.error(), o.json);
  auto env = find_stored_environment(*store, o.digest);
  if (!env) return report_error(env.error(), o.json);
  Json record = env->to_json();
  record["root"] = env->root.string();
  if (o.json) {
    print_json(record);
    return kOk;
  }
  std::cout << record.dump(2) << "\n";
  return kOk;
}

int run_gc(const Options& o) {
  auto store = open_env_store(o.store);
  if (!store) return report_error(store.error(), o.json);
  std::vector<Digest> removed;
  for (const auto& text : o.remove) {
    auto env = find_stored_environment(*store, text);
    if (!env) return report_error(env.error(), o.json);
    if (Status s = store->remove(env->digest); !s) return report_error(s.error(), o.json);
    removed.push_back(env->digest);
  }
  // With --remove alone nothing else is collected: only the objects no environment links.
  EnvironmentStore::Budget budget;
  if (!o.remove.empty()) budget = {UINT64_MAX, SIZE_MAX};
  if (o.max_bytes) budget.max_bytes = *o.max_bytes;
  if (o.max_count) budget.max_count = *o.max_count;
  auto report = store->gc(budget);
  if (!report) return report_error(report.error(), o.json);
  removed.insert(removed.end(), report->removed.begin(), report->removed.end());
  if (o.json) {
    Json list = Json::array(), in_use = Json::array();
    for (const auto& d : removed) list.push_back(d.str());
    for (const auto& d : report->in_use) in_use.push_back(d.str());
    print_json({{"removed", list},
                {"in_use", in_use},
                {"objects_kept_for_fetch", report->kept_for_fetch},
                {"objects_removed", report->objects_removed},
                {"bytes_freed", report->bytes_freed},
                {"kept", report->kept},
                {"bytes_kept", report->bytes_kept}});
    return kOk;
  }
  for (const auto& d : removed) std::cout << "removed " << d.str() << "\n";
  for (const auto& d : report->in_use) std::cout << "kept " << d.str() << ": in use by a running check\n";
  if (report->kept_for_fetch) std::cout << "kept every unlinked file: a fetch is storing files for an install\n";
  std::cout << "freed " << report->objects_removed << " files, " << report->bytes_freed << " bytes; kept " << report->kept
            << " environments, " << report->bytes_kept << " bytes\n";
  return kOk;
}

}  // namespace

void add_env_commands(CLI::App& app, Action& action) {
  auto* env = app.add_subcommand(
      "env",
      "Environments: read-only root file systems named by the digest of their content, which checks run in instead of "
      "the host's /usr (warden run --environment, warden sandbox exec --environment)");
  env->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto common = [&](CLI::App* cmd) {
    cmd->add_option("--env-store", o->store, std::string(kEnvStoreFlagHelp));
    cmd->add_flag("--json", o->json, "Print JSON Lines");
  };
  auto bind = [&action, o](CLI::App* cmd, int (*run)(const Options&)) {
    cmd->callback([&action, o, run] { action = [o, run] { return run(*o); }; });
  };
  const std::string digest_help = "An environment: sha256:<hex>, or at least 8 hex characters of it as warden env list shows";

  auto* build = env->add_subcommand(
      "build",
      "Build an environment from a recipe (a Debian base made by mmdebstrap, then its prepare commands, sandboxed with "
      "network) and store it; print its digest. A recipe built before is not built again unless --rebuild, which "
      "says whether the new build matches the earlier one or which paths differ (package versions are resolved when "
      "it builds). Progress goes to stderr. Needs mmdebstrap and network.");
  build->add_option("RECIPE", o->recipe, "The recipe (JSON, warden.environment-recipe/v1); its prepare inputs beside it")
      ->required()
      ->check(CLI::ExistingFile);
  build->add_flag("--rebuild", o->rebuild, "Build again even when the store built this recipe before, and compare");
  common(build);
  bind(build, run_build);

  auto* import = env->add_subcommand(
      "import",
      "Store a directory tree, or an OCI image (a layout directory or an archive of one, unpacked with umoci), as an "
      "environment; print its digest. Its files become read-only (0444, or 0555 when anyone could execute them), "
      "owners and times are dropped, devices, sockets and fifos left out, and the contents of its proc/, sys/ and "
      "dev/ skipped. A check runs on it only when it holds usr/.");
  import->add_option("DIR", o->dir, "The directory to import (the new root)")->check(CLI::ExistingDirectory);
  import->add_option("--oci", o->oci, "Import this OCI image instead of a directory")->check(CLI::ExistingPath);
  import->add_option("--tag", o->tag, "The image's tag in the layout's index (default: its only image)");
  import->add_option("--env", o->env,
                     "NAME=VALUE: a variable checks get in this environment (repeatable; part of its digest; the "
                     "sandbox's fixed variables and WARDEN_* are refused)");
  common(import);
  bind(import, run_import);

  auto* list = env->add_subcommand(
      "list", "List the stored environments, most recently used first: digest (12 hex), files, bytes, source, created");
  common(list);
  bind(list, run_list);

  auto* show = env->add_subcommand("show", "Print a stored environment's record: digest, tree, variables, size, and how it was made");
  show->add_option("DIGEST", o->digest, digest_help)->required();
  common(show);
  bind(show, run_show);

  auto* gc = env->add_subcommand(
      "gc",
      "Remove environments, least recently used first, until the store holds at most --max-count of them and their "
      "distinct files take at most --max-bytes (defaults 20 and 20 GiB), then every stored file none of them uses. "
      "With --remove, only the environments named (and then the files only they used), unless a bound is also given.");
  gc->add_option("--max-bytes", o->max_bytes, "At most this many bytes of distinct files kept");
  gc->add_option("--max-count", o->max_count, "At most this many environments kept");
  gc->add_option("--remove", o->remove, digest_help + " to remove (repeatable)");
  common(gc);
  bind(gc, run_gc);
}

}  // namespace warden::cli
