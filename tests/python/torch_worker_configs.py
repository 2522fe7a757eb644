"""The all_reduce configurations torch_worker.py runs and test_torch.py recomputes in C++."""

CONFIGS = [
    dict(codec="int8", phases="rs+ag", dtype="float32", count=10007),
    dict(codec="int8", phases="rs+ag", dtype="bfloat16", count=4096),
    dict(codec="int8", phases="rs", dtype="float32", count=3001),
    dict(codec="int8", phases="ag", dtype="float32", count=3001),
    dict(codec="int4", phases="rs+ag", dtype="float32", count=5000),
    dict(codec="fp8_e4m3", phases="rs+ag", dtype="float32", count=5000),
    dict(codec="int8", phases="rs+ag", dtype="float32", count=5000, rounding="stochastic", seed=77),
    dict(codec="int4", phases="rs+ag", dtype="bfloat16", count=777, rounding="stochastic", seed=5),
    dict(codec="int8", phases="rs+ag", dtype="float32", count=5),  # fewer blocks than ranks
]
