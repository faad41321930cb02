// Signed notes, as C2SP signed-note and golang.org/x/mod/sumdb/note define them, so that
// Warden's checkpoints open in any note verifier and Warden verifies notes signed elsewhere.
// The keys (NoteSigner, NoteVerifier) are common/note_key.h's. Plain values and pure
// functions; thread-safe.
// Errors: invalid_argument (or limit_exceeded) means a malformed key or note — the input is
// wrong; verification_failed from open_note() means the note is well-formed but a known key's
// signature is bad or no known key signed it: do not trust its text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/note_key.h"

namespace warden {

struct NoteSignature {
  std::string name;
  uint32_t key_hash = 0;
  std::string base64;  // base64(keyhash || signature), as it appears in the note
  std::string line() const;  // "— name base64\n"
};

struct Note {
  std::string text;                       // includes its final newline
  std::vector<NoteSignature> signatures;  // in note order
};

// Splits a signed note into text and signature lines (no verification). Enforces the
// format: UTF-8, no control characters but newline, a blank line before the signatures,
// every signature line well-formed, at most 100 signatures.
Result<Note> parse_note(std::string_view message);

// Signs `text` (which must end in a newline) and appends the signature after any
// `existing` signatures from other keys, as note.Sign does: byte-identical output.
Result<std::string> sign_note(std::string_view text, const NoteSigner& signer,
                              const std::vector<NoteSignature>& existing = {});

struct OpenedNote {
  std::string text;
  std::vector<NoteSignature> verified;
  std::vector<NoteSignature> unverified;  // from keys not in the list
};

// Verifies per the spec: signatures from unknown keys are ignored, a known key's bad
// signature rejects the note, and at least one known key must have signed.
Result<OpenedNote> open_note(std::string_view message, const std::vector<NoteVerifier>& known);

}  // namespace warden
