#include "tools/warden/json_lines.h"

#include <iostream>

#include "common/exit_codes.h"

namespace warden::cli {
namespace {

void print_line(Json value) {
  std::string type = value["type"].get<std::string>();
  value.erase("type");
  std::cout << json_line(type, value);
}

}  // namespace

int report_error(const Error& error, bool json) { return report_error(error, json, exit_code_for(error.code)); }

int report_error(const Error& error, bool json, int exit_code) {
  std::cerr << "warden: error: " << error.message << "\n";
  if (json) print_error_line(errc_name(error.code), error.message, exit_code);
  return exit_code;
}

void print_error_line(std::string_view code, const std::string& message, int exit_code) {
  print_line({{"type", "error"}, {"error", {{"code", code}, {"message", message}, {"exit_code", exit_code}}}});
}

// "type" first so a reader sees what the line is (the other keys follow in order). Output
// never fails on text an input smuggled in: bytes that are not UTF-8 print as U+FFFD.
std::string json_line(std::string_view type, const Json& fields) {
  auto dump = [](const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); };
  std::string rest = dump(fields);
  return "{\"type\":" + dump(Json(std::string(type))) + (rest == "{}" ? "}" : "," + rest.substr(1)) + "\n";
}

void print_item(std::string_view type, const Json& fields) { std::cout << json_line(type, fields); }

void print_json(const Json& fields) {
  Json line = fields;
  line["type"] = "result";
  print_line(std::move(line));
}

void print_event(const Json& event) {
  print_line(event);
  std::cout.flush();
}

}  // namespace warden::cli
