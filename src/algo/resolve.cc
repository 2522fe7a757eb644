// equarx call resolver (see resolve.h for what it decides and in which order).
#include "algo/resolve.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "algo/cost_model.h"
#include "algo/hierarchical.h"
#include "algo/one_shot.h"

namespace equarx::algo {

namespace {

// The option rows that name a knob (core/options.cc), with their knob (common/env.h).
struct KnobFed {
  const OptionField* field;
  const env::Knob* knob;
};
const std::vector<KnobFed>& KnobFedOptions() {
  static const std::vector<KnobFed> fed = [] {
    std::vector<KnobFed> v;
    size_t n = 0;
    const OptionField* t = OptionFields(&n);
    for (size_t i = 0; i < n; ++i)
      if (!t[i].env.empty()) v.push_back({&t[i], env::FindKnob(t[i].env)});
    return v;
  }();
  return fed;
}

}  // namespace

AllReduceOptions ResolveDefaults(const AllReduceOptions& in, const env::Settings& env, int hosts_found) {
  AllReduceOptions o = in;
  // Every option that names a knob and is left unset takes the knob's value (the variable, or
  // the knob's default) where the knob gives one.
  const AllReduceOptions unset;
  for (const KnobFed& f : KnobFedOptions()) {
    if (!f.knob || f.field->get(o) != f.field->get(unset)) continue;
    if (const std::optional<uint64_t> v = f.knob->option_value(env)) f.field->set(&o, *v);
  }
  // What applies after the knob: ranks_per_host from the transport's layout; threads stays 0
  // (the communicator divides its cores); rotation by the plan and the codec; scale and block
  // by the codec. A default rotation (EQUARX_ROTATION's included) applies to quantized plans
  // only.
  if (o.ranks_per_host == 0) o.ranks_per_host = uint32_t(std::max(1, hosts_found));
  if (in.rotation == Rotation::kDefault && !TakesCodec(o.algorithm)) o.rotation = Rotation::kNone;
  else if (o.rotation == Rotation::kDefault) o.rotation = DefaultRotation(o.codec);
  o.scale = ScaleOf(in);
  o.block = BlockOf(in);
  return o;
}

// ---- auto's tables ----

AutoTables::AutoTables(const env::Settings& env)
    : env_file_(env.tune_file), network_{env.link_gbit, env.step_us, env.message_us, env.rotation} {}

namespace {

// Whether two options agree on every field of the option table (no allocation).
bool SameOptions(const AllReduceOptions& a, const AllReduceOptions& b) {
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i)
    if (t[i].get(a) != t[i].get(b)) return false;
  return true;
}

constexpr size_t kModeledKept = 32;

}  // namespace

const TuneTable& AutoTables::For(const AllReduceOptions& o, DType dtype, int ranks, uint64_t* hash,
                                 Status* status) {
  const char* file = o.tune_file ? o.tune_file : env_file_.c_str();
  if (*file) {
    if (file_ != file) {  // loaded when the path changes
      file_ = file;
      loaded_ = TuneTable::Defaults();
      loaded_status_ = TuneTable::Load(file_, &loaded_);
      loaded_hash_ = loaded_.Hash();
    }
    if (!loaded_status_.ok()) *status = loaded_status_;
    *hash = loaded_hash_;
    return loaded_;
  }
  const AllReduceOptions inputs = ModelTableInputs(o);
  for (const Modeled& m : modeled_)
    if (m.dtype == dtype && m.ranks == ranks && SameOptions(m.inputs, inputs)) {
      *hash = m.hash;
      return m.table;
    }
  if (modeled_.size() >= kModeledKept) modeled_.pop_front();
  TuneTable t = ModelTuneTable(inputs, dtype, ranks, network_);
  *hash = t.Hash();
  modeled_.push_back({inputs, dtype, ranks, std::move(t), *hash});
  return modeled_.back().table;
}

// ---- plans ----

codec::WireSpec QuantizedWire(Codec codec, size_t block, Rounding rounding, uint64_t seed,
                              ScaleFormat scale) {
  codec::WireSpec w;
  w.block = uint32_t(block);
  w.scale = scale == ScaleFormat::kBF16       ? codec::kScaleBF16
            : scale == ScaleFormat::kTwoLevel ? codec::kScaleTwoLevel
                                              : codec::kScaleF32;
  w.rounding = rounding == Rounding::kStochastic ? codec::kRoundStochastic : codec::kRoundNearestEven;
  w.seed = seed;
  w.format = codec::BlockInfoOf(codec).format;
  return w;
}

Plan SelectPlan(const AllReduceOptions& o, DType dtype, size_t count, int ranks, const TuneTable& table,
                bool rotation_asked) {
  Algorithm a = o.algorithm;
  Phases phases = o.phases;
  const size_t bytes = count * DTypeSize(dtype);
  if (a == Algorithm::kAuto) {
    const TuneRule rule = table.Lookup(ranks, dtype, bytes);
    a = rule.algorithm;
    phases = rule.phases;
  }
  if (IsQuantized(a) && bytes < o.quantize_min_bytes) a = UnquantizedTwin(a);
  PlanArgs args;
  args.dtype = dtype;
  args.count = count;
  args.ranks = ranks;
  args.phases = phases;
  args.quantized = QuantizedWire(o.codec, o.block, o.rounding, o.seed, o.scale);
  args.f32_partials = o.f32_partials;
  // An unquantized plan rotates only when asked (PlanRotates): only then do its shards follow
  // the rotation block, so that auto's ring is the ring asked for, bit for bit.
  if (o.rotation == Rotation::kHadamard && (rotation_asked || IsQuantized(a)))
    args.rotation_block = RotationBlockOf(o);
  // auto resolved above; hierarchical is not one plan (hierarchical.cc runs it): the ring
  // stands in.
  if (a == Algorithm::kAuto || a == Algorithm::kHierarchical) a = Algorithm::kRing;
  Plan p = BuilderOf(a)(args);
  p.algorithm = a;
  p.phases = phases;
  p.dtype = dtype;
  return p;
}

namespace {

// Step 5 of resolve.h for `plan`: whether it rotates, or the refusal of a rotation the caller
// asked for on a plan it chose itself that cannot carry one.
Status PlanRotates(const AllReduceOptions& o, bool asked, Algorithm chosen, const Plan& plan, bool* rotate) {
  *rotate = o.rotation == Rotation::kHadamard && (asked || IsQuantized(plan.algorithm));
  const bool raw_f16 = plan.rs_wire.format == codec::Format::kRawF16 ||
                       plan.ag_wire.format == codec::Format::kRawF16;
  if (!*rotate || !raw_f16) return Status::Ok();
  *rotate = false;
  if (asked && chosen == plan.algorithm)
    return InvalidArgument("rotation hadamard with f16 data needs every hop quantized (an "
                           "unquantized f16 hop could overflow in the rotated domain): use "
                           "phases rs+ag, or bf16 or f32 data");
  return Status::Ok();
}

}  // namespace

Status InnerPlan(const Resolved& r, DType dtype, size_t count, int hosts, Plan* plan, bool* rotate) {
  AllReduceOptions inner = r.options;
  inner.algorithm = r.options.inner;
  *plan = SelectPlan(inner, dtype, count, hosts, *r.table, r.rotation_asked);
  // Every inner plan counts as the caller's choice: a rotation asked for is refused, never
  // dropped, where a chunk's plan has an unquantized f16 hop.
  if (!PlanRotates(inner, r.rotation_asked, plan->algorithm, *plan, rotate).ok())
    return InvalidArgument("rotation hadamard with f16 data needs every hop across hosts "
                           "quantized (an unquantized f16 hop could overflow in the rotated "
                           "domain): use inner phases rs+ag, or bf16 or f32 data");
  return Status::Ok();
}

namespace {

// Whether auto's table sends this call to hierarchical (ranks on several hosts; the model's
// choice for the size).
bool AutoPicksHierarchical(const Call& call, const Resolved& r) {
  return r.options.algorithm == Algorithm::kAuto && call.ranks >= 2 &&
         r.table->Lookup(call.ranks, call.dtype, call.count * DTypeSize(call.dtype)).algorithm ==
             Algorithm::kHierarchical;
}

// Steps 4-6 of resolve.h, once the options are valid and the table is known.
Status Decide(const Call& call, Resolved* out) {
  Resolved& r = *out;
  const AllReduceOptions& o = r.options;
  if (call.ranks < 2 || call.count == 0) return Status::Ok();  // nothing moves, nothing rotates
  bool can_repeat = !call.residual && o.mode == ExecutionMode::kNormal;
  if (AutoPicksHierarchical(call, r)) {
    // Every rank decides this from what every rank agrees on; error feedback (which ranks may
    // pass or not) cannot change it, so a rank that passes a residual is refused, on every rank.
    if (call.residual || o.mode != ExecutionMode::kNormal)
      return InvalidArgument("auto chose hierarchical for this size (ranks on several hosts, "
                             "ranks_per_host " + std::to_string(o.ranks_per_host) + "), which takes no "
                             "error feedback or diagnostic mode: pin a flat algorithm, or ranks_per_host 1");
    r.hierarchical = true;  // inner: o.inner
  }
  if (r.hierarchical) {
    EQUARX_RETURN_IF_ERROR(CheckHierarchical(r, call.dtype, call.count, call.ranks));
    r.rotate = o.rotation == Rotation::kHadamard;  // each inner plan decides (InnerPlan)
    can_repeat = false;
  } else {
    r.plan = SelectPlan(o, call.dtype, call.count, call.ranks, *r.table, r.rotation_asked);
    EQUARX_RETURN_IF_ERROR(PlanRotates(o, r.rotation_asked, call.options.algorithm, r.plan, &r.rotate));
    // one_shot in one piece writes its output and the residual only once every contribution
    // is in: it can always repeat.
    const bool whole_one_shot = r.plan.one_shot && OneShotPieces(r.plan, call.ranks) == 1;
    can_repeat = whole_one_shot || (can_repeat && !call.in_place);
  }
  if (r.rotate) r.guard = can_repeat ? RotationGuard::kGuarded : RotationGuard::kCheckFirst;
  return Status::Ok();
}

// Steps 1-2: *out's options, or their error.
Status Begin(const Call& call, const env::Settings& env, Resolved* out) {
  static const TuneTable kBuiltIn = TuneTable::Defaults();
  Resolved& r = *out;
  r = Resolved{};
  r.options = ResolveDefaults(call.options, env, call.hosts_found);
  r.table = &kBuiltIn;
  r.rotation_asked = call.options.rotation == Rotation::kHadamard;
  EQUARX_RETURN_IF_ERROR(CheckOptions(r.options));
  const AllReduceOptions& o = r.options;
  r.hierarchical = o.algorithm == Algorithm::kHierarchical;
  r.uses_auto = o.algorithm == Algorithm::kAuto || (r.hierarchical && o.inner == Algorithm::kAuto);
  return Status::Ok();
}

}  // namespace

Status Resolve(const Call& call, const env::Settings& env, AutoTables* tables, Resolved* out) {
  EQUARX_RETURN_IF_ERROR(Begin(call, env, out));
  if (out->uses_auto) {  // step 3
    AllReduceOptions key = out->options;
    key.rotation = call.options.rotation;
    Status st;
    out->table = &tables->For(key, call.dtype, call.ranks, &out->table_hash, &st);
    EQUARX_RETURN_IF_ERROR(st);
  }
  return Decide(call, out);
}

Status Resolve(const Call& call, const env::Settings& env, const TuneTable& table, Resolved* out) {
  EQUARX_RETURN_IF_ERROR(Begin(call, env, out));
  out->table = &table;
  return Decide(call, out);
}

TuneTable AutoTableOf(const AllReduceOptions& asked, DType dtype, int ranks, const env::Settings& env) {
  AutoTables tables(env);
  Resolved r;
  (void)Resolve({asked, dtype, 1, ranks}, env, &tables, &r);
  return *r.table;
}

}  // namespace equarx::algo
