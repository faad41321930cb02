#include "kernel/plan/schema_fields.h"

#include <algorithm>
#include <set>

#include "diff/path_safety.h"
#include "common/json_reader.h"

namespace warden::kernel {

std::string unsafe_path_reason(std::string_view path) {
  auto checked = check_path_syntax(path);
  if (checked) return {};
  return "must be a relative, normalized path inside the repository (" + checked.error().detail + ")";
}

bool valid_identifier(std::string_view id) {
  return !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '.' || c == '-';
         });
}

void for_each_object(JsonReader& parent, const std::string& key, bool required,
                     const std::function<void(JsonReader&, size_t)>& item) {
  const Json* array = parent.value(key, Json::value_t::array, required);
  if (!array) return;
  for (size_t i = 0; i < array->size() && parent.ok(); ++i) {
    JsonReader r((*array)[i], parent.path(key) + "[" + std::to_string(i) + "]");
    item(r, i);
    parent.adopt(r.finish());
  }
}

void read_checks(JsonReader& r, const std::string& key, std::vector<CheckSpec>& out) {
  const Json* array = r.value(key, Json::value_t::array, false);
  if (!array) return;
  std::set<std::string> names;
  for (size_t i = 0; i < array->size() && r.ok(); ++i) {
    std::string where = r.path(key) + "[" + std::to_string(i) + "]";
    auto check = CheckSpec::from_json((*array)[i], where);
    if (!check) return r.adopt(std::unexpected(check.error()));
    if (!names.insert(check->name).second) {
      return r.adopt(fail(Errc::invalid_argument, where + ".name: \"" + check->name + "\" is given twice"));
    }
    out.push_back(std::move(*check));
  }
}

}  // namespace warden::kernel
