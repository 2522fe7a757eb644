#!/usr/bin/env bash
# bench/netem/run.sh — AllReduce side by side on an emulated bandwidth-bound cluster.
#
# Builds H "hosts" as network namespaces (PREFIX-h0 .. PREFIX-h{H-1}), each with one veth
# (eqx0) whose peer sits on a Linux bridge in a "switch" namespace (PREFIX-sw); addresses
# SUBNET.1 .. SUBNET.H /24 exist only inside those namespaces. Every host's egress veth is
# shaped with tbf (a ~2 ms burst, a 5 ms queue, TSO/GSO off, MTU 9000: TSO/GSO off keeps the
# shaping stable; docs/benchmarks.md measures why 5 ms and jumbo frames here). One rank
# runs per namespace: mpirun itself runs inside the first host namespace and reaches the others
# through an rsh-agent script (ip netns exec HOST unshare --uts ...), the TCP BTL/OOB limited
# to the subnet. Everything it made is removed on exit — normal, failure or Ctrl-C.
#
# In one invocation, for every H in --hosts and every rate in --rates, on the same sizes:
#   bf16      equarx-perf -d bf16: unquantized ring + int8 {full_bidir,full,semi,two_shot} x {rs,ag,rs+ag}
#   f32       equarx-perf -d f32 : unquantized ring + int8 quantized (--f32-phases) [+ mpi]
#   mpi       MPI_Allreduce f32, Open MPI default algorithm (interleaved into the f32 launch
#             per size when both are selected)
#   mpi_ring  MPI_Allreduce f32 with coll_tuned forced to the ring (algorithm 4)
#   gloo      Gloo ring allreduce f32 (bench/gloo/gloo_bench.cc, built here with g++)
#   formats   equarx-perf -d bf16: unquantized ring + {--format-algos} rs+ag x every codec in
#             --codecs (int8, int4, fp8_e4m3, fp8_e5m2), rounding --rounding
#   auto      equarx-tune (bf16; candidates: --algos, rs+ag) writes a crossover table, then
#             equarx-perf -d bf16 times ring, every --algos rs+ag and algorithm=auto on that
#             table (EQUARX_TUNE_FILE)
#   tuned     equarx's default call on a table measured here: equarx-tune -d f32 (candidates:
#             --algos but auto, with --f32-phases) writes it, then equarx-perf -d f32 times
#             algorithm=auto on it (EQUARX_TUNE_FILE), with mpi interleaved per size beside it;
#             its rows are named auto_tuned and mpi_beside_tuned
#   overlap   equarx-perf --overlap -d bf16 full_bidir,semi rs+ag: full vs wire-only vs codec-only
#   hier      equarx-perf -d bf16 rs+ag: the unquantized ring, the default call (auto), int8
#             full_bidir and two_shot over all ranks, and hierarchical int8 with inner auto and
#             {--hier-inner} (with --ranks-per-host; the flat rows repeat per inner value)
#   link      iperf3 h0 -> h1 for 3 s (if iperf3 is installed): the rate the shaping gives
#   mpitest   build/release/tests/mpi/mpi_test (the MPI correctness suite), one rank per host
#   mpifault  build/release/tests/mpi/mpi_fault_test (a rank SIGKILLed mid-collective)
#   faultmatrix  runs --fault-runner CMD once per host count (bench/fault_matrix.sh calls itself
#             back this way): CMD gets FAULT_NS_MPIEXEC (an mpirun across the namespaces, to
#             which the caller adds -np, the BTLs and the program), FAULT_NS_NP, FAULT_IFACE
#             (the subnet, for Open MPI's *_if_include) and FAULT_SOCKET_IFNAME (eqx0)
#   torch     bench/torch/allreduce_bench.py in --torch-venv (scripts/test_python.sh makes it):
#             torch.distributed all_reduce through the "equarx" backend (int8 full_bidir and
#             two_shot rs+ag, the unquantized ring; bf16 tensors) and gloo on f32 tensors of
#             the same element count, interleaved in one launch; the ranks bootstrap through
#             torch's TCPStore on host 0, not MPI (mpirun only starts the processes)
#   ddp       bench/torch/ddp_train.py in --torch-venv, under torchrun on every host
#             (--ddp-launcher): DDP training, gloo f32 vs the equarx backend's hook (int8,
#             int4, with and without error feedback), --ddp-steps steps
#   gemma3    equarx-gemma3 bench --sweep: Gemma 3 prefill latency, one tensor-parallel rank per
#             host, bf16 ring vs int8 EQuARX, for --gemma3-tokens (needs --gemma3-model)
#   gemma3gen equarx-gemma3 generate: Gemma 3 greedy decode, one tensor-parallel rank per host,
#             --gen-prompt-tokens of apps/gemma3/data/prompt.txt and --gen-tokens new tokens, with
#             equarx's default call (auto), the unquantized ring and MPI_Allreduce, in one launch;
#             --gen-launches launches (needs --gemma3-model)
#   transformers  examples/python/transformers_tp.py in --torch-venv (PyTorch 2.x), under torchrun
#             on every host: Hugging Face transformers' tensor parallelism (tp_plan "auto") of
#             --tf-model, one rank per host, greedy generation over the "equarx" backend (its
#             default call) and over gloo, --tf-launches alternating launches of each, time to
#             first token for --tf-prompt-tokens and decode tokens/s over --tf-tokens
#   encrypt   equarx-perf -d bf16 --algo auto,ring rs+ag (the default call, and the unquantized ring)
#             with EQUARX_ENCRYPT=0 and =1, --enc-launches alternating launches of each
# Output (--out DIR): rows.jsonl (every row, tagged hosts/rate/launch), rows.csv, raw/*.log,
# raw/*.jsonl, env.txt (commit, load, binaries). Progress goes to stderr.
#
# Needs root, iproute2 (ip, tc), ethtool, Open MPI (mpirun), g++ and libgloo-dev for gloo,
# and the release build (cmake --preset release && cmake --build --preset release).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/netem/run.sh [options]
  --hosts LIST        host counts, comma-separated (default 4)
  --ranks-per-host R  ranks in each host namespace, in rank order (default 1); every rank gets
                      EQUARX_RANKS_PER_HOST=R (algorithm hierarchical); not with mpitest, mpifault,
                      faultmatrix, gemma3, gemma3gen or transformers
  --discover-layout   set no EQUARX_RANKS_PER_HOST: the ranks find their layout themselves (the
                      host data path groups them by host name and boot id; each namespace has a
                      host name of its own)
  --rates LIST        per-link egress rate: tc rates like 1gbit, 2.5gbit, or none (default 1gbit)
  --configs LIST      link,bf16,f32,mpi,mpi_ring,gloo,torch,ddp,hier,formats,auto,tuned,overlap,mpitest,mpifault,
                      faultmatrix,gemma3,gemma3gen,transformers,encrypt (default link,bf16,f32,mpi,mpi_ring,gloo)
  -b SIZE -e SIZE -f F  sizes in bytes, K/M/G suffixes (default 1M 64M 2)
  -n N -w N           timed and warm-up iterations (default 5, 2)
  --overlap-sizes LIST  sizes for the overlap config (default 16M,64M)
  --overlap-algos LIST  algorithms for the overlap config, rs+ag on bf16 (default full_bidir,semi)
  --algos LIST        quantized algorithms (default full_bidir,full,semi,two_shot)
  --hier-inner LIST   inner algorithms of the hier config (default two_shot)
  --codecs LIST       codecs of the formats config (default int8,int4,fp8_e4m3,fp8_e5m2)
  --format-algos LIST algorithms of the formats config, rs+ag (default full,two_shot)
  --rounding R        rounding of the formats config: nearest or stochastic (default nearest)
  --phases LIST       phases on bf16 data (default rs,ag,rs+ag)
  --f32-phases LIST   phases on f32 data (default rs+ag)
  --block N           int8 block (default 128; 0: the library's default for the scale format)
  --rotation LIST     rotation of every equarx-perf launch: none, hadamard or a comma list (each
                      row records it); default: the library's (hadamard for int8, none for fp8)
  --scale LIST        block-scale format of every equarx-perf launch: f32, bf16, two_level,
                      default (the library's: two_level for the integer codecs, f32 for fp8) or a
                      comma list (each row records it); default f32
  --microshards LIST  microshards of every equarx-perf launch: a count, 0 (the library's: by size)
                      or a comma list (each row records it); default: the library's
  --check 0|1         error check against the f64 sum (default 1)
  --out DIR           results directory (default out/netem/YYYYmmdd-HHMMSS)
  --prefix NAME       namespace name prefix, [a-z][a-z0-9-]{0,19} (default eqx-PID)
  --tbf-latency T     tbf queue limit as a delay (default 5ms; the usual recipe uses 1ms, see docs/benchmarks.md)
  --mtu N             MTU of every veth and the bridge (default 9000, jumbo frames: see docs/benchmarks.md)
  --subnet A.B.C      private /24 used inside the namespaces only (default 10.77.0)
  --build DIR         equarx build directory (default build/release)
  --launch-timeout S  kill a launch that runs longer than S seconds (default 1800)
  --keep-going        continue with the next launch when one fails (default: stop)
  --threads T         codec threads of every rank (EQUARX_THREADS; default 1: the emulated hosts
                      share this machine's cores, so more threads per rank only compete)
  --data-path P       how equarx moves data (EQUARX_DATA_PATH): sockets (equarx's own TCP
                      connections over eqx0), host (rings between the ranks of one emulated host,
                      TCP over eqx0 between hosts), shm (rings only) or mpi (MPI point-to-point);
                      the MPI peers are unaffected (default sockets, the library's default)
  --fault-runner CMD  the command of the faultmatrix config (a bash command line)
  --ddp-steps N       training steps of each ddp run (default 300)
  --ddp-launcher L    torchrun (default: a torchrun agent on every host, one worker each,
                      static rendezvous at host 0; mpirun places the agents in their
                      namespaces) or mpirun (mpirun starts the workers themselves)
  --torch-venv DIR    the Python environment of the torch and ddp configs, relative to the
                      repository: .venv-torch2 (PyTorch 2.15 from PyPI, default) or
                      .venv-torch (Debian's 1.13); scripts/test_python.sh makes both
  --gemma3-model F    GGUF for the gemma3 config (default .venv/models/gemma-3-270m-q4_k_m.gguf)
  --gemma3-tokens L   prompt lengths of the gemma3 config (default 512,1024,2048)
  --gemma3-reps N     timed passes per configuration and length, after one warm-up (default 3)
  --gemma3-threads N  GEMM threads per rank (default 1: the ranks share this machine's cores)
  --gen-prompt-tokens N, --gen-tokens M, --gen-launches L  the gemma3gen config's prompt and new tokens, launches (512, 128, 2)
  --enc-launches N    launches of each mode in the encrypt config, alternating (default 3)
  --tf-model DIR      checkpoint of the transformers config (default .venv-torch2/models/gemma3-270m-tp,
                      made by examples/python/gemma3_tp_checkpoint.py)
  --tf-prompt-tokens N, --tf-tokens M  prompt and new tokens of the transformers config (default 512, 64)
  --tf-reps N         timed generations per launch, after one warm-up if N > 1 (default 3)
  --tf-launches N     launches of each backend, alternating equarx and gloo (default 2)
  -h, --help
EOF
}

# ---------------------------------------------------------------- options
ORIG_ARGS="$*"
DDP_STEPS=300 DDP_LAUNCHER=torchrun TORCH_VENV=.venv-torch2 RPH=1 THREADS=1 HIER_INNER=two_shot HOSTS_LIST=4 RATES_LIST=1gbit CONFIGS=link,bf16,f32,mpi,mpi_ring,gloo
MINB=1M MAXB=64M FACTOR=2 ITERS=5 WARMUP=2 OVERLAP_SIZES=16M,64M OVERLAP_ALGOS=full_bidir,semi
ALGOS=full_bidir,full,semi,two_shot PHASES=rs,ag,rs+ag F32_PHASES=rs+ag BLOCK=128 CHECK=1
CODECS=int8,int4,fp8_e4m3,fp8_e5m2 FORMAT_ALGOS=full,two_shot ROUNDING=nearest
DATA_PATH=sockets ROTATION= SCALE=f32 MICROSHARDS= DISCOVER=0
GEMMA3_MODEL=.venv/models/gemma-3-270m-q4_k_m.gguf GEMMA3_TOKENS=512,1024,2048 GEMMA3_REPS=3 GEMMA3_THREADS=1
GEN_PROMPT=512 GEN_TOKENS=128 GEN_LAUNCHES=2 ENC_LAUNCHES=3
TF_MODEL=.venv-torch2/models/gemma3-270m-tp TF_PROMPT=512 TF_TOKENS=64 TF_REPS=3 TF_LAUNCHES=2
FAULT_RUNNER="" OUT="" PREFIX="eqx-$$" SUBNET=10.77.0 MTU=9000 TBF_LATENCY=5ms BUILD=build/release LAUNCH_TIMEOUT=1800 KEEP_GOING=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) HOSTS_LIST=$2; shift ;;
    --ranks-per-host) RPH=$2; shift ;;
    --discover-layout) DISCOVER=1 ;;
    --threads) THREADS=$2; shift ;;
    --hier-inner) HIER_INNER=$2; shift ;;
    --rates|--rate) RATES_LIST=$2; shift ;;
    --configs) CONFIGS=$2; shift ;;
    -b) MINB=$2; shift ;;
    -e) MAXB=$2; shift ;;
    -f) FACTOR=$2; shift ;;
    -n) ITERS=$2; shift ;;
    -w) WARMUP=$2; shift ;;
    --overlap-sizes) OVERLAP_SIZES=$2; shift ;;
    --overlap-algos) OVERLAP_ALGOS=$2; shift ;;
    --algos) ALGOS=$2; shift ;;
    --rotation) ROTATION=$2; shift ;;
    --scale) SCALE=$2; shift ;;
    --codecs) CODECS=$2; shift ;;
    --format-algos) FORMAT_ALGOS=$2; shift ;;
    --rounding) ROUNDING=$2; shift ;;
    --phases) PHASES=$2; shift ;;
    --f32-phases) F32_PHASES=$2; shift ;;
    --block) BLOCK=$2; shift ;;
    --check) CHECK=$2; shift ;;
    --microshards) MICROSHARDS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --prefix) PREFIX=$2; shift ;;
    --subnet) SUBNET=$2; shift ;;
    --mtu) MTU=$2; shift ;;
    --tbf-latency) TBF_LATENCY=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --launch-timeout) LAUNCH_TIMEOUT=$2; shift ;;
    --data-path) DATA_PATH=$2; shift ;;
    --fault-runner) FAULT_RUNNER=$2; shift ;;
    --ddp-steps) DDP_STEPS=$2; shift ;;
    --torch-venv) TORCH_VENV=$2; shift ;;
    --ddp-launcher) DDP_LAUNCHER=$2; shift ;;
    --gemma3-model) GEMMA3_MODEL=$2; shift ;;
    --gemma3-tokens) GEMMA3_TOKENS=$2; shift ;;
    --gemma3-reps) GEMMA3_REPS=$2; shift ;;
    --gemma3-threads) GEMMA3_THREADS=$2; shift ;;
    --gen-prompt-tokens) GEN_PROMPT=$2; shift ;;
    --gen-tokens) GEN_TOKENS=$2; shift ;;
    --gen-launches) GEN_LAUNCHES=$2; shift ;;
    --enc-launches) ENC_LAUNCHES=$2; shift ;;
    --tf-model) TF_MODEL=$2; shift ;;
    --tf-prompt-tokens) TF_PROMPT=$2; shift ;;
    --tf-tokens) TF_TOKENS=$2; shift ;;
    --tf-reps) TF_REPS=$2; shift ;;
    --tf-launches) TF_LAUNCHES=$2; shift ;;
    --keep-going) KEEP_GOING=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
[[ $PREFIX =~ ^[a-z][a-z0-9-]{0,19}$ ]] || { echo "run.sh: --prefix must be [a-z][a-z0-9-]{0,19}" >&2; exit 2; }
[[ $SUBNET =~ ^(10|192\.168|172\.(1[6-9]|2[0-9]|3[01]))(\.[0-9]{1,3}){1,2}$ ]] && [[ $(tr -cd . <<<"$SUBNET" | wc -c) -eq 2 ]] ||
  { echo "run.sh: --subnet must be a private A.B.C" >&2; exit 2; }
[[ $DATA_PATH =~ ^(sockets|host|shm|mpi)$ ]] || { echo "run.sh: --data-path must be sockets, host, shm or mpi" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "run.sh: needs root (network namespaces, tc)" >&2; exit 2; }
for t in ip tc ethtool mpirun unshare timeout; do
  command -v $t >/dev/null || { echo "run.sh: $t not found" >&2; exit 2; }
done
has() { [[ ,$CONFIGS, == *,$1,* ]]; }
for c in ${CONFIGS//,/ }; do
  case $c in
    link|bf16|f32|mpi|mpi_ring|gloo|torch|ddp|hier|formats|auto|tuned|overlap|mpitest|mpifault|faultmatrix|gemma3|gemma3gen|transformers|encrypt) ;;
    *) echo "run.sh: unknown config '$c' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $RPH =~ ^[0-9]+$ && $RPH -ge 1 && $RPH -le 16 ]] || { echo "run.sh: --ranks-per-host must be 1..16" >&2; exit 2; }
[[ $THREADS =~ ^[0-9]+$ && $THREADS -ge 1 && $THREADS -le 64 ]] || { echo "run.sh: --threads must be 1..64" >&2; exit 2; }
[[ $DDP_STEPS =~ ^[0-9]+$ && $DDP_STEPS -ge 1 ]] || { echo "run.sh: --ddp-steps must be a positive integer" >&2; exit 2; }
[[ $DDP_LAUNCHER == torchrun || $DDP_LAUNCHER == mpirun ]] || { echo "run.sh: --ddp-launcher must be torchrun or mpirun" >&2; exit 2; }
for v in TF_PROMPT TF_TOKENS TF_REPS TF_LAUNCHES GEN_PROMPT GEN_TOKENS GEN_LAUNCHES ENC_LAUNCHES; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -ge 1 ]] || { echo "run.sh: the --tf-*, --gen-* and --enc-* counts must be positive integers" >&2; exit 2; }
done
if [[ $RPH -gt 1 ]] && { has mpitest || has mpifault || has faultmatrix || has gemma3 || has gemma3gen || has transformers; }; then
  echo "run.sh: mpitest, mpifault, faultmatrix, gemma3, gemma3gen and transformers run one rank per host (--ranks-per-host 1)" >&2; exit 2
fi
if has faultmatrix && [[ -z $FAULT_RUNNER ]]; then echo "run.sh: faultmatrix needs --fault-runner" >&2; exit 2; fi
log() { printf '[netem %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

OUT=${OUT:-out/netem/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw" "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
: >"$OUT/rows.jsonl"

# Snapshot the binaries: others may rebuild build/release while a long sweep runs.
PERF=$OUT/bin/equarx-perf
if has bf16 || has f32 || has mpi || has mpi_ring || has formats || has auto || has tuned || has overlap || has hier || has encrypt; then
  cp "$BUILD/tools/perf/equarx-perf" "$PERF"
fi
if has mpitest; then cp "$BUILD/tests/mpi/mpi_test" "$OUT/bin/mpi_test"; fi
if has mpifault; then cp "$BUILD/tests/mpi/mpi_fault_test" "$OUT/bin/mpi_fault_test"; fi
if has auto || has tuned; then cp "$BUILD/tools/tune/equarx-tune" "$OUT/bin/equarx-tune"; fi
if has gemma3 || has gemma3gen; then
  [[ -f $GEMMA3_MODEL ]] || { echo "run.sh: no model at $GEMMA3_MODEL (run scripts/fetch_model.sh)" >&2; exit 2; }
  GEMMA3_MODEL=$(realpath "$GEMMA3_MODEL")
  cp "$BUILD/apps/gemma3/equarx-gemma3" "$OUT/bin/equarx-gemma3"
fi
if has transformers; then
  [[ -f $TF_MODEL/config.json ]] || { echo "run.sh: no checkpoint at $TF_MODEL (examples/python/gemma3_tp_checkpoint.py)" >&2; exit 2; }
  TF_MODEL=$(realpath "$TF_MODEL")
fi
if has gloo; then
  log "building bench/gloo/gloo_bench.cc (g++ -O2, -lgloo)"
  g++ -O2 -std=c++17 bench/gloo/gloo_bench.cc -o "$OUT/bin/gloo-bench" -lgloo -pthread
fi

# ---------------------------------------------------------------- topology
SW=$PREFIX-sw
NSES=()          # every namespace this run created, in creation order
CUR_H=0
NET=$SUBNET.0/24

ns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$1"; }

ns_kill() {   # every process in this run's namespaces: TERM, then KILL
  local ns pids sig
  for sig in TERM KILL; do
    for ns in "${NSES[@]}"; do
      ns_exists "$ns" || continue
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [[ -n $pids ]] && kill -$sig $pids 2>/dev/null || true
    done
    [[ $sig == KILL ]] || sleep 0.3
  done
}

teardown() {
  local ns
  ns_kill
  for ns in "${NSES[@]}"; do
    ns_exists "$ns" && ip netns del "$ns" 2>/dev/null || true
  done
  NSES=()
  rm -rf "$OUT/run"
}

on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  teardown
  if [[ $rc -ne 0 ]]; then log "exit status $rc; namespaces removed"; fi
  exit $rc
}
trap on_exit EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

host() { echo "$PREFIX-h$1"; }

net_up() {   # net_up H
  local h=$1 i ns
  CUR_H=$h
  log "topology: $h hosts, MTU $MTU, $(host 0)..$(host $((h - 1))), bridge in $SW, $NET"
  ip netns add "$SW"; NSES+=("$SW")
  ip -n "$SW" link set lo up
  ip -n "$SW" link add br0 type bridge
  ip -n "$SW" link set br0 up
  for ((i = 0; i < h; i++)); do
    ns=$(host $i)
    ip netns add "$ns"; NSES+=("$ns")
    ip -n "$ns" link set lo up
    # Both ends are created directly inside their namespaces: nothing appears in the root one.
    ip -n "$SW" link add "p$i" type veth peer name eqx0 netns "$ns"
    ip -n "$SW" link set "p$i" mtu "$MTU"
    ip -n "$ns" link set eqx0 mtu "$MTU"
    ip -n "$SW" link set "p$i" master br0 up
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev eqx0
    ip -n "$ns" link set eqx0 up
    ip netns exec "$ns" ethtool -K eqx0 tso off gso off >/dev/null 2>&1 || true
    ip netns exec "$SW" ethtool -K "p$i" tso off gso off >/dev/null 2>&1 || true
  done
  mkdir -p "$OUT/run"
  : >"$OUT/run/hostfile"
  for ((i = 0; i < h; i++)); do echo "$(host $i) slots=$RPH" >>"$OUT/run/hostfile"; done
  cat >"$OUT/run/rsh-agent" <<'EOF'
#!/bin/bash
# Stand-in for ssh: "rsh-agent [opts] HOST COMMAND..." runs COMMAND in namespace HOST with the
# namespace's name as its hostname (Open MPI tells nodes apart by hostname).
while [[ $1 == -* ]]; do shift; done
host=$1; shift
exec ip netns exec "$host" unshare --uts bash -c "hostname $host; $*"
EOF
  chmod +x "$OUT/run/rsh-agent"
  # Every host answers from h0 (no ping on this machine: a TCP connect to a closed port must be
  # refused, which proves the path; a timeout means it is not there).
  local err
  for ((i = 1; i < h; i++)); do
    err=$(ip netns exec "$(host 0)" timeout 3 bash -c "exec 3<>/dev/tcp/$SUBNET.$((i + 1))/9" 2>&1 || true)
    [[ $err == *refused* ]] || { log "host $(host $i) unreachable: $err"; return 1; }
  done
}

burst_for() {   # tbf burst that keeps ~2 ms of line rate, at least 64 KB (256 KB at 1 Gbit/s)
  awk -v r="$1" 'BEGIN {
    n = r + 0; u = tolower(substr(r, length(n "") + 1));
    if (u ~ /^gbit/) b = n * 1e9; else if (u ~ /^mbit/) b = n * 1e6; else if (u ~ /^kbit/) b = n * 1e3; else b = n;
    k = int(b / 8 * 0.002 / 1024); if (k < 64) k = 64; printf "%dkb", k }'
}

shape() {   # shape RATE|none
  local rate=$1 i ns
  for ((i = 0; i < CUR_H; i++)); do
    ns=$(host $i)
    tc -n "$ns" qdisc del dev eqx0 root 2>/dev/null || true
    if [[ $rate != none ]]; then
      tc -n "$ns" qdisc add dev eqx0 root tbf rate "$rate" burst "$(burst_for "$rate")" latency "$TBF_LATENCY"
    fi
  done
  if [[ $rate == none ]]; then log "links unshaped"; else
    log "every host's egress: tbf rate $rate burst $(burst_for "$rate") latency $TBF_LATENCY"; fi
}

# ---------------------------------------------------------------- launching
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mpirun_argv() {   # the mpirun command line (without the program): RPH ranks on each of CUR_H hosts
  MPIRUN=(mpirun -np "$((CUR_H * RPH))" --map-by slot --hostfile "$OUT/run/hostfile" --oversubscribe --bind-to none
          --mca plm_rsh_agent "$OUT/run/rsh-agent" --mca plm_rsh_no_tree_spawn 1
          --mca oob_tcp_if_include "$NET" --mca btl_tcp_if_include "$NET"
          --mca pml ob1 --mca btl tcp,self --mca mpi_yield_when_idle 1
          -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
          -x EQUARX_DATA_PATH="$DATA_PATH" -x EQUARX_SOCKET_IFNAME=eqx0 -x EQUARX_THREADS="$THREADS")
  if [[ $DISCOVER == 0 ]]; then MPIRUN+=(-x EQUARX_RANKS_PER_HOST="$RPH"); fi
}

tbf_stats() {   # "sent_bytes dropped requeues" summed over every host's egress qdisc
  local i
  for ((i = 0; i < CUR_H; i++)); do tc -s -n "$(host $i)" qdisc show dev eqx0; done |
    awk '/Sent/ {b += $2; d += $7 + 0} END {printf "%.0f %.0f\n", b, d}'
}

FAILED=0
RENAME=""       # optional extra sed expression applied to a launch's rows
EXPECT_FAIL=0   # 1: a non-zero exit is the expected outcome (the fault test kills a rank)
launch() {   # launch LABEL RATE [mpirun options --] PROGRAM ARGS...
  local label=$1 rate=$2; shift 2
  local extra=()
  if [[ " $* " == *" -- "* ]]; then
    while [[ $1 != -- ]]; do extra+=("$1"); shift; done
    shift
  fi
  mpirun_argv
  local cmd=("${MPIRUN[@]}" "${extra[@]}" "$@")
  local tag="H${CUR_H}_${rate}_${label}" h0 rc=0
  h0=$(host 0)
  echo "ip netns exec $h0 unshare --uts bash -c \"hostname $h0; ${cmd[*]}\"" >"$OUT/raw/$tag.cmd"
  log "H=$CUR_H rate=$rate $label: ${cmd[*]:${#MPIRUN[@]}}"
  local st0; st0=$(tbf_stats)
  # In the background, polled, so that a signal to this script is acted on within a second
  # (its trap then kills every process in the namespaces); a blocking wait can miss it when
  # the caller's signal mask blocks SIGCHLD. --foreground: the timeout signals mpirun itself.
  ( timeout --foreground -k 10 "$LAUNCH_TIMEOUT" ip netns exec "$h0" unshare --uts \
      bash -c "hostname $h0 && exec $(printf '%q ' "${cmd[@]}")" 2>&1 | tee "$OUT/raw/$tag.log" >&2 ) &
  LAUNCH_PID=$!
  local t0=$SECONDS
  while kill -0 "$LAUNCH_PID" 2>/dev/null; do
    sleep 0.5
    # timeout signals mpirun only; a rank that outlives it would keep the pipe open.
    if ((SECONDS - t0 > LAUNCH_TIMEOUT + 20)); then ns_kill; fi
  done
  wait "$LAUNCH_PID" || rc=$?
  LAUNCH_PID=""
  local st1; st1=$(tbf_stats)
  read -r b0 d0 <<<"$st0"; read -r b1 d1 <<<"$st1"
  if [[ $rate != none ]]; then
    log "H=$CUR_H rate=$rate $label: egress qdiscs sent $(((b1 - b0) >> 20)) MiB, dropped $((d1 - d0)) packets"
    echo "H=$CUR_H rate=$rate $label: egress sent $(((b1 - b0) >> 20)) MiB, dropped $((d1 - d0)) packets" >>"$OUT/env.txt"
  fi
  if [[ $rc -ne 0 && $EXPECT_FAIL -eq 1 && $rc -ne 124 && $rc -ne 137 ]]; then
    rc=0
  fi
  if [[ $rc -ne 0 ]]; then
    log "H=$CUR_H rate=$rate $label: FAILED (exit $rc), see $OUT/raw/$tag.log"
    FAILED=$((FAILED + 1))
    [[ $KEEP_GOING -eq 1 ]] || exit 1
    return 0
  fi
  if [[ -f $OUT/raw/$tag.jsonl ]]; then
    sed -e "s|^{|{\"hosts\":$CUR_H,\"ranks_per_host\":$RPH,\"rate\":\"$rate\",\"launch\":\"$label\",|" ${RENAME:+-e "$RENAME"} \
      "$OUT/raw/$tag.jsonl" >>"$OUT/rows.jsonl"
  fi
}

link_check() {   # one TCP stream h0 -> h1 for 3 s with iperf3 (if installed): the shaped rate
  local rate=$1 res
  command -v iperf3 >/dev/null || { log "link: iperf3 not installed, skipped"; return 0; }
  timeout 20 ip netns exec "$(host 1)" iperf3 -s -1 -B "$SUBNET.2" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.5
  res=$(timeout 20 ip netns exec "$(host 0)" iperf3 -c "$SUBNET.2" -t 3 -f m 2>&1 | awk '/receiver/ {print $7, $8}')
  wait $srv 2>/dev/null || true
  log "link check H=$CUR_H rate=$rate: iperf3 h0 -> h1 ${res:-failed}"
  echo "H=$CUR_H rate=$rate link check (iperf3, 1 stream, 3 s): ${res:-failed}" >>"$OUT/env.txt"
}

perf_common() {
  PERF_ARGS=(-n "$ITERS" -w "$WARMUP" -c "$CHECK" --block "$BLOCK")
  if [[ -n $ROTATION ]]; then PERF_ARGS+=(--rotation "$ROTATION"); fi
  if [[ -n $MICROSHARDS ]]; then PERF_ARGS+=(--microshards "$MICROSHARDS"); fi
  PERF_ARGS+=(--scale "$SCALE")
}

# shellcheck source=bench/netem/app_configs.sh
source "$REPO/bench/netem/app_configs.sh"

candidates() {   # candidates PHASES: equarx-tune's --candidates, every --algos but auto and ring
  local a out=""
  for a in ${ALGOS//,/ }; do
    if [[ $a != auto && $a != ring ]]; then out+="${out:+,}$a:$1"; fi
  done
  echo "$out"
}

run_all_configs() {   # for the current topology and RATE
  local rate=$1 tag="H${CUR_H}_$1"
  perf_common
  if has link; then link_check "$rate"; fi
  if has bf16; then
    launch bf16 "$rate" "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d bf16 \
      --algo "ring,$ALGOS" --phases "$PHASES" -J "$OUT/raw/${tag}_bf16.jsonl"
  fi
  if has f32; then
    local a="ring,$ALGOS"
    if has mpi; then a+=",mpi"; fi
    launch f32 "$rate" "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d f32 \
      --algo "$a" --phases "$F32_PHASES" -J "$OUT/raw/${tag}_f32.jsonl"
  elif has mpi; then
    launch mpi "$rate" "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d f32 \
      --algo mpi -J "$OUT/raw/${tag}_mpi.jsonl"
  fi
  if has mpi_ring; then
    # The same MPI_Allreduce, coll_tuned forced to the ring: its rows are named mpi_ring.
    RENAME='s/"algo":"mpi"/"algo":"mpi_ring"/'
    launch mpi_ring "$rate" --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4 -- \
      "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d f32 --algo mpi \
      -J "$OUT/raw/${tag}_mpi_ring.jsonl"
    RENAME=""
  fi
  if has gloo; then
    local store="$OUT/run/gloo-store-$rate-$RANDOM"
    rm -rf "$store"; mkdir -p "$store"
    launch gloo "$rate" "$OUT/bin/gloo-bench" -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" \
      -w "$WARMUP" --store "$store" --iface eqx0 -J "$OUT/raw/${tag}_gloo.jsonl"
    rm -rf "$store"
  fi
  run_app_configs "$rate" "$tag"  # torch, ddp, transformers, gemma3gen, gemma3, encrypt (bench/netem/app_configs.sh)
  if has hier; then
    launch hier "$rate" "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d bf16 \
      --algo ring,auto,full_bidir,two_shot,hierarchical --inner "auto,$HIER_INNER" --phases rs+ag \
      -J "$OUT/raw/${tag}_hier.jsonl"
  fi
  if has formats; then
    launch formats "$rate" "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d bf16 \
      --algo "ring,$FORMAT_ALGOS" --phases rs+ag --codec "$CODECS" --rounding "$ROUNDING" \
      -J "$OUT/raw/${tag}_formats.jsonl"
  fi
  if has auto; then
    # algorithm=auto on a crossover table measured here by equarx-tune (bf16), then timed
    # side by side with the ring and every quantized algorithm.
    local table="$OUT/run/tune_${tag}.txt"
    launch tune "$rate" "$OUT/bin/equarx-tune" -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" \
      -w "$WARMUP" -d bf16 --candidates "$(candidates rs+ag)" --out "$table"
    cp "$table" "$OUT/raw/${tag}_tune.txt" 2>/dev/null || true
    launch auto "$rate" -x EQUARX_TUNE_FILE="$table" -- "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" \
      "${PERF_ARGS[@]}" -d bf16 --algo "ring,$ALGOS,auto" --phases rs+ag -J "$OUT/raw/${tag}_auto.jsonl"
  fi
  if has tuned; then
    local table="$OUT/run/tuned_${tag}.txt"
    launch tune_f32 "$rate" "$OUT/bin/equarx-tune" -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" \
      -w "$WARMUP" -d f32 --candidates "$(candidates "$F32_PHASES")" --out "$table"
    cp "$table" "$OUT/raw/${tag}_tuned.txt" 2>/dev/null || true
    RENAME='s/"algo":"auto"/"algo":"auto_tuned"/;s/"algo":"mpi"/"algo":"mpi_beside_tuned"/'
    launch tuned "$rate" -x EQUARX_TUNE_FILE="$table" -- "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" \
      "${PERF_ARGS[@]}" -d f32 --algo "auto$(has mpi && echo ,mpi)" --phases "$F32_PHASES" \
      -J "$OUT/raw/${tag}_tuned.jsonl"
    RENAME=""
  fi
  if has overlap; then
    local s
    for s in ${OVERLAP_SIZES//,/ }; do
      launch "overlap_$s" "$rate" "$PERF" -b "$s" -e "$s" "${PERF_ARGS[@]}" -d bf16 \
        --algo "$OVERLAP_ALGOS" --phases rs+ag --overlap -J "$OUT/raw/${tag}_overlap_$s.jsonl"
    done
  fi
  if has mpitest; then
    launch mpitest "$rate" "$OUT/bin/mpi_test"
    if grep -q 'PASSED' "$OUT/raw/H${CUR_H}_${rate}_mpitest.log" 2>/dev/null &&
       ! grep -q 'FAILED' "$OUT/raw/H${CUR_H}_${rate}_mpitest.log"; then
      echo "H=$CUR_H rate=$rate mpitest: PASS ($(grep -c 'OK \]' "$OUT/raw/H${CUR_H}_${rate}_mpitest.log") tests)" >>"$OUT/env.txt"
    else
      echo "H=$CUR_H rate=$rate mpitest: FAIL" >>"$OUT/env.txt"; FAILED=$((FAILED + 1))
    fi
  fi
  if has faultmatrix; then
    # mpirun from the first host across all of them; the runner adds -np, the BTLs, the program.
    cat >"$OUT/run/mpirun-ns" <<EOF
#!/bin/bash
exec ip netns exec $(host 0) unshare --uts bash -c 'hostname $(host 0) && exec mpirun --map-by slot \\
  --hostfile $OUT/run/hostfile --mca plm_rsh_agent $OUT/run/rsh-agent --mca plm_rsh_no_tree_spawn 1 \\
  --mca pml ob1 -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM "\$@"' mpirun-ns "\$@"
EOF
    chmod +x "$OUT/run/mpirun-ns"
    log "H=$CUR_H faultmatrix: $FAULT_RUNNER"
    local frc=0
    FAULT_NS_MPIEXEC=$OUT/run/mpirun-ns FAULT_NS_NP=$CUR_H FAULT_IFACE=$NET FAULT_SOCKET_IFNAME=eqx0 \
      bash -c "$FAULT_RUNNER" || frc=$?
    if [[ $frc -eq 0 ]]; then
      echo "H=$CUR_H rate=$rate faultmatrix: the runner completed" >>"$OUT/env.txt"
    else
      echo "H=$CUR_H rate=$rate faultmatrix: the runner failed (exit $frc)" >>"$OUT/env.txt"; FAILED=$((FAILED + 1))
    fi
  fi
  if has mpifault; then
    # The last rank SIGKILLs itself mid-collective (timeout 0 = the 3 s deadline applies); every
    # survivor must print a timeout or remote_error status within the deadline + slack.
    local ftag="H${CUR_H}_${rate}_mpifault" deadline=3000 n worst
    # A hang is the failure this test looks for: give it 120 s, record it, go on.
    local keep=$KEEP_GOING limit=$LAUNCH_TIMEOUT failed0=$FAILED
    EXPECT_FAIL=1 KEEP_GOING=1 LAUNCH_TIMEOUT=120
    launch mpifault "$rate" --enable-recovery -- "$OUT/bin/mpi_fault_test" $((CUR_H - 1)) $deadline
    EXPECT_FAIL=0 KEEP_GOING=$keep LAUNCH_TIMEOUT=$limit
    n=$(grep -c '^FAULT rank=.* status=\(timeout\|remote_error\)' "$OUT/raw/$ftag.log" || true)
    worst=$(grep -o 'elapsed_ms=[0-9]*' "$OUT/raw/$ftag.log" | cut -d= -f2 | sort -n | tail -1)
    if [[ $n -eq $((CUR_H - 1)) && -n $worst && $worst -le $((deadline + 4000)) ]]; then
      echo "H=$CUR_H rate=$rate mpifault: PASS ($n survivors returned an error status, slowest ${worst} ms, deadline ${deadline} ms)" >>"$OUT/env.txt"
      log "mpifault: PASS ($n survivors, slowest ${worst} ms)"
    else
      echo "H=$CUR_H rate=$rate mpifault: FAIL ($n of $((CUR_H - 1)) survivors reported, slowest ${worst:-?} ms; a hang is killed after 120 s)" >>"$OUT/env.txt"
      log "mpifault: FAIL ($n of $((CUR_H - 1)) survivors reported)"
      [[ $FAILED -gt $failed0 ]] || FAILED=$((FAILED + 1))
    fi
  fi
}

{
  echo "date: $(date -Is)"
  # The binaries' revision: the source tree the build directory was configured from; dirty
  # only where the code differs (results written into the tree do not count).
  SRC=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
  SRC=${SRC:-$REPO}
  echo "commit: $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet HEAD -- src include tools apps bench/netem 2>/dev/null || echo ' (dirty)')"
  [[ $(realpath "$SRC") == $(realpath "$REPO") ]] || echo "build: $BUILD (configured from another checkout: $SRC)"
  echo "kernel: $(uname -r); cpus: $(nproc); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  echo "command: $0 $ORIG_ARGS"
  echo "ranks_per_host=$RPH discover_layout=$DISCOVER"
  echo "threads=$THREADS"
  echo "hosts=$HOSTS_LIST rates=$RATES_LIST configs=$CONFIGS sizes=$MINB..$MAXB x$FACTOR iters=$ITERS warmup=$WARMUP block=$BLOCK scale=$SCALE rotation=${ROTATION:-default} mtu=$MTU tbf_latency=$TBF_LATENCY"
} >"$OUT/env.txt"
for h in ${HOSTS_LIST//,/ }; do
  [[ $h =~ ^[0-9]+$ && $h -ge 2 && $h -le 64 ]] || { log "bad host count $h"; exit 2; }
  net_up "$h"
  for rate in ${RATES_LIST//,/ }; do
    [[ $rate == none || $rate =~ ^[0-9.]+[kmg]bit$ ]] || { log "bad rate $rate"; exit 2; }
    shape "$rate"
    echo "H=$h rate=$rate load before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
    run_all_configs "$rate"
  done
  teardown
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"

# CSV of every row (headers excluded), columns in first-seen key order.
python3 - "$OUT/rows.jsonl" "$OUT/rows.csv" <<'EOF'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("type") != "header"]
keys = []
for r in rows:
    keys += [k for k in r if k not in keys]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
EOF
log "done: $(grep -vc '"type":"header"' "$OUT/rows.jsonl") rows in $OUT/rows.jsonl and rows.csv; $FAILED failed launches"
[[ $FAILED -eq 0 ]]
