"""Joint graphs (`_export_forward_backward`) whose backward keeps the ops
rducc decomposes itself (convolution_backward, max/avg/adaptive pooling
backward, CPU flash attention backward), on model code: a CNN written with
torch.nn (batch norm in training mode, strided, grouped, dilated and
transposed convolutions, every pooling) and transformers' Whisper encoder
(1-d convolutions and attention). Loss and every gradient equal eager's."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export.experimental import _export_forward_backward

import rducc


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=4, bias=False)
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.fc = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn(self.conv1(x)))
        h = F.max_pool2d(h, 3, 2, 1)
        h = F.gelu(self.conv2(h))
        h = F.avg_pool2d(h, 3, 1, 1, count_include_pad=False)
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = F.silu(self.up(h))
        h = F.adaptive_avg_pool2d(h, (2, 2))
        return F.cross_entropy(self.fc(h.flatten(1)), target)


BACKWARD_OPS = {
    "aten.convolution_backward.default", "aten.max_pool2d_with_indices_backward.default",
    "aten.avg_pool2d_backward.default", "aten._adaptive_avg_pool2d_backward.default",
}


def _joint(model: nn.Module, inputs: tuple) -> torch.export.ExportedProgram:
    return _export_forward_backward(torch.export.export(copy.deepcopy(model), inputs))


def _check_gradients(model: nn.Module, inputs: tuple, opt_level: int, joint: torch.export.ExportedProgram) \
        -> torch.export.ExportedProgram:
    loss, *grads = rducc.compile(joint, opt_level=opt_level)(*inputs)
    expected = model(*inputs)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-5, atol=1e-6)
    trained = [(name, p) for name, p in model.named_parameters() if p.grad is not None]
    assert len(grads) == len(trained)
    for got, (name, parameter) in zip(grads, trained):
        torch.testing.assert_close(got, parameter.grad, rtol=1e-4, atol=1e-6, msg=name)
    return joint


@pytest.fixture(scope="module")
def cnn() -> tuple[nn.Module, tuple, torch.export.ExportedProgram]:
    torch.manual_seed(0)
    model, inputs = CNN().train(), (torch.randn(2, 3, 16, 16), torch.tensor([1, 3]))
    return model, inputs, _joint(model, inputs)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_cnn_joint_graph_gradients_equal_eager(cnn, opt_level: int) -> None:
    model, inputs, joint = cnn
    model = copy.deepcopy(model)  # each level's eager gradients from fresh parameters
    _check_gradients(model, inputs, opt_level, joint)
    kept = {str(n.target) for n in joint.graph.nodes if n.op == "call_function"}
    assert BACKWARD_OPS <= kept, "the joint graph should keep the backward ops this test is about"


def test_whisper_encoder_joint_graph_gradients_equal_eager() -> None:
    from transformers import WhisperConfig, WhisperModel

    torch.manual_seed(1)
    config = WhisperConfig(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=8, pad_token_id=0,
                           bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
    encoder = WhisperModel(config).get_encoder().train()

    class Loss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, features: torch.Tensor) -> torch.Tensor:
            return self.encoder(input_features=features).last_hidden_state.pow(2).mean()

    model, inputs = Loss(), (torch.randn(2, 8, 16),)
    joint = _check_gradients(model, inputs, 2, _joint(model, inputs))
    kept = {str(n.target) for n in joint.graph.nodes if n.op == "call_function"}
    assert "aten._scaled_dot_product_flash_attention_for_cpu_backward.default" in kept


class TwoStridedConvs(nn.Module):
    """Two bias-free stride-2 3x3 convolutions (8x8 -> 4x4 -> 2x2: each leaves its
    input's last padding row and column past its last window) and a pooled head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False)
        self.head = nn.Linear(6, 5, bias=False)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        h = self.conv2(F.relu(self.conv1(x)))
        return F.cross_entropy(self.head(h.mean((2, 3))), labels)


def test_float32_training_step_convolution_flops_count_no_inserted_zeros() -> None:
    """The cost report's convolution FLOPs of a float32 training step, counted by
    hand from the shapes (2 x multiply-adds): each forward convolution 2 x output
    elements x in-channels x 9, its weight gradient the same, and conv2's input
    gradient (a transposed convolution of its output gradient) 2 x output-gradient
    elements x in-channels x 9, as the forward (conv1's input, the image, wants
    none). Before tconv23 that input gradient was a direct convolution of the
    gradient spread with the stride's zeros, counted over conv2's 4x4 input:
    2 x 2x4x4x4 x 6 x 9 = 13,824 FLOPs, not 3,456. The stride leaves each
    convolution's last padding row and column past its last window: each weight
    gradient convolves only the rows the windows reach; before, conv1's was a 4x4
    result cropped to 3x3, 2 x 3x4x4x4 x 2 x 16 = 12,288 FLOPs, not 6,912
    (modeled FLOPs, sn40l)."""
    program = rducc.compile_training(TwoStridedConvs(), (torch.randn(2, 3, 8, 8), torch.tensor([1, 3])),
                                     optimizer=None, opt_level=0)
    conv1 = 2 * (2 * 4 * 4 * 4) * 3 * 9  # forward and weight gradient: 6,912 each
    conv2 = 2 * (2 * 6 * 2 * 2) * 4 * 9  # forward, weight gradient and input gradient: 3,456 each
    kernels = [k for k in program.simulate().kernels if set(k.ops_fused) == {"rdu.conv"}]
    assert sorted(k.flops for k in kernels) == sorted([conv1, conv1, conv2, conv2, conv2]), kernels
