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

# equarx.torch.all_reduce(t, **kwargs) with each documented keyword (docs/python.md, the
# module's docstring): every option of the library's table (equarx.options()), dtype, and the
# call's own (residual, average, op, async_op, group). Values that differ from the defaults
# where that changes the result; algorithm pinned where auto would keep an exact schedule.
# Markers the worker turns into objects: dtype "torch.float16", op "AVG"/"PREMUL_SUM"
# (factor 0.5), group "WORLD", residual True (zeros).
KEYWORD_CALLS = [
    ("algorithm", dict(algorithm="two_shot")),
    ("phases", dict(algorithm="full", phases="ag")),
    ("codec", dict(algorithm="two_shot", codec="int4")),
    ("block", dict(algorithm="two_shot", block=32)),
    ("scale", dict(algorithm="two_shot", scale="bf16")),
    ("rounding", dict(algorithm="two_shot", rounding="stochastic", seed=11)),
    ("seed", dict(algorithm="two_shot", rotation="hadamard", seed=5)),
    ("rotation", dict(algorithm="two_shot", rotation="none")),
    ("microshards", dict(algorithm="ring", microshards=2)),
    ("quantize_min_bytes", dict(algorithm="two_shot", quantize_min_bytes=1 << 20)),
    ("f32_partials", dict(algorithm="semi", phases="ag", f32_partials=1)),
    ("timeout_ms", dict(algorithm="two_shot", timeout_ms=60000)),
    ("validate", dict(algorithm="two_shot", validate=0)),
    ("mode", dict(algorithm="two_shot", mode="normal")),
    ("inner", dict(algorithm="hierarchical", inner="two_shot", ranks_per_host=1)),
    ("ranks_per_host", dict(ranks_per_host=1)),
    ("threads", dict(algorithm="two_shot", threads=2)),
    ("dtype", dict(algorithm="ring", dtype="bfloat16")),
    ("dtype", dict(algorithm="two_shot", dtype="torch.float16")),
    ("residual", dict(algorithm="two_shot", residual=True)),
    ("average", dict(algorithm="two_shot", average=True)),
    ("op", dict(algorithm="two_shot", op="AVG")),
    ("op", dict(algorithm="ring", op="PREMUL_SUM")),
    ("async_op", dict(algorithm="two_shot", async_op=True)),
    ("group", dict(algorithm="two_shot", group="WORLD")),
]
