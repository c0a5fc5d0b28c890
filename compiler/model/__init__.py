"""The performance model: what the chip would do with a program, at compile time.

- `kernel_model`: a kernel's resources (tiling plans, working sets), read by
  `rdu-fuse`, `rdu-tile`, `rdu-insert-dma`, `rdu-sram-alloc`;
- `mapping`: a kernel's placement on the fabric (PCU/PMU stages), read by
  `rdu-map-units` and the cost model;
- `kernel_looping`: which outlined-layer calls run as one loop;
- `roofline`: a kernel's roofline time on tensor-level IR, read by
  `rdu-place-saved` where no tile plan fits a kernel it may recompute;
- `cost_model`: the modeled time of a placed program (`estimate`);
- `overlap_schedule`: kernels and their collectives on the chip and link
  lanes (the overlap the schedule gives, nothing assumed);
- `switching`: the time to switch a program's model into HBM, from its
  residency plan and the target's copy path;
- `ranges`: headline figures as low..high over a target's assumed figures.

The runtime executes programs; this package models them. Neither imports the
other (import-linter's "runtime and model" contract).
"""
