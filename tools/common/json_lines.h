// equarx tools — the JSON-lines reports of equarx-perf and the MPI soak (--json / --out).
#pragma once

#include <cstdio>
#include <string>

namespace equarx::tools {

/// Opens `path` for a JSON-lines report and writes its first line, `header_format` filled in
/// as by printf (the format ends with its newline). An empty path is no report; a path that
/// cannot be opened is said on stderr ("<program>: cannot write <path>") and the run goes on
/// without a report. Returns the open file, or null.
FILE* OpenJsonLines(const std::string& path, const char* program, const char* header_format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace equarx::tools
