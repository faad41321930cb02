#include "runner/environment/environment_recipe.h"

#include <unistd.h>

#include <algorithm>

#include "common/encoding.h"
#include "common/file.h"
#include "common/json_reader.h"
#include "common/subprocess.h"
#include "runner/environment/tree_manifest.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

bool plain_relative(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  for (const auto& part : fs::path(name)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

// A Debian name: packages and suites are lowercase letters, digits and + - . (version or
// architecture qualifiers are not taken: the recipe names what, the build resolves which).
bool debian_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
  });
}

std::string tail(const std::string& text, size_t n = 2000) { return text.size() > n ? "..." + text.substr(text.size() - n) : text; }

void discard_tree(const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace

Result<EnvironmentRecipe> EnvironmentRecipe::from_json(const Json& json, std::map<std::string, std::string> inputs) {
  EnvironmentRecipe r;
  JsonReader top(json, "recipe");
  std::string format;
  top.string("format", format);
  if (top.ok() && format != kRecipeFormat) top.fail("format", "must be " + std::string(kRecipeFormat));
  if (const Json* debian = top.value("debian", Json::value_t::object)) {
    JsonReader d(*debian, top.path("debian"));
    d.string("suite", r.suite, false);
    d.string("variant", r.variant, false);
    d.strings("packages", r.packages, false);
    d.string("mirror", r.mirror, false);
    if (d.ok() && !debian_name(r.suite)) d.fail("suite", "must be a Debian suite name (bookworm)");
    static const std::vector<std::string> variants = {"essential", "apt", "minbase", "buildd", "required", "important", "standard"};
    if (d.ok() && std::find(variants.begin(), variants.end(), r.variant) == variants.end()) {
      d.fail("variant", "must be one of essential, apt, minbase, buildd, required, important, standard");
    }
    for (const auto& p : r.packages) {
      if (d.ok() && !debian_name(p)) d.fail("packages", "\"" + p + "\" is not a Debian package name");
    }
    if (d.ok() && !r.mirror.empty() && !r.mirror.starts_with("http://") && !r.mirror.starts_with("https://") &&
        !r.mirror.starts_with("file://")) {
      d.fail("mirror", "must be an http://, https:// or file:// URL");
    }
    top.adopt(d.finish());
  }
  if (const Json* prepare = top.value("prepare", Json::value_t::array, false)) {
    for (size_t i = 0; i < prepare->size() && top.ok(); ++i) {
      JsonReader s((*prepare)[i], top.path("prepare") + "[" + std::to_string(i) + "]");
      PrepareStep step;
      s.string("dir", step.dir);
      s.strings("inputs", step.inputs, false);
      s.strings("run", step.run);
      fs::path dir = step.dir;
      if (s.ok() && (!dir.is_absolute() || dir.lexically_normal() != dir || !step.dir.starts_with("/opt/") ||
                     step.dir.find("..") != std::string::npos)) {
        s.fail("dir", "must be a normalized absolute path below /opt/ (what a step makes there becomes part of the environment)");
      }
      for (const auto& in : step.inputs) {
        if (s.ok() && !plain_relative(in)) s.fail("inputs", "\"" + in + "\" must be a path beside the recipe, without '..'");
        if (s.ok() && !inputs.contains(in)) s.fail("inputs", "\"" + in + "\" was not given");
      }
      if (s.ok() && step.run.empty()) s.fail("run", "must name at least one command");
      top.adopt(s.finish());
      r.prepare.push_back(std::move(step));
    }
  }
  // Each step writes only a directory of its own, made by Warden for it: one inside (or
  // equal to) another step's could have been replaced by a link an earlier step planted,
  // and Warden, making and handing over the later step's directory, would follow it.
  for (size_t i = 0; i < r.prepare.size() && top.ok(); ++i) {
    for (size_t j = 0; j < r.prepare.size() && top.ok(); ++j) {
      const std::string& a = r.prepare[i].dir;
      const std::string& b = r.prepare[j].dir;
      if (i != j && (a == b || b.starts_with(a + "/"))) {
        top.fail("prepare", "step directories may not repeat or nest (" + a + ", " + b + ")");
      }
    }
  }
  top.string_map("env", r.env, false);
  for (const auto& [k, v] : r.env) {
    if (top.ok() && reserved_environment_variable(k)) top.fail("env", k + " is fixed by the sandbox");
  }
  if (Status s = top.finish(); !s) return std::unexpected(s.error());
  // Only the inputs a step names are part of the recipe.
  for (const auto& step : r.prepare) {
    for (const auto& in : step.inputs) r.inputs[in] = inputs.at(in);
  }
  return r;
}

Result<EnvironmentRecipe> EnvironmentRecipe::load(const fs::path& file) {
  auto text = read_file(file, 1 << 20);
  if (!text) return std::unexpected(text.error());
  Json json = Json::parse(*text, nullptr, false);
  if (json.is_discarded()) return std::unexpected(Error{Errc::invalid_argument, "recipe " + file.string() + ": not JSON"});
  std::map<std::string, std::string> inputs;
  if (json.is_object() && json.contains("prepare") && json["prepare"].is_array()) {
    for (const auto& step : json["prepare"]) {
      if (!step.is_object() || !step.contains("inputs") || !step["inputs"].is_array()) continue;
      for (const auto& in : step["inputs"]) {
        if (!in.is_string() || !plain_relative(in.get<std::string>())) continue;
        auto bytes = read_file(file.parent_path() / in.get<std::string>(), uint64_t{64} << 20);
        if (!bytes) return std::unexpected(bytes.error().with_context("recipe " + file.string() + ": input " + in.get<std::string>()));
        inputs[in.get<std::string>()] = std::move(*bytes);
      }
    }
  }
  auto r = from_json(json, std::move(inputs));
  if (!r) return std::unexpected(r.error().with_context("recipe " + file.string()));
  return r;
}

Json EnvironmentRecipe::to_json() const {
  Json steps = Json::array();
  for (const auto& s : prepare) steps.push_back({{"dir", s.dir}, {"inputs", s.inputs}, {"run", s.run}});
  Json input_sha = Json::object();
  for (const auto& [name, bytes] : inputs) input_sha[name] = sha256(bytes).str();
  Json debian = {{"suite", suite}, {"variant", variant}, {"packages", packages}};
  if (!mirror.empty()) debian["mirror"] = mirror;
  return {{"format", kRecipeFormat}, {"debian", debian}, {"prepare", steps}, {"env", env}, {"input_sha256", input_sha}};
}

Digest EnvironmentRecipe::digest() const { return sha256(canonicalize(to_json()).value()); }

Json EnvironmentRecipe::record() const {
  Json j = to_json();
  j.erase("input_sha256");
  Json in = Json::object();
  for (const auto& [name, bytes] : inputs) in[name] = base64_encode(bytes);
  j["inputs_base64"] = in;
  return j;
}

Result<EnvironmentRecipe> EnvironmentRecipe::from_record(const Json& record) {
  if (!record.is_object()) return std::unexpected(Error{Errc::invalid_argument, "recipe record: not an object"});
  Json j = record;
  std::map<std::string, std::string> inputs;
  if (j.contains("inputs_base64")) {
    if (!j["inputs_base64"].is_object()) return std::unexpected(Error{Errc::invalid_argument, "recipe record: inputs_base64"});
    for (const auto& [name, v] : j["inputs_base64"].items()) {
      auto bytes = v.is_string() ? base64_decode(v.get<std::string>()) : Result<std::string>(std::unexpected(Error{Errc::invalid_argument, "not a string"}));
      if (!bytes) return std::unexpected(Error{Errc::invalid_argument, "recipe record: input " + name + " is not base64"});
      inputs[name] = std::move(*bytes);
    }
    j.erase("inputs_base64");
  }
  return from_json(j, std::move(inputs));
}

namespace {

Status run_logged(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  std::string_view what) {
  SubprocessSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.timeout = std::chrono::minutes(30);
  std::string log;
  spec.output = [&](std::string_view bytes) {
    log.append(bytes);
    if (log.size() > 65536) log.erase(0, log.size() - 32768);
  };
  auto r = run_subprocess(spec);
  if (!r) return std::unexpected(r.error().with_context(what));
  if (r->ending != SubprocessResult::Ending::exited || r->exit_code != 0) {
    return std::unexpected(Error{Errc::verification_failed, std::string(what) + " failed (" +
                                                                (r->ending == SubprocessResult::Ending::timed_out ? "timed out" : "exit " + std::to_string(r->exit_code)) +
                                                                "):\n" + tail(log)});
  }
  return {};
}

// One prepare step in a sandbox of its own on `root`: the host's network, the step's
// directory the only writable path, the default profile's limits.
Status run_step(const fs::path& root, const PrepareStep& step, const EnvironmentRecipe& recipe, const RecipeBuildOptions& options) {
  auto profile = SandboxProfile::load("default");
  if (!profile) return std::unexpected(profile.error());
  profile->network = true;
  // The checks' profile resolves names from its own /etc/hosts only; a step with network
  // resolves through the host's resolv.conf too.
  for (auto& f : profile->files) {
    if (f.path == "/etc/nsswitch.conf") f.content = "passwd: files\ngroup: files\nhosts: files dns\n";
  }
  profile->workspace = step.dir;
  profile->toolchain_dirs.clear();
  auto sandbox = Sandbox::create(std::move(*profile), options.host);
  if (!sandbox) return std::unexpected(sandbox.error());
  if (Status s = sandbox->use_system_root(root); !s) return s;
  fs::path dir = root / fs::path(step.dir).relative_path();
  std::error_code ec;
  // The directory is new, below parents that are the base's own (no step wrote them): nothing
  // a step planted lies on the way.
  if (fs::exists(fs::symlink_status(dir, ec))) {
    return std::unexpected(Error{Errc::invalid_argument, "prepare " + step.dir + ": the base already holds it"});
  }
  for (fs::path at = dir.parent_path(); at != root && at.has_relative_path(); at = at.parent_path()) {
    if (fs::is_symlink(fs::symlink_status(at, ec))) {
      return std::unexpected(Error{Errc::invalid_argument, "prepare " + step.dir + ": " + at.string() + " is a link"});
    }
  }
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected(Error{Errc::io_error, "making " + dir.string() + ": " + ec.message()});
  for (const auto& in : step.inputs) {
    fs::path dest = dir / in;
    fs::create_directories(dest.parent_path(), ec);
    if (Status s = write_file_atomic(dest, recipe.inputs.at(in), 0644); !s) return s;
  }
  if (options.host.drop) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (::lchown(e.path().c_str(), options.host.uid, options.host.gid) != 0) return std::unexpected(errno_error("chown " + e.path().string(), errno));
    }
    if (::chown(dir.c_str(), options.host.uid, options.host.gid) != 0) return std::unexpected(errno_error("chown " + dir.string(), errno));
  }
  for (const auto& command : step.run) {
    if (options.progress) options.progress("prepare " + step.dir + ": " + command);
    SandboxRequest req;
    req.argv = {"/bin/sh", "-c", command};
    req.workspace_dir = dir;
    req.env = recipe.env;
    std::string log;
    req.live = [&](int, std::string_view bytes) {
      log.append(bytes);
      if (log.size() > 65536) log.erase(0, log.size() - 32768);
    };
    auto run = sandbox->run(req);
    if (!run) return std::unexpected(run.error().with_context("prepare " + step.dir + ": " + command));
    if (run->exit_code != 0 || run->timed_out || run->output_limit_exceeded) {
      return std::unexpected(Error{Errc::verification_failed, "prepare " + step.dir + ": `" + command + "` " +
                                                                  (run->timed_out ? "timed out" : "exited " + std::to_string(run->exit_code)) +
                                                                  ":\n" + tail(log)});
    }
  }
  return {};
}

}  // namespace

Result<RecipeBuild> build_recipe(EnvironmentStore& store, const EnvironmentRecipe& recipe, const RecipeBuildOptions& options) {
  const Digest key = recipe.digest();
  RecipeBuild out;
  std::optional<Environment> previous;
  if (auto held = store.built_from(key); held && *held) {
    if (!options.rebuild) {
      out.environment = std::move(**held);
      out.reused = true;
      return out;
    }
    previous = std::move(**held);
  }
  auto work = store.make_temp("build-");
  if (!work) return std::unexpected(work.error());
  fs::path root = *work / "root";
  auto finish = [&](auto result) {
    discard_tree(*work);
    return result;
  };
  std::vector<std::string> argv = {"mmdebstrap", "--quiet", "--variant=" + recipe.variant};
  std::string include;
  for (const auto& p : recipe.packages) include += (include.empty() ? "" : ",") + p;
  if (!include.empty()) argv.push_back("--include=" + include);
  argv.push_back(recipe.suite);
  argv.push_back(root.string());
  if (!recipe.mirror.empty()) argv.push_back(recipe.mirror);
  if (options.progress) options.progress("mmdebstrap " + recipe.suite + " (" + recipe.variant + (include.empty() ? "" : ": " + include) + ")");
  // SOURCE_DATE_EPOCH makes mmdebstrap's own outputs reproducible.
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8", "SOURCE_DATE_EPOCH=0", "HOME=/root"};
  if (Status s = run_logged(argv, env, "mmdebstrap"); !s) return finish(std::unexpected(s.error()));
  // Files a Debian bootstrap writes that say when or where it ran, not what it holds.
  for (const char* f : {"etc/machine-id", "var/cache/ldconfig/aux-cache", "etc/hostname", "etc/resolv.conf"}) {
    std::error_code ec;
    fs::remove(root / f, ec);
  }
  {
    std::error_code ec;
    for (const char* d : {"var/log", "var/cache/apt", "var/lib/apt/lists", "tmp", "run"}) {
      for (const auto& e : fs::directory_iterator(root / d, ec)) fs::remove_all(e.path(), ec);
    }
  }
  for (const auto& step : recipe.prepare) {
    if (Status s = run_step(root, step, recipe, options); !s) return finish(std::unexpected(s.error()));
  }
  if (options.progress) options.progress("storing the environment");
  Json source = {{"kind", "recipe"}, {"recipe_sha256", key.str()}, {"recipe", recipe.record()}};
  auto env_made = store.import_tree(root, recipe.env, source);
  if (!env_made) return finish(std::unexpected(env_made.error()));
  if (Status s = store.remember_recipe(key, env_made->digest); !s) return finish(std::unexpected(s.error()));
  out.environment = std::move(*env_made);
  if (previous && previous->digest != out.environment.digest) {
    out.previous = previous->digest;
    auto a = store.manifest(previous->digest);
    auto b = store.manifest(out.environment.digest);
    if (a && b) out.differing = differing_paths(*a, *b);
  }
  return finish(out);
}

Result<NamedEnvironment> resolve_environment(const std::string& named, const fs::path& relative_to, const fs::path& store_dir,
                                             const std::function<void(std::string_view)>& progress) {
  NamedEnvironment out;
  if (named.starts_with("sha256:")) {
    auto d = Digest::parse(named);
    if (!d) return std::unexpected(Error{Errc::invalid_argument, "environment " + named + ": not a sha256: digest"});
    out.digest = *d;
    return out;
  }
  fs::path file = named;
  if (file.is_relative()) file = relative_to / file;
  auto recipe = EnvironmentRecipe::load(file);
  if (!recipe) return std::unexpected(recipe.error());
  auto store = EnvironmentStore::open(store_dir.empty() ? EnvironmentStore::default_dir() : store_dir);
  if (!store) return std::unexpected(store.error());
  RecipeBuildOptions options;
  options.progress = progress;
  auto built = build_recipe(*store, *recipe, options);
  if (!built) return std::unexpected(built.error().with_context("building the environment " + file.string()));
  out.digest = built->environment.digest;
  out.recipe_record = recipe->record();
  return out;
}

Result<Environment> import_oci_image(EnvironmentStore& store, const fs::path& image, std::string_view tag,
                                     const std::map<std::string, std::string>& env) {
  auto work = store.make_temp("oci-");
  if (!work) return std::unexpected(work.error());
  auto finish = [&](auto result) {
    discard_tree(*work);
    return result;
  };
  std::error_code ec;
  fs::path layout = image;
  if (fs::is_regular_file(image, ec)) {
    // An OCI archive is a tar of a layout.
    layout = *work / "layout";
    fs::create_directories(layout, ec);
    if (Status s = run_logged({"tar", "-xf", image.string(), "-C", layout.string()}, {"PATH=/usr/bin:/bin"}, "unpacking " + image.string());
        !s) {
      return finish(std::unexpected(s.error()));
    }
  }
  if (!fs::exists(layout / "index.json", ec)) {
    return finish(std::unexpected(Error{Errc::invalid_argument, image.string() + " is not an OCI image layout (no index.json) or archive of one"}));
  }
  std::string ref = layout.string();
  if (!tag.empty()) ref += ":" + std::string(tag);
  fs::path rootfs = *work / "rootfs";
  // umoci applies the layers in order with their whiteouts; --rootless keeps it from needing
  // to chown (ownership is not part of an environment's content).
  if (Status s = run_logged({"umoci", "raw", "unpack", "--rootless", "--image", ref, rootfs.string()},
                            {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8"}, "umoci unpack " + ref);
      !s) {
    return finish(std::unexpected(s.error()));
  }
  Json source = {{"kind", "oci"}, {"image", image.string()}, {"tag", std::string(tag)}};
  return finish(store.import_tree(rootfs, env, source));
}

}  // namespace warden
