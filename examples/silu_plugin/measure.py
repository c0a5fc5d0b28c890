"""Measure fuse-silu with the cost model: a SwiGLU MLP, without and with the pass."""

import torch

import rducc
from rducc.api import after
from rducc_silu.fuse_silu import FuseSiluPass


class SwiGLU(torch.nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 256):
        super().__init__()
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = self.gate(x)
        return self.down(g * torch.sigmoid(g) * self.up(x))


def main() -> None:
    torch.manual_seed(0)
    model, x = SwiGLU().eval(), torch.randn(16, 64)
    expected = model(x)
    for opt_level in (0, 2):
        plain = rducc.compile(model, (x,), opt_level=opt_level)
        fused = rducc.compile(model, (x,), opt_level=opt_level, passes=[after("rdu-canonicalize", FuseSiluPass())])
        for program in (plain, fused):
            torch.testing.assert_close(program(x), expected, rtol=1e-4, atol=1e-5)
        before, now = plain.report, fused.report
        print(
            f"-O{opt_level}: {len(before.kernels)} -> {len(now.kernels)} kernels, modeled "
            f"{before.modeled_time_s * 1e6:.2f} us -> {now.modeled_time_s * 1e6:.2f} us "
            f"({before.modeled_time_s / now.modeled_time_s:.2f}x), HBM bytes "
            f"{before.hbm_bytes} -> {now.hbm_bytes}"
        )


if __name__ == "__main__":
    main()
