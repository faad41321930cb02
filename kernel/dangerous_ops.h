// The kernel's own scan for dangerous operations in the lines a diff adds (policy
// "dangerous_operations"). Patterns are per language, chosen by the file's extension
// (source_text.h), and run as one RE2::Set per language: one linear-time pass per line,
// whatever the line. Comments and string contents are removed first (Python, C family), so
// `# never eval(x)` or "os.system(" in a message do not count.
//
// Rules (id: what it matches on one line of code):
//   python   py.eval, py.exec, py.compile, py.dunder_import (eval( exec( compile( __import__(
//            not called as a method), py.os_system, py.os_popen, py.subprocess_shell
//            (subprocess.<f>(... shell=True on the same line), py.pickle_load (pickle/cPickle
//            load(s)), py.marshal_load, py.yaml_load (yaml.load( without SafeLoader on the line)
//   c family c.system, c.popen, c.gets, c.strcpy, c.strcat, c.sprintf, c.vsprintf,
//            c.exec (execl execlp execle execv execvp execve execvpe), c.asm (asm/__asm__ blocks);
//            calls through '.' or '->' are methods of the same name and do not count
//   shell    sh.curl_pipe_sh (curl|wget ... | sh/bash), sh.rm_rf_root (rm with flags on / or
//            /*), sh.eval
// Not handled: calls split over several lines (shell=True on the next line), aliases
// (`from os import system` then `system(`), getattr tricks, and the lexer gaps of source_text.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/diff.h"

namespace warden::kernel {

struct DangerFinding {
  std::string path;
  uint64_t line = 0;    // 1-based, in the post-image (counted from the hunk's new_start without one)
  std::string rule;     // "py.eval", "c.system", ...
  std::string excerpt;  // the line as written, trimmed and capped, valid UTF-8
  bool operator==(const DangerFinding&) const = default;
};

// The lines `file` adds: every line of after_content (add, whole-file replacement), or the
// hunks' '+' lines. With the resolved post-image the lexer sees the whole file, so a line
// inside a block comment or docstring opened on an unchanged line is known as such; without
// it only the added lines are seen.
std::vector<DangerFinding> scan_added_lines(const FileChange& file, const std::optional<std::string>& post_image);

// Every line of `text`, as the language of `path`.
std::vector<DangerFinding> scan_source(std::string_view path, std::string_view text);

// "src/a.py:3 py.eval `x = eval(s)`".
std::string describe(const DangerFinding& finding);

}  // namespace warden::kernel
