"""Type stubs for the Rust extension `cliques._core` (checked by mypy.stubtest)."""

__all__ = ["fnv1a_64"]

def fnv1a_64(data: bytes) -> int: ...
