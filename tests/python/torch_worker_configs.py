"""The all_reduce configurations torch_worker.py runs through the equarx backend and
test_torch.py recomputes with the C++ in-process group (equarx.allreduce)."""

CONFIGS = [
    dict(dtype="float32", count=10007),  # the library's defaults
    dict(codec="int8", phases="rs+ag", algorithm="two_shot", dtype="float32", count=10007),
    dict(codec="int8", phases="rs+ag", dtype="bfloat16", count=4096),
    dict(codec="int8", phases="rs", algorithm="full_bidir", dtype="float32", count=3001),
    dict(codec="int8", phases="ag", algorithm="semi", dtype="float16", count=3001),
    dict(codec="int4", phases="rs+ag", dtype="float32", count=5000, rotation="hadamard"),
    dict(codec="fp8_e4m3", phases="rs+ag", dtype="float32", count=5000, rotation="none"),
    dict(codec="int8", block=64, scale="two_level", rotation="hadamard", algorithm="two_shot",
         dtype="float32", count=20000),
    dict(codec="int8", phases="rs+ag", dtype="float32", count=5000, rounding="stochastic", seed=77),
    dict(codec="int4", phases="rs+ag", dtype="bfloat16", count=777, rounding="stochastic", seed=5),
    dict(algorithm="ring", dtype="float32", count=4099),  # unquantized
    dict(codec="int8", phases="rs+ag", dtype="float32", count=5),  # fewer blocks than ranks
]
