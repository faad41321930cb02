#include "common/process_identity.h"

#include <unistd.h>

#include <charconv>

#include "common/file.h"

namespace warden {

namespace {

template <typename T>
std::optional<T> number(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

ProcessIdentity ProcessIdentity::self() {
  // /proc/self always exists for the caller; a start time of 0 would only make markers of
  // this process look dead to others, never a dead process look alive.
  return of(::getpid()).value_or(ProcessIdentity{::getpid(), 0});
}

std::optional<ProcessIdentity> ProcessIdentity::of(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // from the last ')'. starttime is field 22; the state is field 3.
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(*stat).substr(close + 1);
  int field = 2;
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    size_t end = rest.find(' ', i);
    if (end == std::string_view::npos) end = rest.size();
    // A zombie has ended: it drives nothing, it is only waiting for its parent (or init, when
    // its parent died first, which may take a while) to reap it.
    if (++field == 3 && (rest.substr(i, end - i) == "Z" || rest.substr(i, end - i) == "X")) return std::nullopt;
    if (field == 22) {
      auto start = number<uint64_t>(rest.substr(i, end - i));
      if (!start) return std::nullopt;
      return ProcessIdentity{pid, *start};
    }
    i = end;
  }
  return std::nullopt;
}

std::string ProcessIdentity::str() const { return std::to_string(pid) + "." + std::to_string(start_time); }

std::optional<ProcessIdentity> ProcessIdentity::parse(std::string_view text) {
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto pid = number<pid_t>(text.substr(0, dot));
  auto start = number<uint64_t>(text.substr(dot + 1));
  if (!pid || !start || *pid <= 0) return std::nullopt;
  return ProcessIdentity{*pid, *start};
}

bool ProcessIdentity::alive() const {
  auto now = of(pid);
  return now && now->start_time == start_time;
}

}  // namespace warden
