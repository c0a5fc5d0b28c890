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
- **Reconfiguration** (modeled; assumed: a switch loads each configuration
  the new program runs once, at `reconfigure_s` a load, and the units keep
  only the one they ran last). A configuration is a kernel's mapped body
  (compiler/model/configuration.py), so the loads are the program's distinct
  configurations, each as many loads as its sections, not one a kernel: an
  outlined layer's kernel once however many calls run it, kernels of one
  configuration (a period's repeated layers) once, and a loop body the cost
  model holds as one configuration (compiler/model/shared_configuration.py)
  once, in one section, whatever its kinds: which configuration the units
  load for a kernel, and in how many sections, is the cost model's own
  answer (`cost_model.settle_loops`, `loaded_configuration`,
  `loaded_sections`), read here, not restated. None for the configuration
  the units already hold: the last kernel of the program switched from
  (`after`), when it is one of the new program's and ran in one section.

`switch_s = copy_s + dma_latency_s + configure_s`. bench/coe.py prints it for
Llama 3.1 8B on sn40l-8 and on the DGX nodes, and the SN40L paper's 15x / 31x
beside it as a check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.program import functions, global_stages
from rducc.dialects.tier import ComputeOp, GlobalOp
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.model.cost_model import loaded_configuration, loaded_sections, settle_loops
from rducc.model.program_walk import walk_placed
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
    """Kernels (`tier.compute`s) of the program, an outlined layer's once."""
    loads: int
    """Configuration loads the switch pays (`configuration_loads`)."""
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


def last_kernel(module: ModuleOp) -> ComputeOp | None:
    """The kernel a program runs last: @forward's last kernel, or its last call's callee's."""
    by_name = {f.sym_name.data: f for f in functions(module)}
    function = by_name.get("forward")
    while function is not None:
        last = next((op for op in reversed(list(function.body.walk()))
                     if isinstance(op, ComputeOp | func.CallOp)), None)
        if not isinstance(last, func.CallOp):
            return last
        function = by_name.get(last.callee.string_value())
    return None


def loaded_configurations(module: ModuleOp, target: Target) -> dict[ComputeOp, tuple[Hashable, int]]:
    """Each kernel of the program with the configuration the units load to run it on
    `target` and its sections, as the cost model settles its loops (a held loop
    body's kernels: the body's one configuration, one section)."""
    try:
        with unchanged():  # the program is read, not rewritten: each op's IR-only answers worked out once
            records, _ = settle_loops(walk_placed(module, target.kernel_looping), target)
            return {record.op: (loaded_configuration(record), loaded_sections(record, target)) for record in records}
    except RduccError as failure:  # a kernel with no room on these units: the program is another target's
        raise RduccError(f"model switching: the program's kernels do not fit target {target.name}'s units "
                         f"(compile it for {target.name}): {failure}") from failure


def configuration_loads(module: ModuleOp, target: Target, after: ModuleOp | None = None) -> int:
    """The configuration loads a switch to `module` on `target` pays: each distinct
    configuration its kernels load (`loaded_configurations`), once a section, less
    the one the units hold when `after` (the program switched from) ran last a
    kernel of that configuration in one section (the module docstring)."""
    sections = dict(loaded_configurations(module, target).values())
    last = last_kernel(after) if after is not None else None
    if after is not None and last is not None:
        configuration, last_sections = loaded_configurations(after, target)[last]
        if last_sections == 1:
            sections.pop(configuration, None)
    return sum(sections.values())


def switch_time(module: ModuleOp, target: Target, after: ModuleOp | None = None) -> SwitchTime:
    """The modeled time to switch the program's model into HBM on `target` (from the
    program `after`, whose last configuration the units hold, when given)."""
    hbm, ddr = resident_bytes(module)
    rate = copy_bandwidth(target)
    kernels = sum(1 for op in module.walk() if isinstance(op, ComputeOp))
    loads = configuration_loads(module, target, after)
    copy_s = hbm / rate
    configure_s = loads * target.reconfigure_s
    return SwitchTime(target.name, hbm, ddr, rate, copy_s, configure_s, kernels, loads,
                      copy_s + target.dma_latency_s + configure_s)


__all__ = ["SwitchTime", "configuration_loads", "copy_bandwidth", "last_kernel", "loaded_configurations",
           "resident_bytes", "switch_time"]
