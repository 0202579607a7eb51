"""The contract every registered method keeps (run over the whole registry).

Any method added to ``microagg_cli.methods.METHODS`` is checked here automatically.
"""

from __future__ import annotations

import numpy as np
import pytest

from microagg_cli.errors import InfeasibleError, InvalidParameterError
from microagg_cli.methods import METHODS, get_method
from microagg_cli.partition import canonical_labels, group_sizes, zscore

# Keep slow defaults small in the contract run (same parameters for every call).
_FAST = {"iterations": 20}  # ils: the default (no time budget) keeps it reproducible


def _params(spec):
    return {p.name: _FAST[p.name] for p in spec.params if p.name in _FAST}


def _data(spec, n, seed=7):
    p = spec.max_columns or 3
    X = np.random.default_rng(seed).normal(size=(n, p)).round(1)
    return zscore(X)[0] if spec.standardize else X * 10 + 50


def _run(spec, X, k, seed=1):
    return spec.func(X, k, rng=np.random.default_rng(seed), **{**spec.validate_params({}), **_params(spec)})


def _check_groups(result, spec, n, k):
    result = np.asarray(result)
    if spec.output == "labels":
        assert result.shape == (n,)
        assert (canonical_labels(result) == result).all(), "labels must be canonical"
        assert group_sizes(result).min() >= k
    elif spec.output == "column_labels":
        assert result.shape[0] == n
        for j in range(result.shape[1]):
            assert (canonical_labels(result[:, j]) == result[:, j]).all()
            assert group_sizes(result[:, j]).min() >= k
    else:
        assert result.shape[0] == n and np.isfinite(result).all()


@pytest.mark.parametrize("name", list(METHODS))
def test_registry_entry_is_documented(name):
    spec = METHODS[name]
    assert spec.summary and spec.reference
    assert spec.func.__doc__ and "References" in spec.func.__doc__
    assert spec.validate_params({}) is not None
    for p in spec.params:
        assert p.help and p.name.isidentifier()


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("n, k", [(23, 3), (10, 2), (40, 5)])
def test_contract(name, n, k):
    spec = METHODS[name]
    X = _data(spec, n)
    before = X.copy()
    result = _run(spec, X, k)
    assert (X == before).all(), "input mutated"
    _check_groups(result, spec, n, k)
    again = _run(spec, X, k)
    assert np.array_equal(np.asarray(result), np.asarray(again)), "same seed must give the same result"


# Methods whose k counts values (mic1d) are checked in their own tests.
@pytest.mark.parametrize("name", [n for n, s in METHODS.items() if s.output != "values"])
def test_n_equals_k_and_n_below_k(name):
    spec = METHODS[name]
    X = _data(spec, 4)
    result = np.asarray(_run(spec, X, 4))
    assert (result == 0).all()
    with pytest.raises(InfeasibleError):
        _run(spec, X, 5)
    with pytest.raises(InvalidParameterError):
        _run(spec, X, 1)


def test_get_method_unknown():
    with pytest.raises(InvalidParameterError, match="unknown method"):
        get_method("nope")


def test_param_validation_messages():
    spec = get_method("mdav")
    with pytest.raises(InvalidParameterError, match="no parameter"):
        spec.validate_params({"gamma": 1})
