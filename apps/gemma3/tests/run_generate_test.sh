#!/usr/bin/env bash
# run_generate_test.sh MPIEXEC GEMMA3_BIN WRITER_BIN NP synthetic
# run_generate_test.sh MPIEXEC GEMMA3_BIN WRITER_BIN NP real MODEL
#
# equarx-gemma3 generate as users run it, its exit status counting:
#   synthetic: on the tests' synthetic model (its own output projection, so tokens vary),
#     in process --tp NP and under mpirun -np NP over both MPI data paths, the unquantized ring
#     gives the same tokens everywhere (f32 and bf16); a quantized run and the MPI_Allreduce
#     baseline finish with every rank agreeing, the baseline (f32, and bf16 through its user op)
#     with the ring's tokens at 2 ranks; misuse fails with exit 2.
#   real: on Gemma 3 270M (MODEL), under mpirun -np NP, a short prompt with the ring gives the
#     exact run's tokens (one rank, no AllReduce; --compare-exact), every rank agreeing. A
#     missing model skips (exit 77), and fails under CI=true.
set -euo pipefail
MPIEXEC=$1 BIN=$2 WRITER=$3 NP=$4 MODE=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpi() { timeout 300 "$MPIEXEC" -np "$NP" --bind-to none "$@"; }
# Field of every JSON line of a file, one per line: tokens, config, matches_exact...
# (Bytes, not characters: the synthetic model's text need not be UTF-8.)
field() { LC_ALL=C sed -E "s/.*\"$2\":(\\[[^]]*\\]|\"[^\"]*\"|[a-z0-9.]+).*/\\1/; s/^\"(.*)\"$/\\1/" "$1"; }
fail() { echo "FAIL: $*"; exit 1; }

if [[ $MODE == real ]]; then
  MODEL=${EQUARX_GEMMA3_MODEL:-$6}
  if [[ ! -f $MODEL ]]; then
    [[ ${CI:-} == true ]] && fail "Gemma 3 model not found at $MODEL under CI=true (scripts/test.sh fetches it)"
    echo "SKIP: Gemma 3 model not found at $MODEL (run scripts/fetch_model.sh or set EQUARX_GEMMA3_MODEL)"
    exit 77
  fi
  mpi "$BIN" generate --model "$MODEL" --prompt "The capital of France is" --tokens 12 --algo ring \
    --compare-exact --gemm-threads 1 --json "$dir/real.jsonl" | tee "$dir/real.txt"
  [[ $(wc -l <"$dir/real.jsonl") -eq 2 ]] || fail "expected the exact row and the ring row"
  [[ $(field "$dir/real.jsonl" matches_exact | sed -n 2p) == true ]] || fail "the ring's tokens differ from the exact run's"
  [[ $(field "$dir/real.jsonl" tokens | sort -u | wc -l) -eq 1 ]] || fail "tokens differ"
  echo "PASS: mpirun -np $NP generate with the ring gives the exact run's tokens on Gemma 3 270M"
  exit 0
fi

"$WRITER" "$dir/model.gguf" 2 untied  # seed 2: its greedy tokens vary (seed 1's repeat one)
args=(generate --model "$dir/model.gguf" --prompt "the abc the" --tokens 10)
"$BIN" "${args[@]}" --tp "$NP" --algo ring,two_shot --dtype f32,bf16 --compare-exact --json "$dir/inproc.jsonl" >/dev/null
[[ $(wc -l <"$dir/inproc.jsonl") -eq 5 ]] || fail "expected 5 in-process rows"
ring=$(field "$dir/inproc.jsonl" tokens | sed -n 2p) ring_bf16=$(field "$dir/inproc.jsonl" tokens | sed -n 3p)
ring_hash=$(field "$dir/inproc.jsonl" hidden_hash | sed -n 2p) ring_bf16_hash=$(field "$dir/inproc.jsonl" hidden_hash | sed -n 3p)
[[ $ring_hash != "$ring_bf16_hash" ]] || fail "f32 and bf16 sums gave the same hidden state"
[[ $(tr -d '[]' <<<"$ring" | tr , '\n' | sort -u | wc -l) -gt 2 ]] || fail "degenerate synthetic run: $ring"
rows="ring (f32 in)|ring (bf16 in)|two_shot rs+ag int8 B128 hadamard two_level-scale (f32 in)"
rows+="|two_shot rs+ag int8 B128 hadamard two_level-scale (bf16 in)"
rows+="|MPI_Allreduce (f32 in)|MPI_Allreduce (bf16 in)|"
for path in mpi sockets; do
  mpi -x EQUARX_DATA_PATH=$path "$BIN" "${args[@]}" --algo ring,two_shot --dtype f32,bf16 --allreduce equarx,mpi \
    --gemm-threads 1 --json "$dir/$path.jsonl" >/dev/null
  [[ $(field "$dir/$path.jsonl" config | tr '\n' '|') == "$rows" ]] ||
    fail "rows under mpirun ($path): $(field "$dir/$path.jsonl" config | tr '\n' '|')"
  [[ $(field "$dir/$path.jsonl" tokens | sed -n 1p) == "$ring" && $(field "$dir/$path.jsonl" tokens | sed -n 2p) == "$ring_bf16" ]] ||
    fail "mpirun -np $NP ($path): ring tokens differ from in-process"
  grep -q "\"transport\":\"mpi$([[ $path == sockets ]] && echo +sockets)\"" "$dir/$path.jsonl" ||
    fail "transport not reported as $path"
  # The last final hidden state, bitwise: the ring's everywhere; at 2 ranks (two addends, every
  # order of the sum the same) MPI_Allreduce's too, in f32 and in bf16 through its user op.
  hashes=$(field "$dir/$path.jsonl" hidden_hash)
  [[ $(sed -n 1p <<<"$hashes") == "$ring_hash" && $(sed -n 2p <<<"$hashes") == "$ring_bf16_hash" ]] ||
    fail "mpirun -np $NP ($path): the ring's hidden states differ from in-process"
  if [[ $NP -eq 2 ]]; then
    [[ $(sed -n 5p <<<"$hashes") == "$ring_hash" ]] || fail "MPI_Allreduce f32 differs from the ring"
    [[ $(sed -n 6p <<<"$hashes") == "$ring_bf16_hash" ]] || fail "MPI_Allreduce bf16 differs from the ring"
  fi
done
grep -c '"ranks_agree":true' "$dir/sockets.jsonl" | grep -qx 6 || fail "rows without ranks_agree"

# Misuse: a --tp that is not the world size, --allreduce mpi without mpirun, no prompt.
rc=0; mpi "$BIN" "${args[@]}" --tp $((NP + 1)) 2>"$dir/err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "differs from the number of MPI processes" "$dir/err" || fail "--tp mismatch gave exit $rc"
rc=0; "$BIN" "${args[@]}" --allreduce mpi 2>"$dir/err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "run under mpirun" "$dir/err" || fail "--allreduce mpi in process gave exit $rc"
rc=0; "$BIN" generate --model "$dir/model.gguf" --tokens 3 2>"$dir/err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "give either --prompt" "$dir/err" || fail "no prompt gave exit $rc"
echo "PASS: generate in process and under mpirun -np $NP (mpi and sockets data paths, MPI_Allreduce) agree"
