// equarx inspection (see include/equarx/inspect.h): the codec's targets and conversions and the
// knob table, read through their modules.
#include "equarx/inspect.h"

#include <cstdlib>

#include "codec/codec.h"
#include "common/env.h"

namespace equarx {

std::vector<std::string> SimdTargets() {
  std::vector<std::string> names;
  for (int64_t t : codec::AvailableTargets()) names.push_back(codec::TargetName(t));
  return names;
}

std::string ActiveSimdTarget() { return codec::TargetName(codec::CurrentTarget()); }

std::vector<EnvKnob> EnvKnobs() {
  std::vector<EnvKnob> knobs;
  for (const env::Knob& k : env::Knobs()) {
    const char* v = std::getenv(k.name);
    const bool set = v && *v;
    knobs.push_back(EnvKnob{k.name, k.type, k.default_value, k.doc, set, set ? v : ""});
  }
  return knobs;
}

std::vector<std::string> EnvWarnings() { return env::Read().warnings; }

Status ConvertValues(DType from, const void* src, size_t n, DType to, void* dst) {
  for (DType t : {from, to})
    if (uint8_t(t) > uint8_t(DType::kFloat16))
      return InvalidArgument("ConvertValues: unsupported dtype " + std::to_string(int(t)));
  if (n > 0 && (!src || !dst)) return InvalidArgument("ConvertValues: null buffer");
  codec::Convert(from, src, n, to, dst);
  return Status::Ok();
}

}  // namespace equarx
