"""JAX's transfers, a first compiled call and the calls that wait, for `async-lab trace`.

The blocker is a jitted chain of 8192 × 8192 bfloat16 matrix products (about 50 ms on an H200). Steps
(steps.py):

- first-jit: the first call of a jitted function: XLA compiles it and loads its module.
- device-put: `jax.device_put` of a pageable NumPy array while the blocker runs.
- block-until-ready: waits for the blocker.
- to-numpy: `np.asarray` of a device array behind the blocker: waits for it, then the copy.

Usage: python3 jax_program.py [MiB]   (default 256)
"""

import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from steps import step  # noqa: E402

P = "jax_program"


@jax.jit
def chain(m):
    def body(_, x):
        return (x @ m) * jnp.bfloat16(1e-4)

    return jax.lax.fori_loop(0, 36, body, m)


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n = mib * (1 << 20) // 4
    with step(P, "first-device-call", "cuCtxCreate", "JAX's first array creates the context"):
        m = jnp.ones((8192, 8192), dtype=jnp.bfloat16).block_until_ready()
    with step(P, "first-jit", "cuModuleLoadData", "the first call of a jitted function compiles and loads it"):
        r = chain(m)
    r.block_until_ready()
    host = np.ones(n, dtype=np.float32)

    r = chain(m)
    with step(P, "device-put", "cuMemcpyHtoDAsync", "device_put of pageable memory while the blocker runs"):
        a = jax.device_put(host)
    a.block_until_ready()
    r = chain(m)
    with step(P, "block-until-ready", "cuEventSynchronize", "waits for the blocker"):
        r.block_until_ready()
    a.block_until_ready()

    r = chain(m)
    s = (a * 2).block_until_ready()
    r2 = chain(r)
    with step(P, "to-numpy", "cuMemcpyDtoHAsync", "np.asarray of a device array behind the blocker"):
        back = np.asarray(r2)
    print(f"{P}: done ({float(s[0]):.0f}, {float(back[0, 0]):.3g})", file=sys.stderr)


if __name__ == "__main__":
    main()
