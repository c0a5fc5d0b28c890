"""The lowering pipeline on every test model, level and target, proved sound
by the independent SRAM checker."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.dialects.builtin import ModuleOp

from rducc.driver import import_exported, lower, module_text
from rducc.errors import RduccError
from rducc.targets import BUILTIN_TARGETS, load_target
from sram_checker import check_placed


def _forward_attrs(module: ModuleOp) -> dict:
    forward = next(op for op in module.ops if op.name == "func.func")
    return {k: v.value.data for k, v in forward.attributes.items() if k.startswith("tier.")}


def _op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk()]


@pytest.fixture(scope="module")
def imported(exported_small) -> dict[str, ModuleOp]:
    return {name: import_exported(program) for name, (_, _, program) in exported_small.items()}


@pytest.mark.parametrize("target_name", BUILTIN_TARGETS)
@pytest.mark.parametrize("opt_level", [0, 1, 2])
@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama", "tiny_gpt2"])
def test_compiles_and_checker_passes(imported, name: str, opt_level: int, target_name: str) -> None:
    target = load_target(target_name)
    module = imported[name].clone()
    lower(module, target, opt_level)
    assert module.attributes["rdu.level"].data == "placed"
    attrs = _forward_attrs(module)
    peak, bound = check_placed(module, target.sram_bytes)
    assert attrs["tier.sram_capacity"] == target.sram_bytes
    # the allocator rounds sizes up to 64-byte slots; the checker counts exact bytes
    assert peak <= attrs["tier.sram_peak"] < peak + 64
    assert bound <= attrs["tier.sram_lower_bound"] <= attrs["tier.sram_peak"]
    names = _op_names(module)
    assert "rdu.kernel" not in names and names.count("tier.compute") >= 1
    assert _inside_compute_only(module)


def _inside_compute_only(module: ModuleOp) -> bool:
    """Every rdu op of a placed program sits inside a tier.compute body."""
    for op in module.walk():
        if op.name.startswith("rdu.") and op.name != "rdu.yield":
            parent = op.parent_op()
            while parent is not None and parent.name != "tier.compute":
                parent = parent.parent_op()
            if parent is None:
                return False
    return True


def test_fusion_levels_reduce_kernels(imported) -> None:
    counts = []
    for level in (0, 1, 2):
        module = imported["tiny_llama"].clone()
        lower(module, load_target("sn40l"), level, emit="kernels")
        counts.append(_op_names(module).count("rdu.kernel"))
    assert counts[0] > counts[1] > counts[2]
    assert counts[2] == 3  # one kernel per decoder layer, plus the LM head


def test_placed_text_reparses(imported, tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path

    module = imported["tiny_gpt2"].clone()
    lower(module, load_target("sn40l"), 2)
    path = tmp_path / "placed.mlir"
    path.write_text(module_text(module))
    opt = Path(sys.executable).parent / "rducc-opt"
    result = subprocess.run([str(opt), str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _small_target(**changes):
    return dataclasses.replace(load_target("sn40l"), **changes)


def test_tiling_splits_a_kernel_that_does_not_fit(imported) -> None:
    # fc2's 16 KB weight cannot sit whole in 12 KB of SRAM: it streams in tiles
    target = _small_target(name="small", sram_bytes=12_000, pmu_bytes=500, pmus=24)
    module = imported["mlp"].clone()
    lower(module, target, 0)
    text = module_text(module, locations=False)
    assert "scf.for" in text and "buffers 2" in text  # a tile loop, double-buffered
    peak, _ = check_placed(module, target.sram_bytes)
    assert peak <= target.sram_bytes


def test_weights_spill_to_ddr_when_hbm_is_full(imported) -> None:
    target = _small_target(name="tiny-hbm", hbm_bytes=20_000)
    module = imported["mlp"].clone()
    lower(module, target, 1)
    text = module_text(module, locations=False)
    assert " in ddr " in text and " in hbm " in text
    assert "!tier.buffer<ddr," in text  # DDR-to-SRAM transfers are explicit
    assert module.attributes["tier.ddr_weight_bytes"].value.data > 0


def test_model_too_large_is_an_error(imported) -> None:
    target = _small_target(name="tiny", hbm_bytes=1_000, ddr_bytes=1_000)
    with pytest.raises(RduccError, match="does not fit tiny"):
        lower(imported["mlp"].clone(), target, 2)


def test_untileable_kernel_is_a_located_error(imported) -> None:
    # fc1's 512-byte input alone does not fit in 600 bytes next to any weight tile
    target = _small_target(name="crumb", sram_bytes=600, pmu_bytes=100, pmus=6)
    with pytest.raises(RduccError, match=r"models\.py:\d+:\d+: error: kernel k\d+ cannot be tiled to fit crumb"):
        lower(imported["mlp"].clone(), target, 0)


def test_llama31_8b_meta_compiles_placed(llama8b_meta) -> None:
    target = load_target("sn40l")
    module = import_exported(llama8b_meta)
    lower(module, target, 2)
    attrs = _forward_attrs(module)
    peak, bound = check_placed(module, target.sram_bytes)
    assert peak <= attrs["tier.sram_peak"] <= 1.02 * bound
    names = _op_names(module)
    assert names.count("tier.compute") == 3  # the embedding, one outlined decoder layer, the LM head
    assert names.count("func.call") == 32
    assert "tier.gather" in names  # the 1 GB embedding table stays in HBM
    assert "scf.for" in names  # the LM head's 1 GB weight streams in tiles
