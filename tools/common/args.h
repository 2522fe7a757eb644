// equarx tools — a tiny command-line parser shared by the tools.
//
// Options are registered with a destination and a help line; Parse() accepts
// `--name value`, `--name=value`, boolean `--flag` (`--flag=0` to clear one), `--` (end of
// options) and, in tools that call TakePositional(), positional arguments in any order.
// Unknown options, missing values, malformed numbers and positional arguments a tool does not
// take are kInvalidArgument errors with a message naming the option or argument (tools exit 2
// on them): `--flag 0` is an error, not a flag left at its default.
// Sizes accept K/M/G suffixes (powers of 1024, as nccl-tests), e.g. 4M = 4194304.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "equarx/status.h"

namespace equarx::tools {

/// "4096", "64K", "16M", "1G" -> count; nullopt if malformed or overflowing.
std::optional<size_t> ParseSize(std::string_view text);
/// A plain non-negative integer (no suffix).
std::optional<uint64_t> ParseUint(std::string_view text);
/// "1.5 GiB" style for printing.
std::string FormatBytes(double bytes);

class ArgParser {
 public:
  ArgParser(std::string program, std::string synopsis);

  void AddFlag(std::string name, bool* dst, std::string help);
  void AddString(std::string name, std::string* dst, std::string help, std::string metavar = "S");
  void AddSize(std::string name, size_t* dst, std::string help, std::string metavar = "N");
  void AddUint(std::string name, uint64_t* dst, std::string help, std::string metavar = "N");
  /// A value handled by a callback that returns an error message (empty = ok).
  void AddCustom(std::string name, std::function<std::string(std::string_view)> handler,
                 std::string help, std::string metavar);

  /// `-c` as a short name of the option `--name` (nccl-tests style flags).
  void AddShort(char c, std::string name);
  /// The tool takes positional arguments (files); without this call Parse() refuses them.
  void TakePositional() { takes_positional_ = true; }

  /// Parses argv[1..]. `--help`/`-h` sets help_requested() and stops.
  Status Parse(int argc, const char* const* argv);

  bool help_requested() const { return help_; }
  /// Parse() as a program's main wants it: on a bad argument prints "<program>: <why>" and a
  /// pointer to --help on stderr and returns 2; on --help prints Help() and `more_help` on
  /// stdout and returns 0; otherwise returns nothing and the program goes on.
  std::optional<int> ParseCommandLine(int argc, const char* const* argv,
                                      const std::string& more_help = "");
  const std::vector<std::string>& positional() const { return positional_; }
  /// Whether option `name` appeared on the command line.
  bool seen(std::string_view name) const;
  /// Usage text: synopsis plus one line per option.
  std::string Help() const;
  const std::string& program() const { return program_; }

 private:
  struct Option {
    std::string name, help, metavar;
    bool is_flag = false;
    bool* flag = nullptr;
    std::function<std::string(std::string_view)> handler;
    bool seen = false;
  };
  Option* Find(std::string_view name);
  void Register(Option o);  // aborts on a name already registered (or "help")

  std::string program_, synopsis_;
  std::vector<Option> options_;
  std::vector<std::pair<char, std::string>> shorts_;
  std::vector<std::string> positional_;
  bool takes_positional_ = false;
  bool help_ = false;
};

}  // namespace equarx::tools
