# A KV cache stacked over the layers in one buffer [layers, 2, kv, positions, dim], each
# layer writing its new key and value rows through a view with its constant index
# (`cache[i][0, :, pos] = k`, an `index_put_`; pytest test_held_out_layouts.py has
# `index_copy_`'s, against eager), imported
# (compiler/frontend/stacked_writes.py): each layer reads its own windows of the old
# buffer and scatters its rows into them; the buffer's new value is one scatter of every
# layer's rows into the old buffer, after the last layer (no `where` over the whole stack).
# A layer that also reads its whole slot after writing part of it (`cache[i]` after
# `cache[i][0]`) is left as torch wrote it: the whole stack threaded through the layers.
# A slot taken as `cache.narrow(0, i, 1)[0]` (a unit slice, written back by `slice_scatter`)
# folds as `cache[i]` does; one taken from a window of two layers (`cache.narrow(0, 0, 2)[i]`)
# is left as it was.
# RUN: %python %s | filecheck %s

import torch
from torch import nn

from rducc.driver import module_text
from rducc.frontend.importer import decompose, import_program


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.k, self.v = nn.Linear(8, 8, bias=False), nn.Linear(8, 8, bias=False)

    def forward(self, x, slot, pos, whole_slot_read):
        slot[0, :, pos] = self.k(x).view(2, 1, 4)
        slot[1, :, pos] = self.v(x).view(2, 1, 4)
        keys = slot.sum(0) if whole_slot_read else slot[0]
        return x + (x.view(2, 1, 4) @ keys.transpose(-1, -2)).sum()


class Stacked(nn.Module):
    def __init__(self, whole_slot_read: bool) -> None:
        super().__init__()
        self.whole_slot_read = whole_slot_read
        self.layers = nn.ModuleList(Layer() for _ in range(2))
        self.register_buffer("cache", torch.zeros(2, 2, 2, 6, 4))

    def forward(self, x, pos):
        for i, layer in enumerate(self.layers):
            x = layer(x, self.slot(i), pos, self.whole_slot_read)
        return x

    def slot(self, i):
        return self.cache[i]


class Narrowed(Stacked):
    def __init__(self, width: int) -> None:
        super().__init__(False)
        self.width = width

    def slot(self, i):
        return self.cache.narrow(0, i, 1)[0] if self.width == 1 else self.cache.narrow(0, 0, self.width)[i]


cases = [(f"whole slot read: {read}", Stacked(read)) for read in (False, True)]
cases += [(f"narrow width: {width}", Narrowed(width)) for width in (1, 2)]
for label, model in cases:
    inputs = (torch.randn(1, 8), torch.tensor([5]))
    with torch.no_grad():
        exported = torch.export.export(model.eval(), inputs)
    print(f"// {label}")
    print(module_text(import_program(decompose(exported))))

# CHECK-LABEL: // whole slot read: False
# CHECK:       func.func @forward
# CHECK:       rdu.slice %b_cache offsets [0, 0, 0, 0, 0] {{.*}}rdu.layer = "layers.0"
# CHECK:       rdu.scatter {{.*}} dim 0 {rdu.layer = "layers.0"} : tensor<6x2x4xf32>
# CHECK-NOT:   tensor<2x2x2x6x4xf32>) ->
# CHECK:       rdu.slice %b_cache offsets [1, 0, 0, 0, 0] {{.*}}rdu.layer = "layers.1"
# CHECK:       rdu.scatter {{.*}} dim 0 {rdu.layer = "layers.1"} : tensor<6x2x4xf32>
# CHECK-NOT:   tensor<2x2x2x6x4xf32>) ->
# CHECK:       rdu.scatter %b_cache[{{.*}}] = {{.*}} dim 3 : tensor<2x2x2x6x4xf32>, tensor<2x2x2x1x4xi64>,
# CHECK-SAME:  tensor<2x2x2x1x4xf32> -> tensor<2x2x2x6x4xf32>
# CHECK-NEXT:  func.return
# CHECK-LABEL: // whole slot read: True
# CHECK:       rdu.map {{.*}}, %b_cache {rdu.layer = "layers.0"} : {{.*}} -> tensor<2x2x2x6x4xf32>
# CHECK-LABEL: // narrow width: 1
# CHECK:       rdu.slice %b_cache offsets [0, 0, 0, 0, 0] {{.*}}rdu.layer = "layers.0"
# CHECK:       rdu.scatter {{.*}} dim 0 {rdu.layer = "layers.0"} : tensor<6x2x4xf32>
# CHECK-NOT:   tensor<2x2x2x6x4xf32>) ->
# CHECK:       rdu.slice %b_cache offsets [1, 0, 0, 0, 0] {{.*}}rdu.layer = "layers.1"
# CHECK-NOT:   tensor<2x2x2x6x4xf32>) ->
# CHECK:       rdu.scatter %b_cache[{{.*}}] = {{.*}} dim 3 : tensor<2x2x2x6x4xf32>, tensor<2x2x2x1x4xi64>,
# CHECK-SAME:  tensor<2x2x2x1x4xf32> -> tensor<2x2x2x6x4xf32>
# CHECK-NEXT:  func.return
# CHECK-LABEL: // narrow width: 2
# CHECK:       func.func @forward
# CHECK:       {rdu.layer = "layers.0"} : {{.*}} -> tensor<2x2x2x6x4xf32>
