"""mic1d: one-dimension microaggregation (methods/one_dimension.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import get_method
from microagg_cli.methods.one_dimension import mic1d


def test_hand_worked_4x3_every_step():
    # X (4 records x 3 attributes), k = 5 values per partition, default scale=minmax.
    #      A   B  C
    # r0   0  10  3
    # r1   2  50  1
    # r2   6  20  9
    # r3   8  30  5
    # Step 0, per-column min-max (A: 0..8, B: 10..50, C: 1..9):
    #   r0 (0, 0, 1/4)  r1 (1/4, 1, 0)  r2 (3/4, 1/4, 1)  r3 (1, 1/2, 1/2)
    # Step 1, row-major V (positions 0..11):
    #   V  = [0, 0, 1/4, 1/4, 1, 0, 3/4, 1/4, 1, 1, 1/2, 1/2]
    # Step 2, stable sort (ties by position):
    #   o1 = [0, 1, 5, 2, 3, 7, 10, 11, 6, 4, 8, 9]
    #   w1 = [0, 0, 0, 1/4, 1/4 | 1/4, 1/2, 1/2, 3/4, 1 | 1, 1]   (runs 5, 5, 2)
    # Step 3, normalize each run by its min and max (run 3 is flat -> 0.5):
    #   u1 = [0, 0, 0, 1, 1 | 0, 1/3, 1/3, 2/3, 1 | 1/2, 1/2]
    # Step 4, stable re-sort of u1 and the same cut:
    #   o2 = [0, 1, 2, 5, 6, 7, 10, 11, 8, 3, 4, 9]
    #   w2 = [0, 0, 0, 0, 1/3 | 1/3, 1/2, 1/2, 2/3, 1 | 1, 1]
    #   u2 = [0, 0, 0, 0, 1 | 0, 1/4, 1/4, 1/2, 1 | 1/2, 1/2]   (run 1: (w-1/3)/(2/3))
    # Step 5, run means: 1/5, 2/5, 1/2.
    # Step 6a, undo step-4 normalization: run 0: 0 + 1/5*(1/3) = 1/15;
    #   run 1: 1/3 + 2/5*(2/3) = 3/5; run 2 (flat): 1.
    #   d2 = [1/15]*5 + [3/5]*5 + [1, 1]
    # Step 6b, undo the step-4 sort (back2[o2] = d2):
    #   back2 = [1/15, 1/15, 1/15, 3/5, 1, 1/15, 1/15, 3/5, 3/5, 1, 3/5, 3/5]
    # Step 6c, undo step-3 normalization with the step-2 runs (run 0: 0..1/4,
    #   run 1: 1/4..1, run 2: flat at 1):
    #   d1 = [1/60, 1/60, 1/60, 3/20, 1/4, 3/10, 3/10, 7/10, 7/10, 1, 1, 1]
    # Step 6d, undo the step-2 sort and reshape (scaled units):
    #   r0 (1/60, 1/60, 3/20)  r1 (1/4, 1, 1/60)  r2 (7/10, 3/10, 1)  r3 (1, 3/10, 7/10)
    # Undo step 0 (lo + v * width per column):
    #   r0 (2/15, 32/3, 11/5)  r1 (2, 50, 17/15)  r2 (28/5, 22, 9)  r3 (8, 22, 33/5)
    X = np.array([[0, 10, 3], [2, 50, 1], [6, 20, 9], [8, 30, 5]], dtype=float)
    want = np.array([
        [2 / 15, 32 / 3, 11 / 5],
        [2.0, 50.0, 17 / 15],
        [28 / 5, 22.0, 9.0],
        [8.0, 22.0, 33 / 5],
    ])
    before = X.copy()
    out = mic1d(X, 5)
    assert np.allclose(out, want, rtol=1e-12, atol=1e-12)
    assert np.array_equal(X, before)
    # every value within its column's original range
    assert (out >= X.min(axis=0)).all() and (out <= X.max(axis=0)).all()


def test_attributes_are_mixed():
    # Same X as above with only column C changed (3 and 9 swapped between r0 and r2):
    # column A's protected values change too, because A's values share step-2 and
    # step-4 partitions with values of B and C. Worked through the same six steps:
    # r1's A value (2 in both files) comes back as 2 from X but as 6/5 from Y, and
    # r2's B value (20 in both) as 22 from X but as 20 from Y.
    X = np.array([[0, 10, 3], [2, 50, 1], [6, 20, 9], [8, 30, 5]], dtype=float)
    Y = X.copy()
    Y[:, 2] = [9, 1, 3, 5]
    b = mic1d(Y, 5)
    want = np.array([
        [2 / 15, 32 / 3, 9.0],
        [6 / 5, 50.0, 17 / 15],
        [28 / 5, 20.0, 17 / 5],
        [8.0, 22.0, 33 / 5],
    ])
    assert np.allclose(b, want, rtol=1e-12, atol=1e-12)
    assert mic1d(X, 5)[1, 0] == pytest.approx(2.0)  # column A identical in X and Y


def test_scale_none_literal_procedure_and_what_holds():
    # Raw values, k = 3:  r0 (4, 5), r1 (7, 9), r2 (0, 1)
    #   V  = [4, 5, 7, 9, 0, 1]
    #   o1 = [4, 5, 0, 1, 2, 3];   w1 = [0, 1, 4 | 5, 7, 9]
    #   u1 = [0, 1/4, 1 | 0, 1/2, 1]
    #   o2 = [0, 3, 1, 4, 2, 5];   w2 = [0, 0, 1/4 | 1/2, 1, 1]
    #   u2 = [0, 0, 1 | 0, 1, 1];  means 1/3, 2/3
    #   d2 = [1/12]*3 + [5/6]*3   (0 + 1/3*1/4; 1/2 + 2/3*1/2)
    #   back2 = [1/12, 1/12, 5/6, 1/12, 5/6, 5/6]
    #   d1 = [1/3, 1/3, 10/3, 16/3, 25/3, 25/3]   (run 0: 0..4, run 1: 5..9)
    #   out: r0 (10/3, 16/3), r1 (25/3, 25/3), r2 (1/3, 1/3)
    X = np.array([[4.0, 5.0], [7.0, 9.0], [0.0, 1.0]])
    out = mic1d(X, 3, scale="none")
    want = np.array([[10 / 3, 16 / 3], [25 / 3, 25 / 3], [1 / 3, 1 / 3]])
    assert np.allclose(out, want, rtol=1e-12)
    # The value 7 of column 0 (range 0..7) comes back as 25/3 > 7: without the
    # per-column rescaling the column range is NOT kept ...
    assert out[1, 0] > X[:, 0].max()
    # ... only the range of its step-2 run (5..9) and the block's range are.
    assert 5.0 <= out[1, 0] <= 9.0
    assert out.min() >= X.min() and out.max() <= X.max()
    # The default (minmax) keeps every column's range on the same data.
    d = mic1d(X, 3)
    assert (d >= X.min(axis=0)).all() and (d <= X.max(axis=0)).all()


matrices = st.integers(1, 5).flatmap(
    lambda p: st.lists(
        st.lists(
            st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, 1.0, 5.0])),
            min_size=p, max_size=p,
        ),
        min_size=2, max_size=15,
    )
)


@settings(max_examples=80, deadline=None)
@given(rows=matrices, k=st.integers(2, 9), scales=st.lists(st.sampled_from([1e-3, 1.0, 1e4]), min_size=5, max_size=5))
def test_values_stay_within_column_range(rows, k, scales):
    X = np.array(rows) * np.array(scales[: len(rows[0])])  # mixed magnitudes
    if X.size < k:
        k = X.size
    before = X.copy()
    out = mic1d(X, k)
    assert out.shape == X.shape
    assert np.array_equal(X, before)
    assert np.isfinite(out).all()
    assert (out >= X.min(axis=0)).all() and (out <= X.max(axis=0)).all()
    # raw mode: within the block's range
    raw = mic1d(X, k, scale="none")
    assert (raw >= X.min()).all() and (raw <= X.max()).all()
    # deterministic
    assert np.array_equal(out, mic1d(X, k, rng=np.random.default_rng(1)))


def test_constant_columns_and_flat_partitions_unchanged():
    X = np.array([[3.0, 7.0], [3.0, 1.0], [3.0, 4.0], [3.0, 2.0]])
    out = mic1d(X, 2)
    assert np.array_equal(out[:, 0], X[:, 0])
    assert np.array_equal(mic1d(np.full((5, 3), 2.5), 4), np.full((5, 3), 2.5))


def test_single_value_remainder_is_left_unchanged():
    # N = 7 values, k = 3: runs 3, 3, 1; the largest value sits alone in the last run
    # (min == max) and comes back unchanged -- the documented weakness.
    X = np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [70.0]])
    out = mic1d(X, 3, scale="none")
    assert out[6, 0] == 70.0
    assert not np.allclose(out[:6, 0], X[:6, 0])


def test_k_counts_values_not_records():
    X = np.arange(6, dtype=float).reshape(2, 3)  # 2 records, 6 values
    assert mic1d(X, 4).shape == (2, 3)  # fewer records than k is fine
    with pytest.raises(InfeasibleError, match="values"):
        mic1d(X, 7)
    with pytest.raises(InvalidParameterError):
        mic1d(X, 1)
    with pytest.raises(InvalidParameterError):
        mic1d(X, 2, scale="zscore")


def test_spec():
    spec = get_method("mic1d")
    assert spec.output == "values"
    assert spec.standardize is False
    assert spec.validate_params({}) == {"scale": "minmax"}
    with pytest.raises(InvalidParameterError):
        spec.validate_params({"scale": "z"})
