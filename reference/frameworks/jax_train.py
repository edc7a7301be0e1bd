"""A JAX training loop written the way people write it, for `async-lab trace`: each step puts a NumPy batch on
the GPU (`x = jnp.asarray(np_batch)`), runs a jitted training step and reads the loss (`v = float(loss)`); at
the end it waits for the weights (`block_until_ready()`) and reads them back (`np.asarray`). The Python thread
makes few CUDA calls of its own: XLA's threads make the copies and the synchronizations while it waits at those
lines, which is where the tracer should place them.

Usage: python3 jax_train.py [STEPS]   (default 30)
"""

import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

BATCH, IN, HIDDEN, OUT = 4096, 1024, 8192, 16


def loss_fn(w, x, y):
    h = jnp.tanh(x @ w[0])
    h = jnp.tanh(h @ w[1])
    logits = h @ w[2]
    return jnp.mean((logits - y) ** 2)


@jax.jit
def train_step(w, x, y):
    l, g = jax.value_and_grad(loss_fn)(w, x, y)
    return [p - 1e-3 * d for p, d in zip(w, g)], l


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    rng = np.random.default_rng(0)
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    w = [
        jax.random.normal(k1, (IN, HIDDEN)) * 0.02,
        jax.random.normal(k2, (HIDDEN, HIDDEN)) * 0.01,
        jax.random.normal(k3, (HIDDEN, OUT)) * 0.02,
    ]
    for step in range(steps):
        np_batch = rng.standard_normal((BATCH, IN), dtype=np.float32)
        np_labels = rng.standard_normal((BATCH, OUT), dtype=np.float32)
        x = jnp.asarray(np_batch)
        y = jnp.asarray(np_labels)
        w, l = train_step(w, x, y)
        v = float(l)
        if step % 10 == 0:
            print(f"step {step}: loss {v:.4f}", file=sys.stderr)
    w[1].block_until_ready()
    back = np.asarray(w[2])
    print(f"jax_train: done ({back.shape})", file=sys.stderr)


if __name__ == "__main__":
    main()
