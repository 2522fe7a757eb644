"""equarx.bootstrap.from_exchange across processes, without MPI, torch or JAX: two processes set
up a communicator through an exchange over files (a StoreExchange whose store is a directory),
over equarx's own TCP connections, plain and encrypted (encrypt=True).

- Both modes give every rank the exact sum of small integers (the unquantized ring is exact on
  them), bit for bit the same on both ranks.
- Ranks that disagree on encrypt fail the set-up on every rank with InvalidArgumentError naming
  the mode, instead of running in a mode one of them did not ask for.
"""

import json
import os
import subprocess
import sys
import textwrap

WORKER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    import equarx
    from equarx.bootstrap import StoreExchange, from_exchange

    rank, size, folder, encrypt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"

    def set_bytes(key, value):
        path = os.path.join(folder, key.replace("/", "_"))
        with open(path + ".tmp", "wb") as f:
            f.write(value)
        os.replace(path + ".tmp", path)  # whole or absent for the reader

    def get_bytes(key, timeout_s):
        path, end = os.path.join(folder, key.replace("/", "_")), time.monotonic() + timeout_s
        while not os.path.exists(path):
            if time.monotonic() > end:
                raise TimeoutError(key)
            time.sleep(0.01)
        return open(path, "rb").read()

    out = {"rank": rank}
    try:
        comm = from_exchange(rank, size, StoreExchange(set_bytes, get_bytes, rank, size, "t", 20.0),
                             data_path="sockets", timeout=20.0, encrypt=encrypt)
        x = np.arange(4099, dtype=np.float32) % 17 + rank
        y = comm.allreduce(x, algorithm="ring")
        out["sum"] = y.tolist()
        comm.close()
    except equarx.InvalidArgumentError as e:
        out["error"] = "InvalidArgumentError: " + str(e)
    print(json.dumps(out), flush=True)
""")


def run_pair(tmp_path, modes):
    folder = tmp_path / "store"
    folder.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(r), "2", str(folder), "1" if m else "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
             for r, m in enumerate(modes)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_plain_and_encrypted_sockets_give_the_exact_sum(tmp_path):
    import numpy as np
    want = (2 * (np.arange(4099, dtype=np.float32) % 17) + 1).tolist()
    for encrypt in (False, True):
        sub = tmp_path / f"enc{int(encrypt)}"
        sub.mkdir()
        results = run_pair(sub, (encrypt, encrypt))
        for r in results:
            assert "error" not in r, r
            assert r["sum"] == want, (encrypt, r["rank"])


def test_ranks_that_disagree_on_encryption_fail_on_every_rank(tmp_path):
    results = run_pair(tmp_path, (True, False))
    for r in results:
        assert "error" in r, r
        assert r["error"].startswith("InvalidArgumentError") and "encrypt" in r["error"].lower(), r
