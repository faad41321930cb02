// Git attributes that make a checkout's bytes differ from the committed bytes. The sandbox
// tests a tree's blobs as committed (runner/check/diff_layer.h writes them raw), while `git clone`
// or `git checkout` of the same commit passes them through .gitattributes: `ident` expands
// $Id$, `eol`/`text`/`crlf` convert line endings (on a machine whose core.autocrlf or
// core.eol asks for CRLF, `text` and `text=auto` alone do), `filter` runs a smudge program,
// `working-tree-encoding` re-encodes. A proposal that adds such an entry would be accepted
// on bytes nobody checks out, so decide() refuses it (reason checkout_transform): tested bytes
// must be the committed bytes.
//
// What counts: in any file named .gitattributes at any depth (case folded: a checkout on a
// case-insensitive file system reads .GITATTRIBUTES too), a line whose attributes set one of
// ident, eol, text, crlf, filter or working-tree-encoding, with or without a value; a macro
// definition ([attr]name ...) that sets one counts too. Unsetting (-text, -crlf, the
// `binary` macro) or unspecifying (!eol) transforms nothing and is allowed, as is every other
// attribute (diff, merge, linguist-*, export-ignore, ...). Not seen: a line that uses a macro
// defined with transforming attributes in another file, and .git/info/attributes or a user's
// global attributes (outside the tree, the host's business).
//
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warden::kernel {

struct AttributeFinding {
  uint64_t line = 0;      // 1-based
  std::string text;       // the line, trimmed
  std::string attribute;  // the first transforming attribute as written ("ident", "eol=crlf")
};

// Whether `path` names a git attributes file (its last component folds to .gitattributes).
bool is_attributes_file(std::string_view path);

// Every line of `text` (a .gitattributes file) that sets a transforming attribute.
std::vector<AttributeFinding> transforming_attributes(std::string_view text);

}  // namespace warden::kernel
