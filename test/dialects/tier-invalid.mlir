// RUN: rducc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every verifier error of the `tier` dialect, one per chunk, in source order.
// A type constraint checked while an op is read (an unsupported element type) is a
// parse error located at the op (--parsing-diagnostics prints it).

// tier.buffer

"test.op"() : () -> !tier.buffer<sram, ?x4xf32>
// CHECK: tier.buffer dims must be static and >= 0 (no '?')

// -----
// tier.global

tier.global @g in sram : tensor<4xf32>
// CHECK: Operation does not verify: 'tier.global' @g cannot live in sram: globals live off chip (hbm or ddr)

// -----

tier.global @g in hbm : tensor<?x4xf32>
// CHECK: Operation does not verify: 'tier.global' @g must be static

// -----

tier.global @g : tensor<4xcomplex<f32>>
// CHECK: Operation does not verify: global @g has unsupported element type complex<f32>; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

tier.global @g in hbm : tensor<4xf32> = dense<1.000000e+00> : tensor<2xf32>
// CHECK: Operation does not verify: 'tier.global' @g value has type tensor<2xf32>, expected tensor<4xf32>

// -----

tier.global @g : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf16>
// CHECK: Operation does not verify: 'tier.global' @g value has type tensor<2xf16>, expected tensor<2xf32>

// -----
// tier.get_global

func.func @f() {
  %g = tier.get_global @missing : !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.get_global' refers to @missing, which is not a 'tier.global'

// -----

func.func @f() {
  %g = tier.get_global @f : !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.get_global' refers to @f, which is not a 'tier.global'

// -----

tier.global @g in hbm : tensor<4x4xf32>
func.func @f() {
  %g = tier.get_global @g : !tier.buffer<hbm, 16xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.get_global' type !tier.buffer<hbm, 16xf32> does not match the global's tensor<4x4xf32>

// -----

tier.global @g in hbm : tensor<4x4xf32>
func.func @f() {
  %g = tier.get_global @g : !tier.buffer<hbm, 4x4xbf16>
  func.return
}
// CHECK: Operation does not verify: 'tier.get_global' type !tier.buffer<hbm, 4x4xbf16> does not match the global's tensor<4x4xf32>

// -----

tier.global @g in hbm : tensor<4x4xf32>
func.func @f() {
  %g = tier.get_global @g : !tier.buffer<ddr, 4x4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.get_global' reads @g from ddr, but it lives in hbm

// -----

tier.global @g in ddr : tensor<4x4xf32>
func.func @f() {
  %g = tier.get_global @g : !tier.buffer<sram, 4x4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.get_global' cannot read @g as sram: globals live off chip; DMA them into an sram buffer

// -----
// tier.alloc

func.func @f() {
  %a = tier.alloc : !tier.buffer<sram, 4xcomplex<f32>>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer has unsupported element type complex<f32>; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

func.func @f() {
  %a = tier.alloc offset 0 : !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' offset is only meaningful in sram, not hbm

// -----

func.func @f() {
  %a = tier.alloc offset 64 : !tier.buffer<ddr, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' offset is only meaningful in sram, not ddr

// -----

func.func @f() {
  %a = tier.alloc offset -4 : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' offset -4 is negative

// -----

func.func @f() attributes {tier.sram_capacity = 1024 : i64} {
  %a = tier.alloc offset 1000 : !tier.buffer<sram, 8xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [1000, 1032) ends past the SRAM capacity of 1024 bytes by 8

// -----

builtin.module attributes {tier.sram_capacity = 1024 : i64} {
  func.func @f() {
    %a = tier.alloc offset 0 : !tier.buffer<sram, 64x64xbf16>
    func.return
  }
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [0, 8192) ends past the SRAM capacity of 1024 bytes by 7168

// -----

// The closest enclosing capacity wins: the func's 256 bytes, not the module's 1 MiB.
builtin.module attributes {tier.sram_capacity = 1048576 : i64} {
  func.func @f() attributes {tier.sram_capacity = 256 : i64} {
    %a = tier.alloc offset 128 : !tier.buffer<sram, 64xf32>
    func.return
  }
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [128, 384) ends past the SRAM capacity of 256 bytes by 128

// -----

func.func @f() attributes {tier.sram_capacity = 1024 : i64} {
  %a = tier.alloc offset 0 : !tier.buffer<sram, 16xf32>
  %b = tier.alloc offset 32 : !tier.buffer<sram, 16xf32>
  tier.dealloc %b : !tier.buffer<sram, 16xf32>
  tier.dealloc %a : !tier.buffer<sram, 16xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [0, 64) overlaps the live buffer [32, 96) allocated after it

// -----

// %b is freed before %c, but %a is still live where %c starts.
func.func @f() {
  %a = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  %b = tier.alloc offset 16 : !tier.buffer<sram, 4xf32>
  tier.dealloc %b : !tier.buffer<sram, 4xf32>
  %c = tier.alloc offset 8 : !tier.buffer<sram, 2xf64>
  tier.dealloc %c : !tier.buffer<sram, 2xf64>
  tier.dealloc %a : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [0, 16) overlaps the live buffer [8, 24) allocated after it

// -----

// A buffer copied out before anything writes it (the runtime would return poison).
func.func @f(%out: !tier.buffer<hbm, 4xf32>) {
  %a = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  tier.dma %a -> %out : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' reads the buffer of this 'tier.alloc' before anything writes it

// -----
// tier.dealloc

tier.global @g in hbm : tensor<4xf32>
func.func @f() {
  %g = tier.get_global @g : !tier.buffer<hbm, 4xf32>
  tier.dealloc %g : !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dealloc' must free the result of a 'tier.alloc'

// -----

func.func @f(%arg : !tier.buffer<sram, 4xf32>) {
  tier.dealloc %arg : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dealloc' must free the result of a 'tier.alloc'

// -----
// tier.dma

func.func @f(%h : !tier.buffer<hbm, 4x4xf32>) {
  %s = tier.alloc : !tier.buffer<sram, 16xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 4x4xf32> -> !tier.buffer<sram, 16xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' source !tier.buffer<hbm, 4x4xf32> and destination !tier.buffer<sram, 16xf32> differ in shape

// -----

func.func @f(%h : !tier.buffer<hbm, 4xf32>) {
  %s = tier.alloc : !tier.buffer<sram, 4xf16>
  tier.dma %h -> %s : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf16>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' source !tier.buffer<hbm, 4xf32> and destination !tier.buffer<sram, 4xf16> differ in element type

// -----

func.func @f(%a : !tier.buffer<hbm, 4xf32>, %b : !tier.buffer<hbm, 4xf32>) {
  tier.dma %a -> %b : !tier.buffer<hbm, 4xf32> -> !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' from hbm to itself moves nothing; only sram-to-sram (PMU to PMU) copies are meaningful

// -----

func.func @f(%a : !tier.buffer<ddr, 4xf32>, %b : !tier.buffer<ddr, 4xf32>) {
  tier.dma %a -> %b : !tier.buffer<ddr, 4xf32> -> !tier.buffer<ddr, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' from ddr to itself moves nothing; only sram-to-sram (PMU to PMU) copies are meaningful

// -----

func.func @f(%a : !tier.buffer<hbm, 4xi4>, %b : !tier.buffer<sram, 4xi4>) {
  tier.dma %a -> %b : !tier.buffer<hbm, 4xi4> -> !tier.buffer<sram, 4xi4>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' source has unsupported element type i4; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

func.func @f(%a : !tier.buffer<sram, 4xf32>, %b : !tier.buffer<sram, 4xindex>) {
  tier.dma %a -> %b : !tier.buffer<sram, 4xf32> -> !tier.buffer<sram, 4xindex>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' destination has unsupported element type index; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----
// tier.dma strides and tier.view

func.func @f(%h : !tier.buffer<hbm, 8x16xf32>) {
  %c0 = arith.constant 0 : index
  %s = tier.alloc : !tier.buffer<sram, 8x8xf32>
  tier.dma %h[%c0, %c0] -> %s strides [1, 3] : !tier.buffer<hbm, 8x16xf32> -> !tier.buffer<sram, 8x8xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' window [8, 8] does not fit in the source buffer [8, 16]

// -----

func.func @f(%h : !tier.buffer<hbm, 8xf32>) {
  %s = tier.alloc : !tier.buffer<sram, 8xf32>
  tier.dma %h -> %s strides [2] : !tier.buffer<hbm, 8xf32> -> !tier.buffer<sram, 8xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.dma' strides need offsets on one side

// -----

func.func @f(%h : !tier.buffer<hbm, 4x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %v = tier.view %h[%c0, %c0, %c0] sizes [2, 4, 16] : !tier.buffer<hbm, 4x8x16xf32> -> !tier.buffer<hbm, 128xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.view' window [2, 4, 16] of [4, 8, 16] is not contiguous in memory

// -----

func.func @f(%h : !tier.buffer<hbm, 4x8xf32>) {
  %c0 = arith.constant 0 : index
  %v = tier.view %h[%c0, %c0] sizes [1, 8] : !tier.buffer<hbm, 4x8xf32> -> !tier.buffer<hbm, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.view' window [1, 8] and result !tier.buffer<hbm, 4xf32> differ in element count

// -----

func.func @f(%h : !tier.buffer<hbm, 4x8xf32>) {
  %c0 = arith.constant 0 : index
  %v = tier.view %h[%c0, %c0] sizes [1, 8] : !tier.buffer<hbm, 4x8xf32> -> !tier.buffer<ddr, 8xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.view' views an off-chip buffer in its own tier

// tier.gather

// -----

func.func @f(%h : !tier.buffer<hbm, 4x100xf32>, %i : !tier.buffer<hbm, 4x1xi64>, %j : !tier.buffer<hbm, 3x1xi64>) {
  %r = tier.alloc offset 0 : !tier.buffer<sram, 4x1xi64>
  %c = tier.alloc offset 64 : !tier.buffer<sram, 3x1xi64>
  tier.dma %i -> %r : !tier.buffer<hbm, 4x1xi64> -> !tier.buffer<sram, 4x1xi64>
  tier.dma %j -> %c : !tier.buffer<hbm, 3x1xi64> -> !tier.buffer<sram, 3x1xi64>
  %d = tier.alloc offset 128 : !tier.buffer<sram, 4x1xf32>
  tier.gather %h[%r, %c] -> %d : !tier.buffer<hbm, 4x100xf32>, !tier.buffer<sram, 4x1xi64>, !tier.buffer<sram, 3x1xi64> -> !tier.buffer<sram, 4x1xf32>
  tier.dealloc %r : !tier.buffer<sram, 4x1xi64>
  tier.dealloc %c : !tier.buffer<sram, 3x1xi64>
  tier.dealloc %d : !tier.buffer<sram, 4x1xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.gather' index shapes [[4, 1], [3, 1]] do not broadcast

// -----

func.func @f(%h : !tier.buffer<hbm, 4x100xf32>, %i : !tier.buffer<hbm, 4x1xi64>) {
  %r = tier.alloc offset 0 : !tier.buffer<sram, 4x1xi64>
  tier.dma %i -> %r : !tier.buffer<hbm, 4x1xi64> -> !tier.buffer<sram, 4x1xi64>
  %d = tier.alloc offset 128 : !tier.buffer<sram, 4x1xf32>
  tier.gather %h[%r, %r, %r] -> %d : !tier.buffer<hbm, 4x100xf32>, !tier.buffer<sram, 4x1xi64>, !tier.buffer<sram, 4x1xi64>, !tier.buffer<sram, 4x1xi64> -> !tier.buffer<sram, 4x1xf32>
  tier.dealloc %r : !tier.buffer<sram, 4x1xi64>
  tier.dealloc %d : !tier.buffer<sram, 4x1xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.gather' takes 1 to rank-of-source index buffers, got 3

// -----

func.func @f(%h : !tier.buffer<hbm, 4x100xf32>, %i : !tier.buffer<hbm, 4x1xi64>) {
  %r = tier.alloc offset 0 : !tier.buffer<sram, 4x1xi64>
  tier.dma %i -> %r : !tier.buffer<hbm, 4x1xi64> -> !tier.buffer<sram, 4x1xi64>
  %d = tier.alloc offset 128 : !tier.buffer<sram, 4x1x100xf32>
  tier.gather %h[%r, %r] -> %d : !tier.buffer<hbm, 4x100xf32>, !tier.buffer<sram, 4x1xi64>, !tier.buffer<sram, 4x1xi64> -> !tier.buffer<sram, 4x1x100xf32>
  tier.dealloc %r : !tier.buffer<sram, 4x1xi64>
  tier.dealloc %d : !tier.buffer<sram, 4x1x100xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.gather' destination !tier.buffer<sram, 4x1x100xf32> should have shape [4, 1] and element type f32

// tier.scatter

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>, %pq : !tier.buffer<hbm, 1x2xi64>, %pf : !tier.buffer<hbm, 2xf32>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  %q = tier.alloc offset 128 : !tier.buffer<sram, 1x2xi64>
  %f = tier.alloc offset 256 : !tier.buffer<sram, 2xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.dma %pq -> %q : !tier.buffer<hbm, 1x2xi64> -> !tier.buffer<sram, 1x2xi64>
  tier.dma %pf -> %f : !tier.buffer<hbm, 2xf32> -> !tier.buffer<sram, 2xf32>
  tier.scatter %s -> %h[%p] dim 0 : !tier.buffer<sram, 2x8xf32>, !tier.buffer<hbm, 2xi64> -> !tier.buffer<hbm, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  tier.dealloc %q : !tier.buffer<sram, 1x2xi64>
  tier.dealloc %f : !tier.buffer<sram, 2xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' source and indices must be in sram

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>, %pq : !tier.buffer<hbm, 1x2xi64>, %pf : !tier.buffer<hbm, 2xf32>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  %q = tier.alloc offset 128 : !tier.buffer<sram, 1x2xi64>
  %f = tier.alloc offset 256 : !tier.buffer<sram, 2xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.dma %pq -> %q : !tier.buffer<hbm, 1x2xi64> -> !tier.buffer<sram, 1x2xi64>
  tier.dma %pf -> %f : !tier.buffer<hbm, 2xf32> -> !tier.buffer<sram, 2xf32>
  tier.scatter %s -> %s[%r] dim 0 : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 2xi64> -> !tier.buffer<sram, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  tier.dealloc %q : !tier.buffer<sram, 1x2xi64>
  tier.dealloc %f : !tier.buffer<sram, 2xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' writes an off-chip buffer, not sram

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>, %pq : !tier.buffer<hbm, 1x2xi64>, %pf : !tier.buffer<hbm, 2xf32>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  %q = tier.alloc offset 128 : !tier.buffer<sram, 1x2xi64>
  %f = tier.alloc offset 256 : !tier.buffer<sram, 2xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.dma %pq -> %q : !tier.buffer<hbm, 1x2xi64> -> !tier.buffer<sram, 1x2xi64>
  tier.dma %pf -> %f : !tier.buffer<hbm, 2xf32> -> !tier.buffer<sram, 2xf32>
  tier.scatter %s -> %h[%f] dim 0 : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 2xf32> -> !tier.buffer<hbm, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  tier.dealloc %q : !tier.buffer<sram, 1x2xi64>
  tier.dealloc %f : !tier.buffer<sram, 2xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' indices must be integers

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>, %pq : !tier.buffer<hbm, 1x2xi64>, %pf : !tier.buffer<hbm, 2xf32>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  %q = tier.alloc offset 128 : !tier.buffer<sram, 1x2xi64>
  %f = tier.alloc offset 256 : !tier.buffer<sram, 2xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.dma %pq -> %q : !tier.buffer<hbm, 1x2xi64> -> !tier.buffer<sram, 1x2xi64>
  tier.dma %pf -> %f : !tier.buffer<hbm, 2xf32> -> !tier.buffer<sram, 2xf32>
  tier.scatter %s -> %h[%q] dim 0 : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 1x2xi64> -> !tier.buffer<hbm, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  tier.dealloc %q : !tier.buffer<sram, 1x2xi64>
  tier.dealloc %f : !tier.buffer<sram, 2xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' indices must be 1-d, not [1, 2]

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>, %pq : !tier.buffer<hbm, 1x2xi64>, %pf : !tier.buffer<hbm, 2xf32>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  %q = tier.alloc offset 128 : !tier.buffer<sram, 1x2xi64>
  %f = tier.alloc offset 256 : !tier.buffer<sram, 2xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.dma %pq -> %q : !tier.buffer<hbm, 1x2xi64> -> !tier.buffer<sram, 1x2xi64>
  tier.dma %pf -> %f : !tier.buffer<hbm, 2xf32> -> !tier.buffer<sram, 2xf32>
  tier.scatter %r -> %h[%r] dim 0 : !tier.buffer<sram, 2xi64>, !tier.buffer<sram, 2xi64> -> !tier.buffer<hbm, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  tier.dealloc %q : !tier.buffer<sram, 1x2xi64>
  tier.dealloc %f : !tier.buffer<sram, 2xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' source !tier.buffer<sram, 2xi64> and destination !tier.buffer<hbm, 2x8xf32> differ in shape or type

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>, %pq : !tier.buffer<hbm, 1x2xi64>, %pf : !tier.buffer<hbm, 2xf32>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  %q = tier.alloc offset 128 : !tier.buffer<sram, 1x2xi64>
  %f = tier.alloc offset 256 : !tier.buffer<sram, 2xf32>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.dma %pq -> %q : !tier.buffer<hbm, 1x2xi64> -> !tier.buffer<sram, 1x2xi64>
  tier.dma %pf -> %f : !tier.buffer<hbm, 2xf32> -> !tier.buffer<sram, 2xf32>
  tier.scatter %s -> %h[%r] dim 2 : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 2xi64> -> !tier.buffer<hbm, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  tier.dealloc %q : !tier.buffer<sram, 1x2xi64>
  tier.dealloc %f : !tier.buffer<sram, 2xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' dim 2 is out of range for rank 2

// -----

func.func @f(%h : !tier.buffer<hbm, 2x8xf32>, %p : !tier.buffer<hbm, 2xi64>) {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
  %r = tier.alloc offset 64 : !tier.buffer<sram, 2xi64>
  tier.dma %h -> %s : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
  tier.dma %p -> %r : !tier.buffer<hbm, 2xi64> -> !tier.buffer<sram, 2xi64>
  tier.scatter %s -> %h[%r] dim 1 {rows_only} : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 2xi64> -> !tier.buffer<hbm, 2x8xf32>
  tier.dealloc %s : !tier.buffer<sram, 2x8xf32>
  tier.dealloc %r : !tier.buffer<sram, 2xi64>
  func.return
}
// CHECK: Operation does not verify: 'tier.scatter' source !tier.buffer<sram, 2x8xf32> and destination !tier.buffer<hbm, 2x8xf32> differ in shape or type (rows_only: the source is the destination's rows at the indices)

// -----

// tier.compute: its body's terminator (found by trait) yields one tensor per output buffer.
func.func @f(%x : !tier.buffer<hbm, 4xf32>) {
  %in = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  %out = tier.alloc offset 64 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %in : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.compute "k0" ins(%in : !tier.buffer<sram, 4xf32>) outs(%out : !tier.buffer<sram, 4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    %n = rdu.map %t : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    rdu.yield
  }
  tier.dealloc %in : !tier.buffer<sram, 4xf32>
  tier.dealloc %out : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.compute' body must end in 'rdu.yield' of one tensor per output buffer
