// Whether a diff's files are what its step asks for (decide()'s content_mismatch): it touches
// only the step's targets; create_* steps create new files; create_function and create_test
// define the step's symbols; add_dependency touches exactly its one target (the manifest);
// with the policy's exact_content, each post-image equals the step's content byte for byte.
//
// Function definitions are found per language, on code with comments and strings removed
// (source_text.h):
//   python    a line `def name(` or `async def name(`, at any indentation
//   c family  an identifier followed by `(` whose matching `)` is followed by `{` before any
//             `;` (so prototypes and calls do not count), and that is not preceded by an
//             operator, '(' or ',' or by a keyword such as return/if/while (calls in
//             conditions); `Class::name(` counts as `name` and as `Class::name`. Macros that
//             look like definitions count too.
//   others    no rule: a symbol there is never found, so the step is refused.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/plan/build_plan.h"
#include "kernel/judge/decide.h"
#include "diff/diff.h"

namespace warden::kernel {

using PostImages = std::map<std::string, std::optional<std::string>>;  // path -> content (nullopt: removed)

struct ContentCheck {
  const BuildStep& step;
  const Diff& diff;
  const std::map<std::string, BaseFileImage>& base;
  // The post-images when the diff applied to the base; without them the rules that read
  // content are skipped (such a diff is refused for its hashes anyway).
  const PostImages* post_images = nullptr;
  bool exact_content = false;
};

// One sentence per problem; empty when the diff matches the step.
std::vector<std::string> content_mismatches(const ContentCheck& check);

// The functions `text` defines, read as the language of `path`; nullopt when there is no
// rule for that language.
std::optional<std::set<std::string>> defined_functions(std::string_view path, std::string_view text);

}  // namespace warden::kernel
