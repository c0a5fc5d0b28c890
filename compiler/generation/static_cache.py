"""transformers' static-cache export recipe, with an attention mask and position ids as inputs.

`TorchExportableModuleWithStaticCache` calls the model with `attention_mask=None`
and lets it derive positions from the cache's fill level: one prompt length per
batch, and no OPT (its positions come from a mask cumsum whose length is the
fill level, a data-dependent shape). `MaskedStaticCache` takes both from the
host, as transformers' `generate` computes them: the mask over all cache
positions (1 for a real token, 0 for left padding and positions not yet
written) and each token's position (`mask.cumsum(-1) - 1`, 0 at padding).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from rducc.errors import RduccError


def takes_position_ids(model: Any) -> bool:
    """Whether the model's forward takes `position_ids` (transformers' generate passes them when it does)."""
    return "position_ids" in inspect.signature(model.forward).parameters


def masked_static_cache(model: Any, batch: int, cache_length: int) -> torch.nn.Module:
    """The model with a StaticCache of these sizes as buffers, called with a mask and positions."""
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    class MaskedStaticCache(TorchExportableModuleWithStaticCache):
        """transformers' recipe whose forward also takes `attention_mask` [batch, cache]
        and `position_ids` [batch, tokens]."""

        def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor,  # type: ignore[override]
                    attention_mask: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
            for layer in self.static_cache.layers:
                layer.cumulative_length.copy_(cache_position[0])  # type: ignore[union-attr]
            positions = {} if position_ids is None else {"position_ids": position_ids}
            outs = self.model(input_ids=input_ids, attention_mask=attention_mask, cache=self.static_cache,
                              use_cache=True, **positions)
            return outs.logits

    config = model.generation_config
    saved = (config.use_cache, config.cache_implementation)
    config.use_cache, config.cache_implementation = True, "static"
    try:
        return MaskedStaticCache(model, batch_size=batch, max_cache_len=cache_length)
    except (AssertionError, ValueError, TypeError, NotImplementedError) as error:
        raise RduccError(f"{type(model).__name__} cannot be exported with a static cache: {error}") from None
    finally:
        config.use_cache, config.cache_implementation = saved


def prompt_positions(mask: torch.Tensor) -> torch.Tensor:
    """Each prompt token's position as transformers' generate computes it from a left-padded mask."""
    return (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
