"""Child of test_jax_multiprocess.py: one process of a JAX job on 127.0.0.1 with 2 local CPU
devices (jax.distributed.initialize), running equarx.jax.psum over the job's devices and
equarx.bootstrap over JAX's key-value store.

    python jax_multiprocess_worker.py PROCESS NPROCS PORT OUTDIR

Writes OUTDIR/pPROCESS_*.npy: each local device's psum results (global device index in the
name), and the bootstrap communicator's AllReduce result.
"""

import os
import pathlib
import sys

proc, nprocs, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], pathlib.Path(sys.argv[4])
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=nprocs, process_id=proc)

import equarx  # noqa: E402
import equarx.bootstrap  # noqa: E402
import equarx.jax as ejax  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from jax_multiprocess_configs import CONFIGS, COUNT, inputs  # noqa: E402

devs = jax.devices()
assert len(jax.local_devices()) == 2 and len(devs) == 2 * nprocs, (devs, jax.local_devices())
index = {d.id: i for i, d in enumerate(devs)}

# 1-D mesh: one group of every device (ranks of this process and the others).
mesh = Mesh(np.array(devs), ("tp",))
for k, cfg in enumerate(CONFIGS):
    dtype = getattr(jnp, cfg["dtype"])
    opts = {a: b for a, b in cfg.items() if a != "dtype"}
    full = inputs(len(devs), cfg["dtype"])
    x = jax.make_array_from_callback(full.shape, NamedSharding(mesh, P("tp")), lambda i: full[i])
    f = jax.jit(jax.shard_map(lambda a, o=opts: ejax.psum(a[0], "tp", **o)[None], mesh=mesh,
                              in_specs=P("tp"), out_specs=P("tp")))
    for rep in range(2):  # the second call reuses the communicators
        y = f(x)
        for s in y.addressable_shards:
            np.save(out / f"p{proc}_c{k}_r{rep}_d{index[s.device.id]}.npy",
                    np.asarray(s.data[0]).astype(np.float32))
    assert x.dtype == dtype

# 2-D mesh ("tp", "dp"): psum over "tp" only, so the groups are the mesh's columns, each
# spanning both processes.
mesh2 = Mesh(np.array(devs).reshape(2, len(devs) // 2), ("tp", "dp"))
full = inputs(len(devs), "float32")
x = jax.make_array_from_callback(full.shape, NamedSharding(mesh2, P(("tp", "dp"))), lambda i: full[i])
f = jax.jit(jax.shard_map(lambda a: ejax.psum(a[0], "tp", algorithm="ring")[None], mesh=mesh2,
                          in_specs=P(("tp", "dp")), out_specs=P(("tp", "dp"))))
for s in f(x).addressable_shards:
    np.save(out / f"p{proc}_grid_d{index[s.device.id]}.npy", np.asarray(s.data[0]))

# equarx.bootstrap over JAX's client: one communicator per process.
from jax._src import distributed  # noqa: E402
comm = equarx.bootstrap.from_store(distributed.global_state.client, proc, nprocs, prefix="test-bootstrap")
np.save(out / f"p{proc}_bootstrap.npy", comm.allreduce(inputs(nprocs, "float32")[proc], algorithm="two_shot"))
print("done", proc, flush=True)
