// Unicode case folding, for comparing names the way a case-insensitive file system or a
// checkout on another OS may treat them: two names that fold to the same string may be the
// same file there (".ENV" is ".env", "Key.PEM" is "key.pem", the Kelvin sign folds to 'k',
// 'ẞ' and 'ß' to "ss", 'Σ' and 'ς' to 'σ').
//
// The folding is Unicode's full case folding (CaseFolding.txt, status C and F, no Turkic
// T rows), from a table generated into case_fold_table.inc by tools/gen-case-fold-table and
// committed: it is Warden's, fixed by its source, never the host's (decisions are replayed on
// other machines, and a host library's Unicode version would move them). Full rather than
// simple folding because it equates more names ("MASSE" and "Maße"): where folding guards a
// rule, matching more is the safe side. Normalization (NFC/NFD) is not applied.
//
// Pure functions, safe from any thread. Bytes that are not valid UTF-8 are kept as they are.
#pragma once

#include <string>
#include <string_view>

namespace warden {

// `text` with every code point replaced by its full case folding.
std::string fold_case(std::string_view text);

}  // namespace warden
