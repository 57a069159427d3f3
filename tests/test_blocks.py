"""blocks.py: the blocks are numpy's pairwise-summation subtrees, so that sums in blocks are np.sum's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck_cli.engine.blocks import BLOCK, FlatBlocks, block_bounds, tree_sum


@pytest.mark.parametrize("count", [1, 7, 128, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 1_000_003])
def test_the_blocks_cover_every_element_once_in_order_none_larger_than_a_block(count):
    bounds = block_bounds(count)
    assert bounds[0][0] == 0 and bounds[-1][1] == count
    assert all(stop == start for (_, stop), (start, _) in zip(bounds, bounds[1:]))
    assert all(0 < stop - start <= BLOCK for start, stop in bounds)


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(1, 5000),
    block=st.sampled_from([128, 256, 1000]),
    seed=st.integers(0, 2**32 - 1),
    spread=st.integers(0, 60),
)
def test_a_sum_in_blocks_is_numpys_sum_of_the_whole_array_bit_for_bit(count, block, seed, spread):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(count) * np.exp2(rng.integers(-spread, spread + 1, count))
    parts = [np.sum(values[start:stop]) for start, stop in block_bounds(count, block)]
    assert np.float64(tree_sum(parts, count, block)).tobytes() == np.sum(values).tobytes()


def test_a_plain_sum_of_the_blocks_would_differ():
    """The tree is what makes the sums equal: adding the blocks left to right does not."""
    values = np.random.default_rng(3).standard_normal(100_000) * 1e3
    parts = [np.sum(values[start:stop]) for start, stop in block_bounds(values.size, 128)]
    assert tree_sum(parts, values.size, 128) == np.sum(values)
    assert sum(parts) != np.sum(values)


class _Subclass(np.ndarray):
    """A subclass whose indexing is not ndarray's: the blocks read the plain array."""

    def __getitem__(self, index):
        return np.zeros(3)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a,
        lambda a: a.T,
        lambda a: a[:, ::-3],
        lambda a: np.asfortranarray(a),
        lambda a: a.view(_Subclass),
        lambda a: a.astype(">f8"),
        lambda a: a[2, 3, 1, ...],
    ],
)
def test_blocks_read_and_write_any_layout_in_row_major_order(make):
    array = make(np.arange(7 * 11 * 3, dtype=np.float64).reshape(7, 11, 3))
    flat = np.ndarray.copy(array).reshape(-1)
    blocks = FlatBlocks(array)
    bounds = block_bounds(flat.size, 128) if flat.size > 128 else [(0, flat.size), (flat.size, flat.size)]
    assert np.concatenate([blocks.read(start, stop) for start, stop in bounds]).tolist() == flat.tolist()
    for start, stop in bounds:
        blocks.write(start, stop, -blocks.read(start, stop))
    assert np.ndarray.copy(array).reshape(-1).tolist() == (-flat).tolist()


def test_writing_into_an_array_made_read_only_is_refused():
    array = np.zeros(10)
    blocks = FlatBlocks(array)
    array.flags.writeable = False
    with pytest.raises(ValueError):
        FlatBlocks(array).write(0, 10, np.ones(10))
    assert blocks.read(0, 10).tolist() == [0.0] * 10


def test_a_scratch_block_is_the_same_memory_in_one_thread_and_another_in_each_other():
    import threading

    from gradcheck_cli.engine.blocks import scratch

    first = scratch("test", 3 * BLOCK)
    assert len(first) == BLOCK and np.shares_memory(first, scratch("test", 10))
    assert len(scratch("test", 10)) == 10
    assert not np.shares_memory(first, scratch("test", BLOCK, np.float32))
    assert not np.shares_memory(first, scratch("other", BLOCK))
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(scratch("test", BLOCK)))
    thread.start()
    thread.join()
    assert not np.shares_memory(first, elsewhere[0])


def test_a_scale_told_no_entry_exceeds_its_cap_weighs_as_one_that_caps():
    from gradcheck_cli.check.directional_probes import DirectionScale

    rng = np.random.default_rng(3)
    gradient = rng.standard_normal(5000).astype(np.float32)
    shifts = rng.uniform(0.5, 2.0, 5000) * rng.choice([-1.0, 1.0], 5000)
    offsets, resolved = np.array([7, 4000]), np.array([0.25, 3.0])
    for cap in (float(np.max(np.abs(gradient))), 1.0):
        peak = float(np.max(np.abs(gradient)))
        told = DirectionScale(offsets, resolved, cap, peak).weighted(FlatBlocks(gradient), 0, shifts, np.empty(5000))
        capping = DirectionScale(offsets, resolved, cap).weighted(FlatBlocks(gradient), 0, shifts, np.empty(5000))
        assert told.tobytes() == capping.tobytes()
        assert DirectionScale(offsets, resolved, cap, peak).capped is (peak > cap)
