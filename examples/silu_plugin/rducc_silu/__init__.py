"""An example rducc pass plugin package: the fuse-silu pass of docs/pass-authoring.md."""
