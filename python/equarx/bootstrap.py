"""equarx.bootstrap — communicators across processes and hosts set up through a key-value
store instead of MPI (the C++ CreateCommunicator, include/equarx/bootstrap.h).

    store = torch.distributed.TCPStore(host, port, world_size, rank == 0)    # or JAX's client
    comm = equarx.bootstrap.from_store(store, rank, world_size)
    y = comm.allreduce(x, codec="int8")

The store carries only the set-up's cards (identity, the listening addresses, a shared-memory
segment's name), a few hundred bytes per rank; every AllReduce then moves over equarx's own
authenticated TCP connections between hosts and shared-memory rings between the ranks of one
host ("host", the default), TCP only ("sockets") or rings only ("shm", one host). Whoever can write to the store can join the group: use a store only the job
reaches (docs/security.md).

The set-up is collective: every rank calls it with the same world size, data path and key
prefix. A wrong world size or differing data paths fail on every rank that sees the others'
cards (InvalidArgumentError); a rank that never arrives makes the others fail when the store's
wait times out (CollectiveTimeoutError).
"""

import datetime

from . import _core
from .collectives import Communicator
from .errors import InvalidArgumentError


class StoreExchange:
    """The set-up's all-gather over a key-value store: exchange k writes ``{prefix}/{k}/{rank}``
    and reads every other rank's key of step k.

    set_bytes(key, value) writes; get_bytes(key, timeout_s) returns the value once it exists
    and raises TimeoutError after timeout_s seconds.
    """

    def __init__(self, set_bytes, get_bytes, rank, size, prefix, timeout_s):
        self._set, self._get = set_bytes, get_bytes
        self.rank, self.size, self.prefix, self.timeout_s = rank, size, prefix, float(timeout_s)
        self._step = 0

    def __call__(self, mine):
        step, self._step = self._step, self._step + 1
        self._set(f"{self.prefix}/{step}/{self.rank}", bytes(mine))
        parts = []
        for r in range(self.size):
            if r == self.rank:
                parts.append(bytes(mine))
                continue
            got = self._get(f"{self.prefix}/{step}/{r}", self.timeout_s)
            if len(got) != len(mine):
                raise InvalidArgumentError(
                    f"set-up exchange {step}: rank {r} wrote {len(got)} bytes, this rank {len(mine)} "
                    "(another program writing under the same key prefix, or mixed equarx versions?)")
            parts.append(got)
        return b"".join(parts)


def _torch_store_io(store):
    """set_bytes/get_bytes over a torch.distributed Store (TCPStore, FileStore, PrefixStore)."""

    def set_bytes(key, value):
        store.set(key, value)

    def get_bytes(key, timeout_s):
        try:
            store.wait([key], datetime.timedelta(seconds=timeout_s))
        except RuntimeError as e:  # torch reports a wait past its timeout as RuntimeError
            raise TimeoutError(f"key {key!r} did not appear in the store within {timeout_s:g} s "
                               f"(a rank has not started, has died, or the world size is wrong): {e}") from e
        return bytes(store.get(key))

    return set_bytes, get_bytes


def _jax_client_io(client):
    """set_bytes/get_bytes over JAX's distributed client (jax.distributed.initialize)."""

    def set_bytes(key, value):
        client.key_value_set_bytes(key, value)

    def get_bytes(key, timeout_s):
        try:
            return bytes(client.blocking_key_value_get_bytes(key, int(timeout_s * 1000)))
        except Exception as e:  # XlaRuntimeError: DEADLINE_EXCEEDED
            if "DEADLINE_EXCEEDED" in str(e) or "imed out" in str(e):
                raise TimeoutError(f"key {key!r} did not appear in JAX's key-value store within {timeout_s:g} s "
                                   f"(a process has not started, has died, or the process count is wrong): {e}") from e
            raise

    return set_bytes, get_bytes


def store_io(store):
    """(set_bytes, get_bytes) for a torch.distributed Store or JAX's distributed client."""
    if hasattr(store, "key_value_set_bytes") and hasattr(store, "blocking_key_value_get_bytes"):
        return _jax_client_io(store)
    if hasattr(store, "set") and hasattr(store, "get") and hasattr(store, "wait"):
        return _torch_store_io(store)
    raise InvalidArgumentError(
        f"{type(store).__name__} is not a key-value store equarx knows: expected a torch.distributed "
        "Store (set/get/wait) or JAX's distributed client (key_value_set_bytes/blocking_key_value_get_bytes)")


def from_exchange(rank, size, exchange, *, data_path=None, interface=None, timeout=60.0, encrypt=None):
    """A Communicator for rank `rank` of `size` set up through `exchange(mine: bytes) -> bytes`
    (every rank's bytes in rank order). data_path: "host" (default: EQUARX_DATA_PATH, else
    host), "sockets" or "shm"; interface: the network interface other hosts connect to;
    timeout: the set-up's deadline in seconds; encrypt: True to encrypt and authenticate what
    equarx's TCP connections carry (default: EQUARX_ENCRYPT, else off; docs/security.md)."""
    if not callable(exchange):
        raise InvalidArgumentError("exchange must be callable: exchange(mine: bytes) -> bytes")
    native = _core.exchange_communicator(int(rank), int(size), exchange, data_path or "", interface or "",
                                         max(1, int(float(timeout) * 1000)),
                                         -1 if encrypt is None else int(bool(encrypt)))
    return Communicator(native)


def from_store(store, rank, size, *, prefix="equarx", data_path=None, interface=None, timeout=60.0, encrypt=None):
    """A Communicator set up through a key-value store (a torch.distributed Store or JAX's
    distributed client). Collective: every rank calls it with the same `size` and `prefix`; use
    a new prefix for each communicator made over the same store."""
    set_bytes, get_bytes = store_io(store)
    exchange = StoreExchange(set_bytes, get_bytes, int(rank), int(size), str(prefix), float(timeout))
    return from_exchange(rank, size, exchange, data_path=data_path, interface=interface, timeout=timeout,
                         encrypt=encrypt)
