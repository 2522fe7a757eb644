// Options as data (equarx/options.h): the one table drives parsing, formatting, checking, the
// C API and the environment; these tests hold each front end to it.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "algo/resolve.h"
#include "common/env.h"
#include "equarx/equarx.h"
#include "equarx/options.h"
#include "world.h"

namespace equarx {
namespace {

// One C AllReduce of 256 floats on each of two in-process ranks, each with its own config.
void RunTwoRanks(equarxComm_t comms[2], const equarxConfig_t cfg[2], equarxResult_t res[2]) {
  std::vector<float> buf[2] = {std::vector<float>(256, 1.0f), std::vector<float>(256, 2.0f)};
  tools::RunOnRanks(2, [&](int r) {
    res[r] = equarxAllReduce(buf[r].data(), buf[r].data(), 256, equarxFloat32, &cfg[r], comms[r]);
    return Status::Ok();  // the C API's result is res[r]
  });
}

TEST(Options, FormatThenParseGivesTheSameOptions) {
  AllReduceOptions o;
  o.algorithm = Algorithm::kTwoShot;
  o.phases = Phases::kAG;
  o.codec = Codec::kFp8E5M2;
  o.block = 128;
  o.scale = ScaleFormat::kBF16;
  o.rounding = Rounding::kStochastic;  // (not a valid combination with fp8: text does not check)
  o.seed = 0xFFFFFFFFFFFFFFFFull;
  o.rotation = Rotation::kHadamard;
  o.microshards = 7;
  o.quantize_min_bytes = 1 << 20;
  o.f32_partials = true;
  o.timeout_ms = 1234;
  o.validate = false;
  o.mode = ExecutionMode::kCodecOnly;
  o.inner = Algorithm::kSemi;
  o.ranks_per_host = 3;
  o.threads = 5;
  const std::string text = FormatOptions(o);
  AllReduceOptions back;
  ASSERT_TRUE(ParseOptions(text, &back).ok()) << text;
  EXPECT_EQ(FormatOptions(back), text);
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(t[i].get(back), t[i].get(o)) << t[i].name;
  // Every field differs from its default here, so the non-default form lists them all.
  EXPECT_EQ(FormatNonDefaultOptions(o), text);
  EXPECT_EQ(FormatNonDefaultOptions(AllReduceOptions{}), "");
}

TEST(Options, AliasesSeparatorsAndSuffixes) {
  AllReduceOptions o;
  ASSERT_TRUE(ParseOptions("algo=semi; codec=e4m3  block=96,quantize-min-bytes=2M rotation=wht", &o).ok());
  EXPECT_EQ(o.algorithm, Algorithm::kSemi);
  EXPECT_EQ(o.codec, Codec::kFp8E4M3);
  EXPECT_EQ(o.block, 96u);
  EXPECT_EQ(o.quantize_min_bytes, size_t(2) << 20);
  EXPECT_EQ(o.rotation, Rotation::kHadamard);
  ASSERT_TRUE(ParseOptions("f32_partials=true,validate=0", &o).ok());
  EXPECT_TRUE(o.f32_partials);
  EXPECT_FALSE(o.validate);
}

TEST(Options, BadTextIsRefusedWithAMessageAndChangesNothing) {
  AllReduceOptions o;
  o.block = 256;
  const std::pair<const char*, const char*> cases[] = {
      {"blok=64", "unknown option 'blok'"},
      {"block=7", "block 7 is out of range [16, 4096]"},
      {"block=abc", "not a non-negative integer"},
      {"codec=int3", "unknown codec 'int3' (valid: int8, int4, fp8_e4m3, fp8_e5m2, int6, int5)"},
      {"rotation=fourier", "unknown rotation 'fourier'"},
      {"validate=maybe", "not a bool"},
      {"block", "not key=value"},
      {"block=64,seed=-1", "not a non-negative integer"},
      {"microshards=65", "microshards 65 is out of range [0, 64]"},
  };
  for (auto [text, want] : cases) {
    Status st = ParseOptions(text, &o);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(st.message().find(want), std::string::npos) << text << ": " << st.message();
    EXPECT_EQ(o.block, 256u) << text;
  }
}

TEST(Options, CheckOptionsRefusesBadValuesAndCombinations) {
  AllReduceOptions o;
  EXPECT_TRUE(CheckOptions(o).ok());
  o.algorithm = Algorithm(42);
  EXPECT_NE(CheckOptions(o).message().find("unknown algorithm 42"), std::string::npos);
  o = {};
  o.codec = Codec::kFp8E4M3;
  o.rounding = Rounding::kStochastic;
  EXPECT_NE(CheckOptions(o).message().find("stochastic rounding needs an integer codec (int8, int6, int5, int4)"), std::string::npos);
  o = {};
  o.algorithm = Algorithm::kNaiveFp8;
  o.rotation = Rotation::kHadamard;
  EXPECT_NE(CheckOptions(o).message().find("naive_fp8"), std::string::npos);
  o.rotation = Rotation::kDefault;  // default resolves to none for naive_fp8
  EXPECT_TRUE(CheckOptions(o).ok());
  o = {};
  o.rotation = Rotation(7);
  EXPECT_FALSE(CheckOptions(o).ok());
  o = {};
  o.scale = ScaleFormat::kTwoLevel;
  o.block = 128;
  EXPECT_TRUE(CheckOptions(o).ok());
  o.codec = Codec::kInt4;
  EXPECT_TRUE(CheckOptions(o).ok());
  o.codec = Codec::kFp8E4M3;
  EXPECT_NE(CheckOptions(o).message().find("scale two_level needs an integer codec (int8, int6, int5, int4), not fp8_e4m3"),
            std::string::npos);
  o.codec = Codec::kInt8;
  o.block = 40;
  EXPECT_NE(CheckOptions(o).message().find("multiple of 16, not 40"), std::string::npos);
  AllReduceOptions p;
  ASSERT_TRUE(ParseOptions("scale=two_level,block=128", &p).ok());
  EXPECT_EQ(p.scale, ScaleFormat::kTwoLevel);
  EXPECT_EQ(RotationBlockOf(p), 16u);
  p.scale = ScaleFormat::kBF16;
  EXPECT_EQ(RotationBlockOf(p), 128u);
}

TEST(Options, EveryEnvironmentVariableOfTheTableIsAKnob) {
  std::set<std::string> knobs;
  for (const env::Knob& k : env::Knobs()) knobs.insert(k.name);
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i) {
    if (!t[i].env.empty()) {
      EXPECT_TRUE(knobs.count(std::string(t[i].env))) << t[i].env;
    }
    EXPECT_FALSE(t[i].doc.empty()) << t[i].name;
    EXPECT_EQ(FindOptionField(t[i].name), &t[i]);
    if (!t[i].alias.empty()) {
      EXPECT_EQ(FindOptionField(t[i].alias), &t[i]);
    }
  }
}

TEST(Options, CConfigCarriesEveryAgreedOption) {
  // Rank 1 changes one C field; the descriptor check must then name that option on both
  // ranks: the field reached the C++ options under the table's name.
  struct Case {
    const char* name;
    void (*set)(equarxConfig_t*);
  };
  const Case cases[] = {
      {"algorithm", [](equarxConfig_t* c) { c->algorithm = equarxAlgoSemi; }},
      {"phases", [](equarxConfig_t* c) { c->phases = equarxPhasesRS; }},
      {"codec", [](equarxConfig_t* c) { c->codec = equarxCodecInt4; }},
      {"block", [](equarxConfig_t* c) { c->block = 256; }},
      {"rounding", [](equarxConfig_t* c) { c->rounding = equarxRoundStochastic; }},
      {"seed", [](equarxConfig_t* c) { c->seed = 9; }},
      {"rotation", [](equarxConfig_t* c) { c->rotation = equarxRotationHadamard; }},
      {"scale", [](equarxConfig_t* c) { c->scale = equarxScaleBF16; }},
      {"microshards", [](equarxConfig_t* c) { c->microshards = 3; }},
      {"quantize_min_bytes", [](equarxConfig_t* c) { c->quantize_min_bytes = 1; }},
      {"f32_partials", [](equarxConfig_t* c) { c->f32_partials = 5; }},
  };
  equarxComm_t comms[2];
  ASSERT_EQ(equarxCommCreateInProcess(2, comms), equarxSuccess);
  for (const Case& k : cases) {
    equarxConfig_t cfg[2] = {EQUARX_CONFIG_INITIALIZER, EQUARX_CONFIG_INITIALIZER};
    cfg[0].rotation = cfg[1].rotation = equarxRotationNone;
    k.set(&cfg[1]);
    equarxResult_t res[2];
    RunTwoRanks(comms, cfg, res);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(res[r], equarxMismatch) << k.name << " rank " << r;
      const std::string msg = equarxCommGetLastError(comms[r]);
      // The descriptor names every option that differs once resolved (scale bf16 also takes
      // block 64), in table order: this one among them.
      const size_t passes = msg.find("passes ");
      ASSERT_NE(passes, std::string::npos) << k.name << ": " << msg;
      const size_t at = msg.find(std::string(k.name) + " ", passes);
      EXPECT_TRUE(at == passes + 7 || (at != std::string::npos && msg.compare(at - 2, 2, ", ") == 0))
          << k.name << ": " << msg;
    }
  }
  for (int r = 0; r < 2; ++r) equarxCommDestroy(comms[r]);
}

TEST(Options, CConfigSetOptionReachesEveryOptionByName) {
  equarxConfig_t c = EQUARX_CONFIG_INITIALIZER;
  EXPECT_EQ(equarxConfigSetOption(&c, "blok", "64"), equarxInvalidArgument);
  EXPECT_NE(std::string(equarxGetLastOptionError()).find("unknown option 'blok'"), std::string::npos);
  EXPECT_EQ(equarxConfigSetOption(&c, "rotation", "fourier"), equarxInvalidArgument);
  EXPECT_NE(std::string(equarxGetLastOptionError()).find("unknown rotation 'fourier'"), std::string::npos);
  EXPECT_EQ(equarxConfigSetOption(&c, "block", "32,seed=1"), equarxInvalidArgument);
  EXPECT_EQ(equarxConfigSetOption(nullptr, "block", "32"), equarxInvalidArgument);
  EXPECT_STREQ(c.options, "");
  ASSERT_EQ(equarxConfigSetOption(&c, "block", "32"), equarxSuccess);
  ASSERT_EQ(equarxConfigSetOption(&c, "scale", "bf16"), equarxSuccess);
  EXPECT_STREQ(c.options, "block=32,scale=bf16");
  EXPECT_STREQ(equarxGetLastOptionError(), "");
  // The text wins over the struct's fields, and a mismatch names the option on every rank.
  equarxComm_t comms[2];
  ASSERT_EQ(equarxCommCreateInProcess(2, comms), equarxSuccess);
  equarxConfig_t cfg[2] = {c, c};
  ASSERT_EQ(equarxConfigSetOption(&cfg[1], "microshards", "3"), equarxSuccess);
  equarxResult_t res[2];
  RunTwoRanks(comms, cfg, res);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(res[r], equarxMismatch);
    EXPECT_NE(std::string(equarxCommGetLastError(comms[r])).find("passes microshards 3"), std::string::npos)
        << equarxCommGetLastError(comms[r]);
  }
  for (int r = 0; r < 2; ++r) equarxCommDestroy(comms[r]);
}

}  // namespace
}  // namespace equarx

namespace equarx {
namespace {

// The environment knobs: a good value is read, a malformed or out-of-range one is ignored (the
// default stands) with a warning that names it.
TEST(Env, KnobsReadGoodValuesAndIgnoreBadOnesWithAWarning) {
  const char* names[] = {"EQUARX_MICROSHARDS", "EQUARX_LINK_GBIT", "EQUARX_STEP_US", "EQUARX_THREADS",
                         "EQUARX_TIMEOUT_MS"};
  ::setenv("EQUARX_MICROSHARDS", "8", 1);
  ::setenv("EQUARX_LINK_GBIT", "2.5", 1);
  ::setenv("EQUARX_STEP_US", "0", 1);
  env::Settings s = env::Read();
  EXPECT_EQ(s.microshards, 8u);
  EXPECT_EQ(s.link_gbit, 2.5);
  EXPECT_EQ(s.step_us, 0.0);
  EXPECT_TRUE(s.warnings.empty());
  const env::Settings d;
  const std::pair<const char*, const char*> bad[] = {
      {"EQUARX_MICROSHARDS", "65"}, {"EQUARX_LINK_GBIT", "fast"}, {"EQUARX_STEP_US", "nan"},
      {"EQUARX_THREADS", "0"}, {"EQUARX_TIMEOUT_MS", "-1"}, {"EQUARX_LINK_GBIT", "1e9"}};
  for (const auto& [name, value] : bad) {
    for (const char* n : names) ::unsetenv(n);
    ::setenv(name, value, 1);
    s = env::Read();
    ASSERT_EQ(s.warnings.size(), 1u) << name << "=" << value;
    EXPECT_NE(s.warnings[0].find(std::string(name) + "='" + value + "' ignored"), std::string::npos)
        << s.warnings[0];
    EXPECT_EQ(s.microshards, d.microshards);
    EXPECT_EQ(s.link_gbit, d.link_gbit);
    EXPECT_EQ(s.step_us, d.step_us);
    EXPECT_EQ(s.threads, d.threads);
    EXPECT_EQ(s.timeout_ms, d.timeout_ms);
  }
  // The warning gives the range as the numbers a user types.
  ::setenv("EQUARX_LINK_GBIT", "fast", 1);
  s = env::Read();
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("expected a number in [0.001, 100000]"), std::string::npos)
      << s.warnings[0];
  for (const char* n : names) ::unsetenv(n);
}

// An option row that names a knob takes the knob's range and default from the knob table, and
// ResolveDefaults fills it from the knob: option > variable > default.
TEST(Env, OptionsThatNameAKnobTakeItsRangeAndValue) {
  size_t n = 0;
  const OptionField* t = OptionFields(&n);
  for (size_t i = 0; i < n; ++i) {
    if (t[i].env.empty()) continue;
    const env::Knob* k = env::FindKnob(t[i].env);
    ASSERT_NE(k, nullptr) << t[i].name;
    if (t[i].kind == OptionKind::kUint) {
      EXPECT_EQ(t[i].min, 0u) << t[i].name;
      EXPECT_EQ(double(t[i].max), k->hi) << t[i].name;
    }
    EXPECT_NE(t[i].doc.find(std::string(t[i].env) + " or "), std::string_view::npos) << t[i].doc;
  }
  EXPECT_EQ(FindOptionField("timeout_ms")->doc, "per-call deadline in ms (0 = EQUARX_TIMEOUT_MS or 300000)");

  // Each knob-fed option: unset with the variable unset, from the variable, asked explicitly.
  struct Case {
    const char* option;
    const char* var;
    const char* text;
    uint64_t from_var, asked, unset;
  };
  const Case cases[] = {
      {"timeout_ms", "EQUARX_TIMEOUT_MS", "1234", 1234, 9, 300000},
      {"microshards", "EQUARX_MICROSHARDS", "7", 7, 2, 0},        // unset: by size (PlanMicroshards)
      {"ranks_per_host", "EQUARX_RANKS_PER_HOST", "2", 2, 4, 3},  // unset: the transport's 3
      {"threads", "EQUARX_THREADS", "5", 5, 1, 0},                // unset: the communicator's
      {"rotation", "EQUARX_ROTATION", "none", uint64_t(Rotation::kNone), uint64_t(Rotation::kHadamard),
       uint64_t(DefaultRotation(Codec::kInt8))},
  };
  for (const Case& c : cases) ::unsetenv(c.var);
  const AllReduceOptions unset = algo::ResolveDefaults(AllReduceOptions{}, env::Read(), 3);
  for (const Case& c : cases) ::setenv(c.var, c.text, 1);
  const env::Settings s = env::Read();
  EXPECT_TRUE(s.warnings.empty());
  const AllReduceOptions from_var = algo::ResolveDefaults(AllReduceOptions{}, s, 3);
  AllReduceOptions asked;
  for (const Case& c : cases) FindOptionField(c.option)->set(&asked, c.asked);
  asked = algo::ResolveDefaults(asked, s, 3);
  for (const Case& c : cases) {
    const OptionField& f = *FindOptionField(c.option);
    EXPECT_EQ(f.get(unset), c.unset) << c.option;
    EXPECT_EQ(f.get(from_var), c.from_var) << c.option;
    EXPECT_EQ(f.get(asked), c.asked) << c.option;
  }
  // The default rotation, the variable's included, applies to quantized plans only.
  AllReduceOptions ring;
  ring.algorithm = Algorithm::kRing;
  ::setenv("EQUARX_ROTATION", "hadamard", 1);
  EXPECT_EQ(algo::ResolveDefaults(ring, env::Read()).rotation, Rotation::kNone);
  for (const Case& c : cases) ::unsetenv(c.var);
}

}  // namespace
}  // namespace equarx
