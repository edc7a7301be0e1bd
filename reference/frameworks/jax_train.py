"""A JAX training loop written the way users write one, for `async-lab trace`: no NVTX, no tracer in mind.

A two-layer MLP on random batches: each step's batch comes from NumPy (`x = jnp.asarray(np_batch)`, a
pageable host → device copy that XLA's own threads make), a jitted step computes the loss and its gradient
and updates the weights, and the loss is read every step (`v = float(loss)`), where the Python thread waits
for the step's work while XLA's threads make the CUDA calls. Every tenth step the weights are read back
(`np.asarray(w1)`) and, before the loop ends, `block_until_ready` waits for the last step.

Each step is printed as an `async-lab-step` line (steps.py); the last line is one JSON object: the median step
time after the warm-up steps.

Usage: python3 jax_train.py [--steps N] [--warmup N] [--batch N]
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from steps import record  # noqa: E402

P = "jax_train"


def init(key, d_in, d_hidden, d_out):
    k1, k2 = jax.random.split(key)
    w1 = jax.random.normal(k1, (d_in, d_hidden), jnp.float32) * 0.02
    w2 = jax.random.normal(k2, (d_hidden, d_out), jnp.float32) * 0.02
    return w1, w2


def loss_fn(params, x, y):
    w1, w2 = params
    h = jax.nn.relu(x @ w1)
    logits = h @ w2
    return jnp.mean(optax_like_xent(logits, y))


def optax_like_xent(logits, labels):
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = tuple(p - 1e-3 * g for p, g in zip(params, grads))
    return params, loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8192)
    args = ap.parse_args()
    d_in, d_hidden, d_out = 4096, 8192, 1000
    rng = np.random.default_rng(0)
    params = init(jax.random.PRNGKey(0), d_in, d_hidden, d_out)
    batches = [rng.standard_normal((args.batch, d_in), dtype=np.float32) for _ in range(4)]
    labels = [rng.integers(0, d_out, args.batch).astype(np.int32) for _ in range(4)]
    times = []
    for i in range(args.steps):
        t0 = time.perf_counter_ns()
        x = jnp.asarray(batches[i % 4])
        y = jnp.asarray(labels[i % 4])
        params, loss = train_step(params, x, y)
        v = float(loss)
        if i % 10 == 9:
            w = np.asarray(params[0])
            v += float(w[0, 0]) * 0.0
        t1 = time.perf_counter_ns()
        record(P, f"step-{i}", "cuStreamSynchronize", t0, t1, "the step, from the batch's copy to float(loss)")
        times.append(t1 - t0)
    jax.block_until_ready(params)
    steady = times[args.warmup :]
    print(json.dumps({"program": P, "median_step_ms": statistics.median(steady) / 1e6, "steps": len(steady), "loss": v}))


if __name__ == "__main__":
    main()
