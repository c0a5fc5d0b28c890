"""Model switching as a prediction: the time to bring a compiled program's model into HBM.

`switch_time(module, target)` reads the program's own residency plan and the
target's figures, never a published switching ratio:

- **What moves.** Every weight the plan keeps in HBM (`tier.global` placed in
  `hbm`, or not placed yet) is copied in from where models wait: the
  socket's DDR on an SN40L, host memory over PCIe on a GPU node. Weights the
  plan leaves in DDR stay there. The globals are one socket's share (the
  partitioner shards them), so each socket copies its own, all at once; with
  pipeline stages, the socket of the heaviest stage takes longest.
- **How fast.** A socket copies at `ddr_bandwidth x ddr_efficiency`; on a
  target whose models wait in host memory (`models_in_host_memory`: a GPU
  node) the copy crosses the socket's host link instead, at
  `host_link_bandwidth x ddr_efficiency` (each GPU over its own PCIe link:
  the hardware's figures, not the SN40L paper's one 64 GB/s link for the
  whole node; the host's own memory, 614 GB/s on a DGX H100's two CPUs, is
  not the limit). One DMA start-up (`dma_latency_s`).
- **Reconfiguration.** The chip loads the program's kernels' configurations:
  `reconfigure_s` for each distinct kernel (an outlined layer's kernels once).

`switch_s = copy_s + dma_latency_s + configure_s`. bench/coe.py prints it for
Llama 3.1 8B on sn40l-8 and on the DGX nodes, and the SN40L paper's 15x / 31x
beside it as a check.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.program import global_stages
from rducc.dialects.tier import ComputeOp, GlobalOp
from rducc.targets import Target


@dataclass(frozen=True)
class SwitchTime:
    """One model's switch into HBM on one target, and what it is made of."""

    target: str
    hbm_bytes_per_socket: int
    """Bytes the busiest socket copies (its share of the weights the plan keeps in HBM)."""
    stays_in_ddr_bytes: int
    """Bytes of one socket's share the plan leaves in DDR (not copied)."""
    copy_bandwidth: float
    """Bytes/s one socket copies at."""
    copy_s: float
    configure_s: float
    kernels: int
    switch_s: float


def copy_bandwidth(target: Target) -> float:
    """Bytes/s one socket copies a model into HBM at (the module docstring)."""
    return target.copy_in_bandwidth()


def resident_bytes(module: ModuleOp) -> tuple[int, int]:
    """(bytes the busiest pipeline stage's socket holds in HBM, bytes it leaves in DDR)."""
    stages = global_stages(module)
    in_hbm: dict[int, int] = defaultdict(int)
    in_ddr: dict[int, int] = defaultdict(int)
    for op in module.ops:
        if not isinstance(op, GlobalOp) or op.initial_value is not None:
            continue
        stage = stages.get(op.sym_name.data, 0)
        held_in_hbm, held_in_ddr = op.resident_bytes()  # an expert table may hold its leading rows in HBM
        in_hbm[stage] += held_in_hbm
        in_ddr[stage] += held_in_ddr
    busiest = max(in_hbm, key=lambda s: in_hbm[s], default=0)
    return in_hbm.get(busiest, 0), in_ddr.get(busiest, 0)


def switch_time(module: ModuleOp, target: Target) -> SwitchTime:
    """The modeled time to switch the program's model into HBM on `target`."""
    hbm, ddr = resident_bytes(module)
    rate = copy_bandwidth(target)
    kernels = sum(1 for op in module.walk() if isinstance(op, ComputeOp))
    copy_s = hbm / rate
    configure_s = kernels * target.reconfigure_s
    return SwitchTime(target.name, hbm, ddr, rate, copy_s, configure_s, kernels,
                      copy_s + target.dma_latency_s + configure_s)


__all__ = ["SwitchTime", "copy_bandwidth", "resident_bytes", "switch_time"]
