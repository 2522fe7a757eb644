# bench/netem/app_configs.sh — the application configs of bench/netem/run.sh (torch, ddp,
# transformers, gemma3gen, gemma3) and its side-by-side launches of one setting (encrypt),
# sourced by it: run_app_configs RATE TAG runs those selected for the current topology, with
# run.sh's launch, has, log and settings (TORCH_VENV, DDP_*, TF_*, GEN_*, GEMMA3_*, ENC_*,
# PERF, PERF_ARGS, SUBNET, ...). run.sh's header describes each config and its options.

run_app_configs() {   # run_app_configs RATE TAG
  local rate=$1 tag=$2
  if has torch; then
    local tpy="$REPO/$TORCH_VENV/bin/python"
    [[ -x $tpy ]] || { log "torch: $tpy missing (run scripts/test_python.sh first)"; exit 2; }
    launch torch "$rate" -x MASTER_ADDR="$SUBNET.1" -x MASTER_PORT=$((29500 + RANDOM % 2000)) \
      -x GLOO_SOCKET_IFNAME=eqx0 -- "$tpy" "$REPO/bench/torch/allreduce_bench.py" -b "$MINB" -e "$MAXB" \
      -f "$FACTOR" -n "$ITERS" -w "$WARMUP" -J "$OUT/raw/${tag}_torch.jsonl"
  fi
  if has ddp; then
    local tpy="$REPO/$TORCH_VENV/bin/python"
    [[ -x $tpy ]] || { log "ddp: $tpy missing (run scripts/test_python.sh first)"; exit 2; }
    local port=$((29500 + RANDOM % 2000))
    local train=("$REPO/bench/torch/ddp_train.py" --steps "$DDP_STEPS" -J "$OUT/raw/${tag}_ddp.jsonl")
    if [[ $DDP_LAUNCHER == torchrun ]]; then
      # One torchrun agent per host (mpirun only puts each into its namespace), node rank =
      # the host's index; the workers rendezvous through the agents' store on host 0.
      local workaround=""  # Debian's 1.13 on Python 3.11 (docs/python.md, "Launching")
      [[ $("$tpy" -c 'import torch; print(torch.__version__[0])') == 1 ]] && \
        workaround="--redirects 2 --tee 2 --log_dir $OUT/raw/${tag}_torchrun"
      launch ddp "$rate" -x GLOO_SOCKET_IFNAME=eqx0 -- bash -c \
        "exec $tpy -m torch.distributed.run --nnodes $CUR_H --nproc_per_node 1 \
           --node_rank \$OMPI_COMM_WORLD_RANK --master_addr $SUBNET.1 --master_port $port $workaround \
           $(printf '%q ' "${train[@]}")"
    else
      launch ddp "$rate" -x MASTER_ADDR="$SUBNET.1" -x MASTER_PORT=$port \
        -x GLOO_SOCKET_IFNAME=eqx0 -- "$tpy" "${train[@]}"
    fi
  fi
  if has transformers; then
    local tpy="$REPO/$TORCH_VENV/bin/python" k b
    [[ -x $tpy ]] || { log "transformers: $tpy missing (run scripts/test_python.sh first)"; exit 2; }
    for ((k = 1; k <= TF_LAUNCHES; k++)); do
      for b in equarx gloo; do
        # One torchrun agent per host, as the ddp config starts them; rank 0 writes the row.
        launch "transformers_${b}_$k" "$rate" -x GLOO_SOCKET_IFNAME=eqx0 -x OMP_NUM_THREADS=1 -- bash -c \
          "exec $tpy -m torch.distributed.run --nnodes $CUR_H --nproc_per_node 1 \
             --node_rank \$OMPI_COMM_WORLD_RANK --master_addr $SUBNET.1 --master_port $((29500 + RANDOM % 2000)) \
             $(printf '%q ' "$REPO/examples/python/transformers_tp.py" --model "$TF_MODEL" --backend "$b" \
               --prompt-tokens "$TF_PROMPT" --tokens "$TF_TOKENS" --repeat "$TF_REPS" \
               --json "$OUT/raw/${tag}_transformers_${b}_$k.jsonl")"
      done
    done
  fi
  if has gemma3gen; then
    local k
    for ((k = 1; k <= GEN_LAUNCHES; k++)); do
      launch "gemma3gen_$k" "$rate" "$OUT/bin/equarx-gemma3" generate --model "$GEMMA3_MODEL" \
        --prompt-tokens "$GEN_PROMPT" --tokens "$GEN_TOKENS" --algo auto,ring --allreduce equarx,mpi \
        --gemm-threads "$GEMMA3_THREADS" --json "$OUT/raw/${tag}_gemma3gen_$k.jsonl"
    done
  fi
  if has encrypt; then
    # Alternating launches, plain then encrypted, so that drift of the machine hits both alike;
    # bench/plot/encryption_table.py takes the medians.
    local k mode
    for ((k = 1; k <= ENC_LAUNCHES; k++)); do
      for mode in off on; do
        launch "encrypt_${mode}_$k" "$rate" -x EQUARX_ENCRYPT=$([[ $mode == on ]] && echo 1 || echo 0) -- \
          "$PERF" -b "$MINB" -e "$MAXB" -f "$FACTOR" "${PERF_ARGS[@]}" -d bf16 --algo auto,ring --phases rs+ag \
          -J "$OUT/raw/${tag}_encrypt_${mode}_$k.jsonl"
      done
    done
  fi
  if has gemma3; then
    launch gemma3 "$rate" "$OUT/bin/equarx-gemma3" bench --model "$GEMMA3_MODEL" --tokens "$GEMMA3_TOKENS" \
      --reps "$GEMMA3_REPS" --gemm-threads "$GEMMA3_THREADS" --sweep --block 64 --scale f32 \
      --json "$OUT/raw/${tag}_gemma3.jsonl"
  fi
}
