// The CLI's output streams, shared by `warden` and `warden-grpc client` (which prints what the
// local commands print): errors on stderr, and every --json stream as JSON Lines.
// Writes to std::cout / std::cerr; no state of its own.
#pragma once

#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::cli {

// Every --json stream is JSON Lines (docs/commands.md, "JSON Lines"): one object per line, each with
// a "type"; events first (kernel/record/event_stream.h), then exactly one line that ends the stream:
// the result, or the error.

// Prints "warden: error: ..." on stderr and, with --json, the stream's last line on stdout:
// {"type": "error", "error": {"code", "message", "exit_code"}}. Returns the exit code:
// exit_code_for(error.code) (common/exit_codes.h, the documented exit codes) unless the
// command documents its own.
int report_error(const Error& error, bool json);
int report_error(const Error& error, bool json, int exit_code);
// The error line alone: `code` is an errc_name() or "usage" (a bad command line).
void print_error_line(std::string_view code, const std::string& message, int exit_code);
// The stream's result line: `fields` (an object without a "type" of its own) and
// "type": "result".
void print_json(const Json& fields);
// One line of a listing (a record, a run), `type` first: listed items come before the
// command's result line.
void print_item(std::string_view type, const Json& fields);
// The text of one JSON Lines line ("\n"-ended) of `type` with `fields` (an object).
std::string json_line(std::string_view type, const Json& fields);
// One event line (kernel/record/event_stream.h's schema), flushed so a reader sees it as it happens.
void print_event(const Json& event);

}  // namespace warden::cli
