"""The psum configurations jax_multiprocess_worker.py runs and test_jax_multiprocess.py
recomputes with the C++ in-process group."""

import numpy as np

COUNT = 5000

CONFIGS = [
    dict(dtype="float32", algorithm="two_shot", codec="int8"),
    dict(dtype="float32"),  # the library's defaults
    dict(dtype="bfloat16", algorithm="full_bidir", codec="int8", rotation="hadamard"),
    dict(dtype="float16", algorithm="ring"),
]


def inputs(ranks, dtype):
    """Rank k's input is row k (float32 values rounded to `dtype`)."""
    import ml_dtypes
    dt = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    return np.stack([np.random.default_rng(300 + k).standard_normal(COUNT).astype(np.float32).astype(dt)
                     for k in range(ranks)])
