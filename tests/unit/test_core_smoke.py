"""The extension loads and its FNV-1a matches the published test vectors."""

from cliques import _core


def test_fnv1a_64_vectors() -> None:
    # Vectors from the FNV reference (http://www.isthe.com/chongo/tech/comp/fnv/).
    assert _core.fnv1a_64(b"") == 0xCBF29CE484222325
    assert _core.fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert _core.fnv1a_64(b"foobar") == 0x85944171F73967E8
