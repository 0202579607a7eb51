"""Disclosure-risk measures of a protected matrix against its original.

The intruder knows the original values of a set S of attributes (a *scenario*, a
tuple of column positions) and tries to link them to the protected file. Every
function takes the original ``X`` and the protected ``Xp`` as (n, p) float arrays in
original units, same records in the same order; neither is mutated. Conventions:

- distances use attributes z-scored with the **original's** means and population sds
  (a constant column gets scale 1);
- a *rank* of a value y in column v is its insertion position into the sorted
  original column, ``R(y) = #{original values < y}`` (numpy ``searchsorted(...,
  side="left")``): tied original values share the smallest rank, a protected value
  equal to an original value gets that value's rank;
- when t candidates tie for the best link and the true record is among them, the
  link counts 1/t (order-independent).

:class:`RiskEvaluator` precomputes what every scenario shares (z-scores, ranks, the
PLD pair table, interval hits) so that evaluating hundreds of scenarios costs little
more than one; the functions :func:`dld`, :func:`pld`, :func:`interval_disclosure` and
:func:`sdid` evaluate one scenario. The modules, from the bottom: ``common`` (checks,
ranks), ``anonymity`` (real anonymity k'), ``sampling`` (the estimators' sample and
bound), ``interval`` (interval disclosure), ``distance_linkage`` (the DLD search),
``probabilistic_linkage`` (Fellegi-Sunter PLD), ``evaluator`` (the evaluator and the
one-scenario functions), ``combined`` (DR and the score). The compiled kernels are in
:mod:`microagg_cli.metrics._risk_kernels`, the thread helpers in
:mod:`microagg_cli.threads`.
"""

from __future__ import annotations

from .anonymity import real_anonymity
from .combined import DEFAULT_DR_WEIGHTS, DEFAULT_SCORE_WEIGHTS, disclosure_risk, overall_score
from .distance_linkage import DLD_EXACT_MAX, DLD_SAMPLE
from .evaluator import RiskEvaluator, RiskOptions, dld, interval_disclosure, pld, sdid
from .interval import DEFAULT_ID_PERCENTS, id_window
from .probabilistic_linkage import PLD_EXACT_MAX, PLD_MAX_ATTRIBUTES, PLD_SAMPLE, fellegi_sunter_em, pld_window
from .sampling import PLD_CONFIDENCE, sample_bound

__all__ = [
    "DEFAULT_DR_WEIGHTS",
    "DEFAULT_SCORE_WEIGHTS",
    "DEFAULT_ID_PERCENTS",
    "PLD_MAX_ATTRIBUTES",
    "PLD_EXACT_MAX",
    "PLD_SAMPLE",
    "PLD_CONFIDENCE",
    "sample_bound",
    "DLD_EXACT_MAX",
    "DLD_SAMPLE",
    "RiskEvaluator",
    "RiskOptions",
    "dld",
    "pld",
    "interval_disclosure",
    "sdid",
    "real_anonymity",
    "fellegi_sunter_em",
    "disclosure_risk",
    "overall_score",
    "pld_window",
    "id_window",
]
