"""Efficiency truth: a small GPT whose model FLOPs per step are known by formula.

A decoder-only transformer (learned positions, pre-norm blocks, causal
`F.scaled_dot_product_attention`, an untied head) trained with AdamW, under bfloat16 autocast on
the GPU.
Before the first step it prints

    KIT-GPT params=85000000 tokens=8192 layers=8 width=768 seq=1024 flops_6n=... flops_palm=...

`params` counts the weights of the Linear layers (the embeddings are looked up, not multiplied),
so `6 x params x tokens` is the FLOPs of every matmul with a weight, forward and backward; the
PaLM paper's count adds the attention's score and value matmuls, `12 x layers x width x seq` per
token (forward and backward, the causal mask not discounted). With the job's own steps/s and the
report's peak, `flops / step time / peak` is the MFU torchtop's `efficiency.mfu` is held against.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_loop import StepClock, announce, device_of, entry, parser, sized


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
        out: torch.Tensor = x + self.down(functional.gelu(self.up(self.norm2(x))))
        return out


class Gpt(nn.Module):
    def __init__(self, vocab: int, seq: int, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.blocks = nn.Sequential(*(Block(width, heads) for _ in range(layers)))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        at = torch.arange(ids.shape[1], device=ids.device)
        logits: torch.Tensor = self.head(
            self.norm(self.blocks(self.tokens(ids) + self.positions(at)))
        )
        return logits


def matmul_params(model: nn.Module) -> int:
    """The weights every token is multiplied by: each Linear's weight (biases are adds)."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__.splitlines()[0])
    options.add_argument("--width", type=int, default=768)
    options.add_argument("--layers", type=int, default=8)
    options.add_argument("--seq", type=int, default=1024)
    options.add_argument("--batch-size", type=int, default=8)
    options.add_argument("--vocab", type=int, default=8192)
    args = options.parse_args(argv)
    device = device_of(args)
    torch.manual_seed(0)
    heads = 12 if args.scale >= 1 else 2
    width, seq = sized(args.width, args.scale, 8 * heads), sized(args.seq, args.scale, 16)
    width -= width % heads
    layers, vocab = sized(args.layers, args.scale), sized(args.vocab, args.scale, 64)
    model = Gpt(vocab, seq, width, layers, heads).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, vocab, (args.batch_size, seq + 1), device=device)
    params, tokens = matmul_params(model), args.batch_size * seq
    flops_6n = 6 * params * tokens
    flops_palm = flops_6n + 12 * layers * width * seq * tokens
    announce("small-gpt", device, [("params", params), ("tokens", tokens)])
    print(f"KIT-GPT params={params} tokens={tokens} layers={layers} width={width} seq={seq} "
          f"flops_6n={flops_6n} flops_palm={flops_palm}", flush=True)  # fmt: skip
    clock = StepClock(args, device)
    while True:
        clock.begin()
        optimizer.zero_grad(set_to_none=True)
        # bfloat16 on the GPU's Tensor Cores; the CPU dry run stays in float32 (fast there)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(ids[:, :-1])
        functional.cross_entropy(logits.float().flatten(0, 1), ids[:, 1:].flatten()).backward()
        optimizer.step()
        if not clock.end():
            break


if __name__ == "__main__":
    entry(main)
