// Fuzz harness: option text, as every front end takes it: ParseOptions (C++ and, through it,
// the Python keywords and the tools' flags) and the C API's equarxConfigSetOption.
//
// Input: [mode u8][text...]. Mode 0: the text goes to ParseOptions; an accepted text must
// print (FormatOptions) to text that parses to the same options, CheckOptions must answer, and
// a rejected text must leave the options untouched. Mode 1: the text is cut at NULs into
// key/value pairs for equarxConfigSetOption on one config; every accepted pair must keep the
// config's option text parseable, and a rejected pair must leave it unchanged with a message.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "equarx/equarx.h"
#include "equarx/options.h"
#include "fuzz_input.h"

namespace {

void FuzzParseOptions(const std::string& text) {
  using namespace equarx;
  AllReduceOptions o;
  o.block = 128;  // not the default, so that an untouched rejection is visible
  const std::string before = FormatOptions(o);
  if (!ParseOptions(text, &o).ok()) {
    if (FormatOptions(o) != before) equarx::fuzz::Fail("a rejected text changed the options");
    return;
  }
  (void)CheckOptions(o);
  const std::string printed = FormatOptions(o);
  AllReduceOptions p;
  if (!ParseOptions(printed, &p).ok()) equarx::fuzz::Fail("FormatOptions output does not parse");
  if (FormatOptions(p) != printed) equarx::fuzz::Fail("options changed in a text round trip");
  (void)FormatNonDefaultOptions(o);
}

void FuzzSetOption(const std::string& text) {
  equarxConfig_t c;
  equarxConfigInit(&c);
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= text.size() && parts.size() < 16) {
    size_t j = text.find('\0', i);
    if (j == std::string::npos) j = text.size();
    parts.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  for (size_t k = 0; k + 1 < parts.size(); k += 2) {
    char before[sizeof c.options];
    std::memcpy(before, c.options, sizeof before);
    const equarxResult_t r = equarxConfigSetOption(&c, parts[k].c_str(), parts[k + 1].c_str());
    if (r != equarxSuccess) {
      if (std::memcmp(before, c.options, sizeof before) != 0) equarx::fuzz::Fail("a rejected option changed the config");
      if (!*equarxGetLastOptionError()) equarx::fuzz::Fail("a rejected option has no message");
      continue;
    }
    if (strnlen(c.options, sizeof c.options) == sizeof c.options) equarx::fuzz::Fail("options text not terminated");
    equarx::AllReduceOptions o;
    if (!equarx::ParseOptions(c.options, &o).ok()) equarx::fuzz::Fail("accepted options no longer parse");
  }
  (void)equarxConfigSetOption(&c, nullptr, "x");
  (void)equarxConfigSetOption(nullptr, "block", "64");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  equarx::fuzz::Input in(data, size);
  const uint8_t mode = in.Take<uint8_t>();
  const std::string text = in.RestAsString();
  if (mode & 1) FuzzSetOption(text); else FuzzParseOptions(text);
  return 0;
}
