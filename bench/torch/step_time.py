#!/usr/bin/env python3
"""One training step of the DDP benchmark's model (examples/python/torch_ddp_train.py) on one
rank alone, one thread: forward, backward and the optimizer step, median of 50 after 10
warm-up steps. Compares the compute PyTorch builds leave in a step (docs/python.md):

    .venv-torch/bin/python bench/torch/step_time.py; .venv-torch2/bin/python bench/torch/step_time.py
"""
import pathlib
import sys
import time

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
import torch_ddp_train as ex  # noqa: E402


def main():
    torch.set_num_threads(1)
    train, _, vocab = ex.data()
    torch.manual_seed(0)
    net = ex.model(vocab)
    opt = torch.optim.SGD(net.parameters(), lr=ex.LR, momentum=0.9)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(60):
        t = time.perf_counter()
        ex.train_step(net, opt, train, rng)
        times.append(time.perf_counter() - t)
    print(f"torch {torch.__version__}: median step {1e3 * float(np.median(times[10:])):.2f} ms "
          "(one rank, one thread)")


if __name__ == "__main__":
    main()
