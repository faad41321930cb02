#include "runner/check/report_detection.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "common/strings.h"

namespace warden {
namespace {

// One simple command of a shell line: its words (quotes removed) and where its output goes.
struct SimpleCommand {
  std::vector<std::string> words;
  bool stdout_elsewhere = false;  // > file, >&2, &> file
  bool stderr_elsewhere = false;  // 2> file, 2>&1, &> file
  bool piped = false;             // its stdout feeds the next command
  bool after_cd = false;          // a `cd` ran before it in the line
};

// Splits `line` as /bin/sh would into simple commands, well enough to find the programs:
// no expansion, `$(...)` and backquotes stay inside their words.
class ShellSplitter {
 public:
  explicit ShellSplitter(std::string_view line) : line_(line) {}

  std::vector<SimpleCommand> split() {
    while (pos_ < line_.size()) {
      char c = line_[pos_];
      if (c == ' ' || c == '\t') {
        end_word();
        ++pos_;
      } else if (c == '\n' || c == ';' || c == '(' || c == ')' || c == '&' || c == '|') {
        operator_at(c);
      } else if (c == '>' || c == '<') {
        redirection(c);
      } else {
        word_char();
      }
    }
    end_command(false);
    return std::move(commands_);
  }

 private:
  void word_char() {
    char c = line_[pos_];
    in_word_ = true;
    if (c == '\\' && pos_ + 1 < line_.size()) {
      word_ += line_[pos_ + 1];
      pos_ += 2;
    } else if (c == '\'') {
      size_t end = line_.find('\'', pos_ + 1);
      if (end == std::string_view::npos) end = line_.size();
      word_ += line_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
    } else if (c == '"') {
      ++pos_;
      while (pos_ < line_.size() && line_[pos_] != '"') {
        if (line_[pos_] == '\\' && pos_ + 1 < line_.size()) ++pos_;
        word_ += line_[pos_++];
      }
      ++pos_;
    } else {
      word_ += c;
      ++pos_;
    }
  }

  void operator_at(char c) {
    if (c == '&' && pos_ + 1 < line_.size() && line_[pos_ + 1] == '>') {  // &> file
      end_word();
      current_.stdout_elsewhere = current_.stderr_elsewhere = true;
      pos_ += 2;
      skip_target();
      return;
    }
    end_word();
    bool doubled = pos_ + 1 < line_.size() && line_[pos_ + 1] == c;
    bool pipe = c == '|' && !doubled;
    if (pipe && pos_ + 1 < line_.size() && line_[pos_ + 1] == '&') {  // |& pipes stderr too
      current_.stderr_elsewhere = true;
      ++pos_;
    }
    pos_ += doubled ? 2 : 1;
    end_command(pipe);
  }

  // [N]>target, [N]>>target, [N]>&M, [N]<target: which of the command's streams go elsewhere.
  void redirection(char c) {
    int fd = c == '>' ? 1 : 0;
    if (in_word_ && !word_.empty() && std::all_of(word_.begin(), word_.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      fd = word_.size() == 1 ? word_[0] - '0' : -1;
      word_.clear();
      in_word_ = false;
    } else {
      end_word();
    }
    ++pos_;
    if (pos_ < line_.size() && (line_[pos_] == '>' || line_[pos_] == '|')) ++pos_;
    if (c == '<') {
      skip_target();
      return;
    }
    bool both = false;
    if (pos_ < line_.size() && line_[pos_] == '&') {
      ++pos_;
      size_t digit = pos_;
      while (pos_ < line_.size() && line_[pos_] >= '0' && line_[pos_] <= '9') ++pos_;
      // >&word with no number is bash's &> for both streams.
      if (digit == pos_) {
        both = fd == 1;
        skip_target();
      }
    } else {
      skip_target();
    }
    if (fd == 1 || both) current_.stdout_elsewhere = true;
    if (fd == 2 || both) current_.stderr_elsewhere = true;
  }

  void skip_target() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
    std::string saved = std::move(word_);
    word_.clear();
    while (pos_ < line_.size() && std::string_view(" \t\n;&|()<>").find(line_[pos_]) == std::string_view::npos) word_char();
    word_ = std::move(saved);
    in_word_ = !word_.empty();
  }

  void end_word() {
    if (in_word_) current_.words.push_back(std::move(word_));
    word_.clear();
    in_word_ = false;
  }

  void end_command(bool piped) {
    end_word();
    current_.piped = piped;
    bool cd = !current_.words.empty() && (current_.words[0] == "cd" || current_.words[0] == "pushd");
    if (!current_.words.empty() || piped) commands_.push_back(std::move(current_));
    current_ = SimpleCommand{};
    current_.after_cd = cd_seen_ = cd_seen_ || cd;
  }

  std::string_view line_;
  size_t pos_ = 0;
  std::string word_;
  bool in_word_ = false;
  bool cd_seen_ = false;
  SimpleCommand current_;
  std::vector<SimpleCommand> commands_;
};

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool assignment(const std::string& w) {
  size_t eq = w.find('=');
  if (eq == 0 || eq == std::string::npos) return false;
  return std::all_of(w.begin(), w.begin() + static_cast<long>(eq),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// The command's own words with assignments and wrappers (env, exec, timeout, ...) removed.
std::vector<std::string> program_words(const std::vector<std::string>& words) {
  size_t i = 0;
  while (i < words.size()) {
    const std::string& w = words[i];
    std::string name = basename_of(w);
    if (assignment(w)) {
      ++i;
    } else if (name == "exec" || name == "command" || name == "time" || name == "nohup") {
      ++i;
    } else if (name == "env" || name == "nice" || name == "stdbuf" || name == "timeout") {
      ++i;
      while (i < words.size() && (words[i].starts_with("-") || assignment(words[i]))) {
        // The wrappers' options that take a separate value.
        static constexpr std::string_view kWithValue[] = {"-s", "-k", "--signal", "--kill-after", "-n", "--adjustment",
                                                          "-u", "--unset", "-C", "--chdir", "-i", "-o", "-e"};
        bool takes_value = std::ranges::find(kWithValue, std::string_view(words[i])) != std::end(kWithValue);
        i += takes_value ? 2 : 1;
      }
      if (name == "timeout" && i < words.size()) ++i;  // the duration
    } else {
      break;
    }
  }
  return {words.begin() + static_cast<long>(i), words.end()};
}

bool is_python(const std::string& program) {
  if (!program.starts_with("python")) return false;
  return std::all_of(program.begin() + 6, program.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// The module of `python [options] -m MODULE args...`, and where its arguments start.
std::optional<std::pair<std::string, size_t>> python_module(const std::vector<std::string>& w) {
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "-m" && i + 1 < w.size()) return std::pair{w[i + 1], i + 2};
    if (a.starts_with("-m") && a.size() > 2) return std::pair{a.substr(2), i + 1};
    if (a == "-c" || !a.starts_with("-")) return std::nullopt;  // code or a script
    if (a == "-W" || a == "-X") ++i;
  }
  return std::nullopt;
}

// unittest's verbosity: the last -v/--verbose or -q/--quiet (short flags may be grouped).
bool unittest_verbose(const std::vector<std::string>& w, size_t from) {
  bool verbose = false;
  for (size_t i = from; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "--verbose") verbose = true;
    else if (a == "--quiet") verbose = false;
    else if (a.size() > 1 && a[0] == '-' && a[1] != '-' &&
             std::all_of(a.begin() + 1, a.end(), [](char c) { return std::string_view("vqfcb").find(c) != std::string_view::npos; })) {
      for (char c : a) {
        if (c == 'v') verbose = true;
        if (c == 'q') verbose = false;
      }
    }
  }
  return verbose;
}

// A --junitxml the pytest command names itself, or "".
std::string own_junitxml(const std::vector<std::string>& w, size_t from) {
  for (size_t i = from; i < w.size(); ++i) {
    for (std::string_view flag : {"--junitxml", "--junit-xml"}) {
      if (w[i] == flag && i + 1 < w.size()) return w[i + 1];
      if (w[i].starts_with(std::string(flag) + "=")) return w[i].substr(flag.size() + 1);
    }
  }
  return "";
}

DetectedReport pytest_report(const SimpleCommand& c, const std::vector<std::string>& w, size_t from) {
  std::string own = own_junitxml(w, from);
  if (own.empty()) return {"pytest", "", ""};
  // A relative path is the workspace's unless a cd came first; the default profile's
  // workspace is /workspace.
  bool in_workspace = own.starts_with("/workspace/");
  std::string path = in_workspace ? own.substr(11) : own;
  bool safe = !path.empty() && path[0] != '/' && std::ranges::none_of(split_path(path), [](std::string_view p) {
    return p.empty() || p == "." || p == "..";
  });
  if (safe && (in_workspace || !c.after_cd)) return {"junit", path, ""};
  return {"none", "", "pytest writes its --junitxml " + own + " where Warden cannot tell: give --report junit:PATH"};
}

// What one simple command, as the program it runs, reports; nullopt when it is no test runner.
std::optional<DetectedReport> runner_report(const SimpleCommand& c, int depth);

std::optional<DetectedReport> line_report(std::string_view line, int depth) {
  std::vector<DetectedReport> found;
  std::vector<SimpleCommand> commands = ShellSplitter(line).split();
  for (size_t i = 0; i < commands.size(); ++i) {
    auto r = runner_report(commands[i], depth);
    if (!r) continue;
    bool stream_out = r->format == "ctest" || r->format == "go-json";
    bool teed = i + 1 < commands.size() && !commands[i + 1].words.empty() && basename_of(commands[i + 1].words[0]) == "tee";
    if (stream_out && (commands[i].stdout_elsewhere || (commands[i].piped && !teed))) {
      *r = {"none", "", r->format + "'s stdout is redirected or piped away, so Warden cannot read its results: give --report"};
    } else if (r->format == "unittest" && commands[i].stderr_elsewhere) {
      *r = {"none", "", "unittest's stderr is redirected, so Warden cannot read its results: give --report"};
    }
    found.push_back(std::move(*r));
  }
  if (found.empty()) return std::nullopt;
  const DetectedReport& first = found.front();
  bool same = std::all_of(found.begin(), found.end(), [&](const DetectedReport& r) {
    return r.format == first.format && r.path == first.path && r.note == first.note && r.unittest_reporter == first.unittest_reporter;
  });
  // Several stream runners of one kind concatenate their results; two files or two kinds do not.
  if (found.size() == 1 || (same && first.format != "pytest" && first.format != "junit")) return first;
  return DetectedReport{"none", "", "the command runs several test runners: give --report"};
}

std::optional<DetectedReport> runner_report(const SimpleCommand& c, int depth) {
  std::vector<std::string> w = program_words(c.words);
  if (w.empty()) return std::nullopt;
  std::string program = basename_of(w[0]);
  if ((program == "sh" || program == "bash" || program == "dash") && w.size() > 2 && w[1] == "-c" && depth < 4) {
    return line_report(w[2], depth + 1);
  }
  if (program == "pytest" || program == "py.test" || program == "pytest-3") return pytest_report(c, w, 1);
  if (program == "ctest") {
    bool quiet = std::ranges::any_of(w, [](const std::string& a) { return a == "-Q" || a == "--quiet"; });
    if (quiet) return DetectedReport{"none", "", "ctest -Q prints no results: judged by its exit status alone"};
    return DetectedReport{"ctest", "", ""};
  }
  if (program == "go" && w.size() > 1 && w[1] == "test") {
    bool json = std::ranges::any_of(w, [](const std::string& a) { return a == "-json" || a == "--json" || a == "-json=true"; });
    if (json) return DetectedReport{"go-json", "", ""};
    return DetectedReport{"none", "", "go test without -json names no test: judged by its exit status alone (add -json)"};
  }
  if (is_python(program)) {
    auto module = python_module(w);
    if (!module) return std::nullopt;
    if (module->first == "pytest" || module->first == "py.test") return pytest_report(c, w, module->second);
    if (module->first == "unittest") {
      if (unittest_verbose(w, module->second)) return DetectedReport{"unittest", "", ""};
      const bool own_path = std::ranges::any_of(c.words, [](const std::string& word) { return word.starts_with("PYTHONPATH="); });
      if (own_path) {
        return DetectedReport{"none", "",
                              "unittest without -v names no test, and the command sets PYTHONPATH, through which Warden "
                              "would load its reporter: judged by its exit status alone (add -v)"};
      }
      return DetectedReport{"unittest", "", "", true};
    }
  }
  return std::nullopt;
}

}  // namespace

DetectedReport detect_report(std::string_view command) { return line_report(command, 0).value_or(DetectedReport{}); }

Result<CommandCheck> command_check(std::string name, const std::string& command, std::string_view report) {
  CommandCheck out{CheckSpec::shell(std::move(name), command), ""};
  if (report == "auto") {
    DetectedReport d = detect_report(command);
    out.spec.report_format = d.format;
    out.spec.report_path = d.path;
    out.spec.unittest_reporter = d.unittest_reporter;
    out.note = d.note;
  } else {
    size_t colon = report.find(':');
    out.spec.report_format = std::string(report.substr(0, colon));
    if (colon != std::string_view::npos) out.spec.report_path = std::string(report.substr(colon + 1));
  }
  // The spec's own rules judge the result, so --report accepts exactly what a checks file does.
  auto checked = CheckSpec::from_json(out.spec.to_json(), "--report " + std::string(report));
  if (!checked) return std::unexpected(checked.error());
  return out;
}

}  // namespace warden
