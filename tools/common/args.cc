// equarx tools — command-line parser (see args.h).
#include "args.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

namespace equarx::tools {

std::optional<uint64_t> ParseUint(std::string_view t) {
  if (t.empty() || t.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = uint64_t(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::optional<size_t> ParseSize(std::string_view t) {
  if (t.empty()) return std::nullopt;
  uint64_t mult = 1;
  const char last = t.back();
  if (last == 'K' || last == 'k') mult = 1ull << 10;
  else if (last == 'M' || last == 'm') mult = 1ull << 20;
  else if (last == 'G' || last == 'g') mult = 1ull << 30;
  if (mult != 1) t.remove_suffix(1);
  const auto v = ParseUint(t);
  if (!v || *v > std::numeric_limits<size_t>::max() / mult) return std::nullopt;
  return size_t(*v * mult);
}

std::string FormatBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) { b /= 1024.0; ++u; }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

ArgParser::ArgParser(std::string program, std::string synopsis)
    : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

void ArgParser::AddFlag(std::string name, bool* dst, std::string help) {
  Option o;
  o.name = std::move(name);
  o.help = std::move(help);
  o.is_flag = true;
  o.flag = dst;
  Register(std::move(o));
}

void ArgParser::AddCustom(std::string name, std::function<std::string(std::string_view)> handler,
                          std::string help, std::string metavar) {
  Option o;
  o.name = std::move(name);
  o.help = std::move(help);
  o.metavar = std::move(metavar);
  o.handler = std::move(handler);
  Register(std::move(o));
}

void ArgParser::Register(Option o) {
  // Two options of one name would leave the second dead (the first match wins) while its help
  // line promises it: a tool's bug, stopped before any argument is read.
  if (Find(o.name) || o.name == "help") {
    std::fprintf(stderr, "%s: option --%s registered twice (a bug in the tool)\n", program_.c_str(),
                 o.name.c_str());
    std::abort();
  }
  options_.push_back(std::move(o));
}

void ArgParser::AddString(std::string name, std::string* dst, std::string help, std::string metavar) {
  AddCustom(std::move(name), [dst](std::string_view v) { *dst = std::string(v); return std::string(); },
            std::move(help), std::move(metavar));
}

namespace {

// A handler that stores parse(value) into *dst, or answers `expects` when it does not parse.
template <typename T, typename Parse>
std::function<std::string(std::string_view)> Store(T* dst, Parse parse, const char* expects) {
  return [dst, parse, expects](std::string_view v) {
    const auto n = parse(v);
    if (!n) return std::string(expects);
    *dst = T(*n);
    return std::string();
  };
}

}  // namespace

void ArgParser::AddSize(std::string name, size_t* dst, std::string help, std::string metavar) {
  AddCustom(std::move(name), Store(dst, ParseSize, "expects a size such as 4096, 64K, 16M"), std::move(help),
            std::move(metavar));
}

void ArgParser::AddUint(std::string name, uint64_t* dst, std::string help, std::string metavar) {
  AddCustom(std::move(name), Store(dst, ParseUint, "expects a non-negative integer"), std::move(help),
            std::move(metavar));
}

ArgParser::Option* ArgParser::Find(std::string_view name) {
  for (Option& o : options_)
    if (o.name == name) return &o;
  return nullptr;
}

bool ArgParser::seen(std::string_view name) const {
  for (const Option& o : options_)
    if (o.name == name) return o.seen;
  return false;
}

void ArgParser::AddShort(char c, std::string name) { shorts_.emplace_back(c, std::move(name)); }

Status ArgParser::Parse(int argc, const char* const* argv) {
  bool options_done = false;
  const Option* last_flag = nullptr;  // the boolean flag just before this argument, if any
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (options_done || a.size() < 2 || a[0] != '-' || a == "-") {
      if (!takes_positional_) {
        std::string why = "unexpected argument '" + std::string(a) + "'";
        if (last_flag)
          why += " (--" + last_flag->name + " takes no value; write --" + last_flag->name + "=" +
                 std::string(a) + ")";
        return InvalidArgument(why);
      }
      positional_.emplace_back(a);
      last_flag = nullptr;
      continue;
    }
    last_flag = nullptr;
    if (a == "--") { options_done = true; continue; }
    if (a == "--help" || a == "-h") { help_ = true; return Status::Ok(); }
    std::string expanded;
    if (a.size() == 2 && a[1] != '-')
      for (const auto& [c, name] : shorts_)
        if (c == a[1]) a = expanded = "--" + name;
    if (a.substr(0, 2) != "--") return InvalidArgument("unknown option '" + std::string(a) + "'");
    std::string_view name = a.substr(2);
    std::optional<std::string_view> value;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    Option* o = Find(name);
    if (!o) return InvalidArgument("unknown option '--" + std::string(name) + "'");
    o->seen = true;
    if (o->is_flag) {
      if (value && *value != "1" && *value != "true" && *value != "0" && *value != "false")
        return InvalidArgument("option '--" + o->name + "' takes no value (or true/false)");
      *o->flag = !value || *value == "1" || *value == "true";
      if (!value) last_flag = o;
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) return InvalidArgument("option '--" + o->name + "' needs a value");
      value = std::string_view(argv[++i]);
    }
    if (std::string err = o->handler(*value); !err.empty())
      return InvalidArgument("option '--" + o->name + "': " + err + " (got '" + std::string(*value) + "')");
  }
  return Status::Ok();
}

std::optional<int> ArgParser::ParseCommandLine(int argc, const char* const* argv,
                                               const std::string& more_help) {
  if (Status st = Parse(argc, argv); !st.ok()) {
    std::fprintf(stderr, "%s: %s\n(run %s --help for usage)\n", program_.c_str(),
                 st.message().c_str(), program_.c_str());
    return 2;
  }
  if (help_) {
    std::fputs((Help() + more_help).c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

std::string ArgParser::Help() const {
  std::string h = "usage: " + program_ + " " + synopsis_ + "\n\noptions:\n";
  for (const Option& o : options_) {
    std::string left = "  --" + o.name + (o.is_flag ? "" : " " + o.metavar);
    if (left.size() < 26) left.append(26 - left.size(), ' ');
    else left += "  ";
    h += left + o.help + "\n";
  }
  h += "  --help                  print this help\n";
  return h;
}

}  // namespace equarx::tools
