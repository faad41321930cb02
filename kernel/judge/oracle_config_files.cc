// The test sections of configuration files: pyproject.toml (a lenient TOML reader that knows
// tables, dotted keys, strings and multi-line values, enough to find whole key/value
// statements), setup.cfg and tox.ini (configparser's INI) and package.json (JSON).
#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "common/canonical_json.h"
#include "common/strings.h"
#include "kernel/judge/oracle_sections.h"

namespace warden::kernel {
namespace {


// --- pyproject.toml ---------------------------------------------------------------------

constexpr std::array<std::string_view, 4> kPyprojectPrefixes = {"tool.pytest", "tool.coverage", "tool.tox",
                                                                "project.entry-points.pytest11"};

// A table or key under a test prefix; or a key that is a whole dotted prefix of one (`tool =
// {pytest = ...}` holds a test section in its inline table).
bool pyproject_test_key(std::string_view key, bool is_value) {
  for (std::string_view prefix : kPyprojectPrefixes) {
    if (key.starts_with(prefix)) return true;
    if (is_value && prefix.starts_with(key) && prefix.size() > key.size() && prefix[key.size()] == '.') return true;
  }
  return false;
}

// "a . \"b.c\" . d" -> a.b.c.d (quotes dropped: TOML's quoted keys name the same key).
std::string normalize_toml_key(std::string_view key) {
  std::string out, part;
  char quote = 0;
  auto flush = [&] {
    out += (out.empty() ? "" : ".") + std::string(trim(part));
    part.clear();
  };
  for (char c : key) {
    if (quote) {
      if (c == quote) quote = 0; else part += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '.') {
      flush();
    } else {
      part += c;
    }
  }
  flush();
  return out;
}

// Reads one TOML statement from lines[i...]: the text without comments, up to where strings
// and brackets close. Advances i past it.
std::string read_toml_statement(const std::vector<std::string_view>& lines, size_t& i) {
  std::string out;
  int depth = 0;
  std::string_view multi;  // the open multi-line string's delimiter
  for (; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    char quote = 0;
    for (size_t k = 0; k < line.size(); ++k) {
      char c = line[k];
      if (!multi.empty()) {
        if (line.substr(k).starts_with(multi)) {
          out += multi;
          k += multi.size() - 1;
          multi = {};
        } else {
          out += c;
        }
        continue;
      }
      if (quote) {
        out += c;
        if (c == '\\' && quote == '"' && k + 1 < line.size()) out += line[++k];
        else if (c == quote) quote = 0;
        continue;
      }
      if (line.substr(k).starts_with("\"\"\"") || line.substr(k).starts_with("'''")) {
        multi = line.substr(k, 3);
        out += multi;
        k += 2;
      } else if (c == '"' || c == '\'') {
        quote = c;
        out += c;
      } else if (c == '#') {
        break;
      } else {
        if (c == '[' || c == '{') ++depth;
        if ((c == ']' || c == '}') && depth > 0) --depth;
        out += c;
      }
    }
    out += '\n';
    if (multi.empty() && depth == 0) {
      ++i;
      break;
    }
  }
  return out;
}

// The first '=' outside quotes.
size_t key_end(std::string_view statement) {
  char quote = 0;
  for (size_t k = 0; k < statement.size(); ++k) {
    char c = statement[k];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '=') {
      return k;
    }
  }
  return std::string_view::npos;
}

// --- setup.cfg / tox.ini ------------------------------------------------------------------

bool ini_test_section_name(std::string_view name) {
  return name == "pytest" || name == "tool:pytest" || name == "tox" || name == "tox:tox" || name == "testenv" ||
         name.starts_with("testenv:") || name.starts_with("coverage:");
}

// --- package.json -----------------------------------------------------------------------

constexpr std::array<std::string_view, 7> kPackageTestKeys = {"jest", "mocha", "ava", "nyc", "c8", "vitest", "tap"};

bool script_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '_' || c == '-' || c == '.'; }

// Whether `command` names `script` as a whole word (npm run X, yarn X, run-s X ...).
bool names_script(std::string_view command, std::string_view script) {
  for (size_t at = command.find(script); at != std::string_view::npos; at = command.find(script, at + 1)) {
    bool left = at == 0 || !script_char(command[at - 1]);
    size_t end = at + script.size();
    bool right = end == command.size() || !script_char(command[end]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

TestSection pyproject_test_section(std::string_view text) {
  TestSection out;
  std::vector<std::string_view> lines = split(text, '\n');
  std::string table;
  std::map<std::string, int> array_tables;
  for (size_t i = 0; i < lines.size();) {
    std::string_view line = trim(lines[i]);
    if (line.empty() || line.starts_with('#')) {
      ++i;
      continue;
    }
    std::string statement = read_toml_statement(lines, i);
    std::string_view s = trim(statement);
    if (s.starts_with('[')) {
      bool array = s.starts_with("[[");
      size_t open = array ? 2 : 1;
      size_t close = s.find(']', open);
      table = normalize_toml_key(s.substr(open, close == std::string_view::npos ? std::string_view::npos : close - open));
      if (pyproject_test_key(table, false)) {
        std::string key = array ? "[[" + table + "]] #" + std::to_string(++array_tables[table]) : "[" + table + "]";
        out[key] = "";
      }
      continue;
    }
    size_t eq = key_end(s);
    std::string key = normalize_toml_key(s.substr(0, eq));
    std::string full = table.empty() ? key : table + "." + key;
    if (eq == std::string_view::npos) {
      if (pyproject_test_key(table, false)) out[full + " (unreadable)"] = collapse_whitespace(s);
      continue;
    }
    if (pyproject_test_key(full, true)) out[full] = collapse_whitespace(s.substr(eq + 1));
  }
  return out;
}

TestSection ini_test_section(std::string_view text) {
  TestSection out;
  std::string section, last_key;
  for (std::string_view raw : split(text, '\n')) {
    std::string_view line = trim(raw);
    if (line.empty() || line.starts_with('#') || line.starts_with(';')) continue;
    const bool continuation = std::isspace(static_cast<unsigned char>(raw.front())) && !last_key.empty();
    if (continuation) {
      out[last_key] += " " + collapse_whitespace(line);
      continue;
    }
    last_key.clear();
    if (line.starts_with('[') && line.find(']') != std::string_view::npos) {
      section = std::string(trim(line.substr(1, line.find(']') - 1)));
      if (ini_test_section_name(section)) out["[" + section + "]"] = "";
      continue;
    }
    if (!ini_test_section_name(section)) continue;
    size_t sep = line.find_first_of("=:");
    std::string key(trim(line.substr(0, sep)));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    last_key = "[" + section + "] " + key;
    out[last_key] = sep == std::string_view::npos ? "" : collapse_whitespace(line.substr(sep + 1));
  }
  return out;
}

TestSection package_json_test_section(std::string_view text) {
  TestSection out;
  auto json = parse_json(text, "package.json");
  if (!json || !json->is_object()) {
    out["the whole file (not a JSON object)"] = collapse_whitespace(text);
    return out;
  }
  for (std::string_view key : kPackageTestKeys) {
    if (auto it = json->find(key); it != json->end()) out[std::string(key)] = it->dump();
  }
  auto scripts = json->find("scripts");
  if (scripts == json->end()) return out;
  if (!scripts->is_object()) {
    out["scripts"] = scripts->dump();
    return out;
  }
  std::set<std::string> chosen;
  std::vector<std::string> queue;
  for (const auto& [name, command] : scripts->items()) {
    if (name.starts_with("test") || name.starts_with("pretest") || name.starts_with("posttest")) queue.push_back(name);
  }
  while (!queue.empty()) {
    std::string name = queue.back();
    queue.pop_back();
    if (!chosen.insert(name).second) continue;
    std::string command = (*scripts)[name].is_string() ? (*scripts)[name].get<std::string>() : (*scripts)[name].dump();
    out["scripts." + name] = command;
    for (const auto& [other, unused] : scripts->items()) {
      if (!chosen.contains(other) && names_script(command, other)) queue.push_back(other);
    }
  }
  return out;
}

}  // namespace warden::kernel
