// equarx tools — one command-line flag per AllReduce option, from the library's option table
// (equarx/options.h), so that every tool accepts exactly the options, names, aliases and values
// the library does, and a new option reaches every tool without touching it.
//
// Each field becomes --<name> (underscores as dashes) and, if it has one, --<alias>; bool
// fields are plain flags (--f32-partials). Values are parsed by the library
// (ParseOptionValue). With `lists`, every value flag takes a comma-separated list and
// Expand() returns the product of the lists in table order (the sweep of equarx-perf).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "args.h"
#include "equarx/options.h"

namespace equarx::tools {

class OptionFlags {
 public:
  /// Registers the flags on `p`, except the fields named in `skip` (a tool's own handling).
  /// `defaults` are the values the help text names (what the tool passes as `base`).
  OptionFlags(ArgParser* p, bool lists = false, std::set<std::string> skip = {},
              const AllReduceOptions& defaults = {});

  /// After Parse: `base` with every flag given applied (for lists, the first value).
  AllReduceOptions Options(AllReduceOptions base = {}) const;
  /// After Parse: one options value per combination of the lists given (table order, the
  /// last field varying fastest); `base` for every field not given.
  std::vector<AllReduceOptions> Expand(AllReduceOptions base = {}) const;
  /// Whether the flag of field `name` was given.
  bool Given(std::string_view name) const;
  /// The allowed values of every enum option, for --help.
  static std::string ValuesHelp();

 private:
  struct Slot {
    const OptionField* field;
    std::vector<uint64_t> values;  // what the command line gave
  };
  ArgParser* parser_;
  std::vector<Slot> slots_;
  std::unique_ptr<bool[]> bools_;  // storage of the bool flags, one per slot
};

}  // namespace equarx::tools
