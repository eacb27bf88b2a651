"""The packed .npz layout (child.pack_arrays / unpack_arrays) that carries the child's inputs
and outputs and the reference cache: a round trip keeps every array exactly, and an index a
hostile child forged is refused, never followed outside its buffers."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.grading import untrusted
from autograder.sandbox.confined.wire import pack_arrays, unpack_arrays

DTYPES = st.sampled_from(["<f4", "<f8", ">f8", "<i8", "|u1", "|b1", "<i2"])
ARRAYS = st.dictionaries(
    st.text("abc_0123", min_size=1, max_size=6),
    DTYPES.flatmap(
        lambda dtype: hnp.arrays(
            dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
        )
    ),
    max_size=8,
)


@given(ARRAYS)
def test_packing_keeps_every_array_exactly(arrays):
    back = unpack_arrays(pack_arrays(arrays))
    assert back.keys() == arrays.keys()
    for key, array in arrays.items():
        assert back[key].dtype == array.dtype and back[key].shape == array.shape
        assert np.array_equal(back[key], array, equal_nan=array.dtype.kind == "f")


def forged(index, packs=None, buffer=None) -> dict:
    table = {"index": index, "packs": packs if packs is not None else {"<f8": "pack0"}}
    return {
        "pack0": np.arange(4.0) if buffer is None else buffer,
        "index": np.frombuffer(json.dumps(table).encode(), dtype=np.uint8),
    }


@pytest.mark.parametrize(
    "index",
    [
        {"a": ["<f8", [10**12], 0]},  # more elements than the buffer holds
        {"a": ["<f8", [2], 3]},  # runs past its end
        {"a": ["<f8", [-1], 0]},
        {"a": ["<f8", [2.0], 0]},
        {"a": ["<f8", [2], -1]},
        {"a": ["<i8", [2], 0]},  # a dtype without a buffer
        {"a": ["<f8", [2]]},
        {"a": "pack0"},
    ],
)
def test_a_forged_index_is_refused(index):
    with pytest.raises(ValueError):
        unpack_arrays(forged(index))


def test_an_index_that_is_not_an_index_is_refused():
    with pytest.raises(ValueError):
        unpack_arrays({"pack0": np.arange(3.0)})
    with pytest.raises(ValueError):
        unpack_arrays({"index": np.frombuffer(b"[" * 100000, dtype=np.uint8)})
    with pytest.raises(ValueError):
        unpack_arrays(forged({"a": ["<f8", [2], 0]}, buffer=np.arange(4, dtype=np.int8)))


def test_the_grader_reads_a_forged_output_file_as_untrusted(tmp_path):
    path = tmp_path / "out_x.npz"
    buffer = io.BytesIO()
    np.savez(buffer, **forged({"c0_0": ["<f8", [10**9], 0]}))
    path.write_bytes(buffer.getvalue())
    with pytest.raises(untrusted.Untrusted, match="outside its buffer"):
        untrusted.read_packed_npz(path)
    with zipfile.ZipFile(path, "w") as archive:  # an unpacked npz, as older children wrote
        archive.writestr("c0_0.npy", b"")
    with pytest.raises(untrusted.Untrusted):
        untrusted.read_packed_npz(path)
