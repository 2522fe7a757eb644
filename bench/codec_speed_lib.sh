# bench/codec_speed_lib.sh — sourced by bench/rotation_speed.sh, bench/scale_speed.sh,
# bench/threads_speed.sh and bench/fused_speed.sh: the run's environment file and the codec
# kernels on every SIMD target the CPU has.
#
#   speed_env FILE                  commit, machine, load and SIMD targets into FILE
#   codec_kernels DIR FILTER [ARGS] equarx_codec_bench --benchmark_filter=FILTER, forced to each
#                                   target but SCALAR and SSSE3, medians of 5 (ARGS: more flags
#                                   of the benchmark, e.g. more repetitions), into
#                                   DIR/codec_<TARGET>.json (older codec_*.json removed)
#   codec_targets                   the SIMD targets the CPU has, but SCALAR and SSSE3
#   codec_bench BUILD TARGET FILTER OUT [ARGS]
#                                   BUILD's equarx_codec_bench forced to TARGET, medians of 5
#                                   (ARGS: more flags, later ones winning), JSON into OUT
#   before_revision BUILD           the revision of the source tree BUILD was configured from,
#                                   with " (+ uncommitted changes)" when src, include or
#                                   bench/codec differ from it
#   load_after FILE                 appends the load average to FILE
#   env_and_kernels DIR ENV FILTER  mkdir -p DIR, speed_env DIR/ENV, codec_kernels DIR FILTER
B=build/release

speed_env() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src include tools bench/codec || echo ' (+ uncommitted changes)')"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$B/tools/info/equarx-info" | sed -n 2,3p
  } >"$1"
}

codec_targets() {
  local target
  for target in $("$B/tools/info/equarx-info" | sed -n 2p | cut -d: -f2); do
    [[ $target == SCALAR || $target == SSSE3 ]] || echo "$target"
  done
}

codec_bench() {
  GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=100000000 \
    "$1/bench/codec/equarx_codec_bench" --simd_target="$2" --benchmark_filter="$3" \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=json \
    ${5:-} >"$4"
}

codec_kernels() {
  local target
  rm -f "$1"/codec_*.json  # a target this CPU lacks must not keep an older run's file
  for target in $(codec_targets); do
    echo "== codec kernels, $target" >&2
    codec_bench "$B" "$target" "$2" "$1/codec_${target}.json" "${3:-}"
  done
}

before_revision() {
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt")
  echo "$(git -C "$src" rev-parse HEAD)$(git -C "$src" diff --quiet HEAD -- src include bench/codec || echo ' (+ uncommitted changes)')"
}

load_after() { echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$1"; }

env_and_kernels() {
  mkdir -p "$1"
  speed_env "$1/$2"
  codec_kernels "$1" "$3"
}
