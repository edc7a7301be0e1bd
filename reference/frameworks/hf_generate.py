"""Hugging Face `generate()` written the way users write it, for `async-lab trace`: a small GPT-2 built from a
`GPT2Config` (random weights: nothing is downloaded), greedy decoding of 64 new tokens after a 32-token
prompt, twice (the first run pays for the first kernels' loading). No NVTX, no tracer in mind.

Each `generate()` is timed with `time.perf_counter` and printed as an `async-lab-step` line (steps.py).

Usage: python3 hf_generate.py [--new-tokens N] [--runs N]
"""

import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from steps import record

P = "hf_generate"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()

    torch.manual_seed(0)
    config = GPT2Config(n_layer=6, n_head=8, n_embd=512, n_positions=1024)
    model = GPT2LMHeadModel(config).cuda().eval()
    prompt = torch.randint(0, config.vocab_size, (1, 32), device="cuda")
    mask = torch.ones_like(prompt)

    for run in range(args.runs):
        start = time.perf_counter_ns()
        with torch.no_grad():
            out = model.generate(
                prompt,
                attention_mask=mask,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                do_sample=False,
                pad_token_id=config.eos_token_id,
            )
        end = time.perf_counter_ns()
        record(P, f"generate-{run}", "cudaStreamSynchronize", start, end, f"{args.new_tokens} new tokens")
        new = out.shape[1] - prompt.shape[1]
        print(f"run {run}: {new} new tokens in {(end - start) / 1e6:.1f} ms")


if __name__ == "__main__":
    main()
