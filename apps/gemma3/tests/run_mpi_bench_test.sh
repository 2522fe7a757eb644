#!/usr/bin/env bash
# run_mpi_bench_test.sh MPIEXEC GEMMA3_BIN WRITER_BIN NP
#
# equarx-gemma3 under mpirun (one tensor-parallel rank per process) against the same binary
# in-process: on the tests' synthetic model, `bench --sweep` must give bitwise the same final
# hidden states (the hidden_hash of every configuration and token count) over both MPI data
# paths, with every rank agreeing; and misuse under mpirun must fail with exit status 2.
set -euo pipefail
MPIEXEC=$1 BIN=$2 WRITER=$3 NP=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$WRITER" "$dir/model.gguf"
args=(bench --model "$dir/model.gguf" --tokens 9,33 --reps 1 --sweep)

# The fields that must match, one line per row: config tokens hash agree.
rows() { sed -E 's/.*"config":"([^"]*)".*"tokens":([0-9]+).*"ranks_agree":([a-z]+),"hidden_hash":"([0-9a-f]+)".*/\1|\2|\4|\3/' "$1"; }

"$BIN" "${args[@]}" --tp "$NP" --json "$dir/inproc.jsonl" >/dev/null
[[ $(wc -l <"$dir/inproc.jsonl") -eq 8 ]] || { echo "FAIL: expected 8 in-process rows"; cat "$dir/inproc.jsonl"; exit 1; }
for path in mpi sockets; do
  timeout 300 "$MPIEXEC" -np "$NP" --bind-to none -x EQUARX_DATA_PATH=$path \
    "$BIN" "${args[@]}" --gemm-threads 1 --json "$dir/$path.jsonl"
  if ! diff <(rows "$dir/inproc.jsonl") <(rows "$dir/$path.jsonl"); then
    echo "FAIL: mpirun -np $NP ($path) differs from in-process --tp $NP"; exit 1
  fi
  if grep -q '"ranks_agree":false' "$dir/$path.jsonl"; then echo "FAIL: ranks disagree ($path)"; exit 1; fi
  grep -q "\"transport\":\"mpi$([[ $path == sockets ]] && echo +sockets)\"" "$dir/$path.jsonl" ||
    { echo "FAIL: transport not reported as $path"; exit 1; }
done
grep -q '"ranks_agree":true' "$dir/inproc.jsonl" || { echo "FAIL: in-process rows lack ranks_agree"; exit 1; }

# Misuse: a --tp that is not the world size, and a command that only runs in-process.
rc=0; timeout 120 "$MPIEXEC" -np "$NP" --bind-to none "$BIN" "${args[@]}" --tp $((NP + 1)) 2>"$dir/err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "differs from the number of MPI processes" "$dir/err" ||
  { echo "FAIL: --tp mismatch gave exit $rc"; cat "$dir/err"; exit 1; }
rc=0; timeout 120 "$MPIEXEC" -np "$NP" --bind-to none "$BIN" info --model "$dir/model.gguf" 2>"$dir/err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "only 'bench' and 'generate' run" "$dir/err" ||
  { echo "FAIL: info under mpirun gave exit $rc"; cat "$dir/err"; exit 1; }
echo "PASS: mpirun -np $NP equals in-process TP-$NP bitwise (mpi and sockets data paths)"
