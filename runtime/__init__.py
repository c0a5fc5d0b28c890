"""rducc's runtime: NumPy execution of rducc IR (its modeled time is `rducc.model`'s).

- `context`: `RunContext` (run number, socket group, rank), one per call;
- `registry`: numpy implementations registered per op class (`@implements`),
  `implementations` and `collectives` registering them;
- `dtypes`, `map_body`, `elementwise`, `kernels`: element dtypes, the
  `rdu.map` body compiler and its vectorized scalar helpers, tensor kernels;
- `engine`: the steps, value table and argument checker both runners share;
  `executor` (`GraphExecutor`, level 1/2) and `interpreter` (`PlacedProgram`,
  level 4) on it; `sockets`: partitioned programs on every rank.
"""
