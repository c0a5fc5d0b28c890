"""rducc's runtime: NumPy execution of rducc IR (and, later, the cost model).

- `kernels`: one NumPy function per `rdu` op, and the compiler of `rdu.map`
  bodies into vectorized Python functions;
- `executor`: `GraphExecutor`, which prepares a level-1 (or level-2, with
  `rdu.kernel`) module once and runs `@forward` on NumPy arrays.
"""
