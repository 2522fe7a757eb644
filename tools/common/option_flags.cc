// equarx tools — flags from the option table (see option_flags.h).
#include "option_flags.h"

#include <algorithm>

namespace equarx::tools {
namespace {

std::string FlagName(std::string_view name) {
  std::string s(name);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

std::string Metavar(const OptionField& f) {
  if (f.kind == OptionKind::kUint) return "N";
  std::string m;
  for (size_t i = 0; i < f.num_values && i < 4; ++i) {
    if (i) m += '|';
    m.append(f.values[i].name);
  }
  if (f.num_values > 4) m += "|...";
  return m;
}

}  // namespace

OptionFlags::OptionFlags(ArgParser* p, bool lists, std::set<std::string> skip,
                         const AllReduceOptions& defaults)
    : parser_(p) {
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i)
    if (!skip.count(std::string(t[i].name))) slots_.push_back({&t[i], {}});
  bools_ = std::make_unique<bool[]>(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const OptionField& f = *slots_[i].field;
    std::string help(f.doc);
    help.append(" (default ").append(FormatOptionValue(f, f.get(defaults)));
    help.append(lists && f.kind != OptionKind::kBool ? "; a comma list sweeps)" : ")");
    std::vector<std::string> names = {FlagName(f.name)};
    if (!f.alias.empty()) names.push_back(FlagName(f.alias));
    for (const std::string& name : names) {
      if (f.kind == OptionKind::kBool) {
        bools_[i] = f.get(defaults) != 0;
        p->AddFlag(name, &bools_[i], help);
        continue;
      }
      Slot* slot = &slots_[i];
      p->AddCustom(name, [slot, lists](std::string_view text) {
        slot->values.clear();
        size_t at = 0;
        while (at <= text.size()) {
          size_t end = lists ? text.find(',', at) : std::string_view::npos;
          if (end == std::string_view::npos) end = text.size();
          uint64_t v = 0;
          Status st = ParseOptionValue(*slot->field, text.substr(at, end - at), &v);
          if (!st.ok()) return st.message();
          if (std::find(slot->values.begin(), slot->values.end(), v) == slot->values.end())
            slot->values.push_back(v);
          at = end + 1;
        }
        return std::string();
      }, help, Metavar(f));
    }
  }
}

bool OptionFlags::Given(std::string_view name) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    const OptionField& f = *slots_[i].field;
    if (f.name != name && f.alias != name) continue;
    return parser_->seen(FlagName(f.name)) || (!f.alias.empty() && parser_->seen(FlagName(f.alias)));
  }
  return false;
}

AllReduceOptions OptionFlags::Options(AllReduceOptions base) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    const OptionField& f = *slots_[i].field;
    if (!Given(f.name)) continue;
    if (f.kind == OptionKind::kBool) f.set(&base, bools_[i] ? 1 : 0);
    else if (!slots_[i].values.empty()) f.set(&base, slots_[i].values.front());
  }
  return base;
}

std::vector<AllReduceOptions> OptionFlags::Expand(AllReduceOptions base) const {
  std::vector<AllReduceOptions> out = {Options(base)};
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.values.size() < 2) continue;
    std::vector<AllReduceOptions> next;
    for (const AllReduceOptions& o : out)
      for (uint64_t v : s.values) {
        AllReduceOptions x = o;
        s.field->set(&x, v);
        next.push_back(x);
      }
    out = std::move(next);
  }
  return out;
}

std::string OptionFlags::ValuesHelp() {
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  std::string h;
  for (size_t i = 0; i < n; ++i) {
    if (t[i].kind != OptionKind::kEnum) continue;
    h.append("\n").append(t[i].name).append(" (--").append(FlagName(t[i].name)).append("):\n");
    for (size_t k = 0; k < t[i].num_values; ++k) {
      std::string name(t[i].values[k].name);
      if (name.size() < 12) name.append(12 - name.size(), ' ');
      h += "    " + name + " " + std::string(t[i].values[k].description) + "\n";
    }
  }
  return h;
}

}  // namespace equarx::tools
