"""The `rdu` dialect: its dataflow ops and the `Dataflow` dialect object
(`dataflow.py`; their canonicalization patterns in `canonicalization.py`),
collectives (`collectives.py`), `#rdu.aten` (`aten.py`), `#rdu.custom` (`custom_op.py`), `rdu.pointwise_call`
(`pointwise.py`) and `rdu.host_call` (`host_call.py`). The attributes passes
hand each other (`rdu.level`, `rdu.tile`, ...) are registered by this dialect
but live in `rducc.dialects.contracts` (splits: `rducc.dialects.split`).
"""

# The ops' canonicalization patterns attach to them on import (`RduCanonicalization`).
from rducc.dialects.rdu import canonicalization as _canonicalization  # noqa: E402, F401
