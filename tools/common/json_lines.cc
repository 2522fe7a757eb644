// equarx tools — the JSON-lines reports (json_lines.h).
#include "json_lines.h"

#include <cstdarg>

namespace equarx::tools {

FILE* OpenJsonLines(const std::string& path, const char* program, const char* header_format, ...) {
  if (path.empty()) return nullptr;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
    return nullptr;
  }
  va_list args;
  va_start(args, header_format);
  std::vfprintf(f, header_format, args);
  va_end(args);
  return f;
}

}  // namespace equarx::tools
