#include "common/build_id.h"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace warden {
namespace {

// Notes are 4-byte aligned: a header, then the name and the descriptor, each padded.
size_t padded(size_t n) { return (n + 3) & ~size_t{3}; }

int find_in_main_program(struct dl_phdr_info* info, size_t, void* out) {
  // The first object dl_iterate_phdr reports is the executable itself.
  auto* id = static_cast<std::string*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = at + ph.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof note);
      const unsigned char* name = at + sizeof note;
      const unsigned char* desc = name + padded(note.n_namesz);
      if (desc + note.n_descsz > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static constexpr char kHex[] = "0123456789abcdef";
        for (size_t k = 0; k < note.n_descsz; ++k) {
          id->push_back(kHex[desc[k] >> 4]);
          id->push_back(kHex[desc[k] & 0xf]);
        }
        return 1;
      }
      at = desc + padded(note.n_descsz);
    }
  }
  return 1;  // only the first object is the executable
}

}  // namespace

std::string executable_build_id() {
  std::string id;
  ::dl_iterate_phdr(find_in_main_program, &id);
  return id;
}

}  // namespace warden
