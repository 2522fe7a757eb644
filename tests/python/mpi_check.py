"""Child of test_mpi.py, run under mpirun: equarx.from_mpi4py + allreduce on every rank.

Rank 0 prints one JSON line: whether all ranks agree bitwise, match the in-process numpy API
on the same inputs, whether mismatched shapes fail on every rank with MismatchError, and
whether every rank's Communicator counts its calls (and reports the scratch they hold), sees every rank on this host
(ranks_per_host) and refuses calls after close().
"""

import json

import numpy as np
from mpi4py import MPI

import equarx

world = MPI.COMM_WORLD
comm = equarx.from_mpi4py(world)
r, n = comm.rank, comm.size
xs = [np.random.default_rng(10 + i).standard_normal(5000).astype(np.float32) for i in range(n)]
opts = dict(algorithm="semi", phases="rs+ag", block=64)
y = comm.allreduce(xs[r], **opts)
ys = world.gather(y, root=0)
out = {"rank": r, "size": n}
if r == 0:
    local = equarx.allreduce(xs, **opts)[0]
    out["agree"] = all(np.array_equal(a.view(np.uint32), ys[0].view(np.uint32)) for a in ys)
    out["equal_inprocess"] = bool(np.array_equal(local.view(np.uint32), ys[0].view(np.uint32)))
    out["exact_ring"] = True
# The unquantized ring on integer-valued data is exact.
z = comm.allreduce(np.full(100, float(r + 1), np.float32), algorithm="ring")
ok_ring = bool(np.all(z == n * (n + 1) / 2))
calls = comm.calls  # the two calls above
# Their buffers are held for the next call: some, and within max(64 MiB, a quarter of a message).
scratch_held = 0 < comm.scratch_bytes <= 64 << 20
# Mismatched counts across ranks fail on every rank (the library's descriptor exchange).
try:
    comm.allreduce(np.ones(10 + r, np.float32))
    mismatch = False
except equarx.MismatchError as e:
    mismatch = str(e) or True
# Every rank of this job is on this host; close() drops the native communicator at once.
on_host = comm.ranks_per_host == n
comm.close()
try:
    comm.allreduce(np.ones(10, np.float32))
    closed = False
except equarx.InvalidArgumentError as e:
    closed = "closed" in str(e)
flags = world.gather((ok_ring, bool(mismatch), calls == 2 and scratch_held, on_host, closed), root=0)
if r == 0:
    out["exact_ring"] = all(f[0] for f in flags)
    out["mismatch_everywhere"] = all(f[1] for f in flags)
    out["calls_counted"], out["ranks_per_host"], out["closed"] = (all(f[i] for f in flags) for i in (2, 3, 4))
    out["mismatch_message"] = mismatch
    print(json.dumps(out), flush=True)
