"""rducc's runtime: the interpreter over lowered IR and the cost model."""
