"""Dynamic-shape buckets (`rducc --shapes`, `rducc.compile(..., shapes=...)`): see `rducc.shapes.buckets`."""

from rducc.shapes.buckets import (
    Bucket,
    BucketsResult,
    ShapesSpec,
    bucket_modules,
    bucket_name,
    bundle,
    compile_buckets,
    input_shapes,
    is_bucketed,
    pick_bucket,
    shared_weights,
)

__all__ = [
    "Bucket",
    "BucketsResult",
    "ShapesSpec",
    "bucket_modules",
    "bucket_name",
    "bundle",
    "compile_buckets",
    "input_shapes",
    "is_bucketed",
    "pick_bucket",
    "shared_weights",
]
