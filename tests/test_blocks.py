"""blocks.py: the blocks cover a parameter in order, and a sum in blocks is gradcheck's documented
order (docs/method.md, "Sums"): the halving tree, whose bits the test computes itself, and within
the pairwise bound of the exact sum (math.fsum) on every numpy."""

import math

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


def _halving_tree_sum(values: list, block: int) -> float:
    """The documented order, written out: a run of more than ``block`` values splits at half its length
    rounded down to a multiple of 8, left sum plus right sum; a block is summed exactly (math.fsum)."""
    if len(values) <= block:
        return math.fsum(values)
    half = len(values) // 2
    half -= half % 8
    return _halving_tree_sum(values[:half], block) + _halving_tree_sum(values[half:], block)


def _in_blocks(values: np.ndarray, block: int = BLOCK) -> float:
    """A sum as the passes take it: each block's np.add.reduce, the blocks' sums added by tree_sum."""
    parts = [float(np.add.reduce(values[start:stop])) for start, stop in block_bounds(values.size, block)]
    return tree_sum(parts, values.size, block)


def _pairwise_bound(values: np.ndarray) -> float:
    """(⌈log₂ N⌉ + 32)·2⁻⁵³·Σ|x_i|: docs/method.md's bound on a sum in blocks, whatever numpy adds a block in."""
    return (math.ceil(math.log2(max(values.size, 2))) + 32) * 2.0**-53 * math.fsum(np.abs(values).tolist())


def _values(count: int, seed: int, spread: int) -> np.ndarray:
    """Normal values scaled by 2^k, k uniform in [-spread, spread]: wide ranges and cancellation."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(count) * np.exp2(rng.integers(-spread, spread + 1, count))


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(1, 5000),
    block=st.sampled_from([16, 128, 256, 1000]),
    seed=st.integers(0, 2**32 - 1),
    spread=st.integers(0, 60),
)
def test_tree_sum_adds_the_blocks_up_the_documented_halving_tree_bit_for_bit(count, block, seed, spread):
    values = _values(count, seed, spread).tolist()
    parts = [math.fsum(values[start:stop]) for start, stop in block_bounds(count, block)]
    assert tree_sum(parts, count, block) == _halving_tree_sum(values, block)


def test_the_tree_is_not_the_blocks_added_left_to_right():
    """The halving tree is what tree_sum follows: adding the blocks left to right gives other bits."""
    values = np.random.default_rng(3).standard_normal(100_000) * 1e3
    parts = [math.fsum(values[start:stop].tolist()) for start, stop in block_bounds(values.size, 128)]
    assert tree_sum(parts, values.size, 128) == _halving_tree_sum(values.tolist(), 128)
    assert sum(parts) != tree_sum(parts, values.size, 128)


@settings(max_examples=40, deadline=None)
@given(
    count=st.sampled_from([1, 7, 8, 127, 129, 8191, 8193, 20_000, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 300_007]),
    seed=st.integers(0, 2**32 - 1),
    spread=st.integers(0, 60),
)
def test_a_sum_in_blocks_is_within_the_pairwise_bound_of_the_exact_sum(count, seed, spread):
    values = _values(count, seed, spread)
    assert abs(_in_blocks(values) - math.fsum(values.tolist())) <= _pairwise_bound(values)


def test_a_sum_left_to_right_would_break_the_bound():
    """1 and then 2²⁰ − 1 halves of its half-ulp: added left to right, each is lost; in blocks, they are
    summed among themselves first. The bound tells the two apart."""
    values = np.full(2**20, 2.0**-54)
    values[0] = 1.0
    exact = math.fsum(values.tolist())
    assert abs(_in_blocks(values) - exact) <= _pairwise_bound(values)
    assert abs(float(np.add.accumulate(values)[-1]) - exact) > 1000 * _pairwise_bound(values)  # each sum rounded


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


def test_kept_scratch_views_follow_their_memory_as_it_grows_and_each_pass_depth_has_its_own():
    from gradcheck_cli.engine.blocks import scratch, scratch_pass, scratches

    small = scratch("grown", 10)  # kept views: the same view again for the same size
    assert scratch("grown", 10) is small
    large = scratch("grown", 2 * BLOCK)  # the memory grows past its first size: the views follow
    assert len(large) == BLOCK and np.shares_memory(large, scratch("grown", 10))
    assert not np.shares_memory(large, small)
    assert np.shares_memory(scratch("grown", 7, np.dtype("float64")), large)  # the dtype however spelled
    assert scratches(("grown", "other"), 5)[0].base is not scratches(("grown",), 5)[0].base
    with scratch_pass():  # a check nested in a pass (a signal handler's): temporaries of its own
        inner = scratch("grown", 10)
        assert not np.shares_memory(inner, large)
        with scratch_pass():
            assert not np.shares_memory(scratch("grown", 10), inner)
        assert scratch("grown", 10) is inner
    assert np.shares_memory(scratch("grown", 10), large)


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
