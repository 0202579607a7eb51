"""Attribute-blocking plans: which columns are microaggregated together.

A :class:`BlockPlan` is a tuple of disjoint :class:`Block`\\ s; each block is protected
on its own with its own method, k and parameters, seeded from the run seed by its
position in the plan (``SeedSequence(seed, spawn_key=(position,))``). Splitting the
attributes into blocks lowers the information loss but gives up k-anonymity across
blocks: an intruder who knows attributes of two blocks may single records out. This
package reads and writes plan files, proposes plans (:func:`make_plan`) and measures
what a plan costs and risks (:func:`evaluate_plan`).

The modules, from the bottom: ``locator`` (where a plan was read from and the line of a
key in its text, for error messages), ``model`` (:class:`Block`, :class:`BlockPlan`, the
plan's roles), ``reader`` (plan files read and validated; their layout is described
there), ``writer`` (plans written as TOML or JSON) and ``strategies`` (plans proposed
from the data, and what ``sdc blocks`` writes around them). This package re-exports
their public names.
"""

from __future__ import annotations

from .locator import PlanSource as PlanSource  # importable here as before, not in __all__
from .model import PLAN_ROLES, PLAN_VERSION, ROLE_KEYS, Block, BlockPlan
from .reader import load_plan, parse_plan
from .strategies import (
    BLOCKS_SCHEMA_VERSION,
    DEFAULT_BLOCK_SIZE,
    STRATEGIES,
    abs_correlation,
    block_mean_abs_corr,
    block_notes,
    make_plan,
    plan_comment,
    plan_mean_abs_corr,
    propose_blocks,
)
from .writer import plan_to_dict, plan_to_json, plan_to_toml

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "Block",
    "BlockPlan",
    "PLAN_VERSION",
    "PLAN_ROLES",
    "ROLE_KEYS",
    "STRATEGIES",
    "load_plan",
    "parse_plan",
    "plan_to_toml",
    "plan_to_dict",
    "plan_to_json",
    # the strategies
    "abs_correlation", "propose_blocks", "make_plan", "block_mean_abs_corr", "plan_mean_abs_corr",
    "plan_comment", "block_notes", "BLOCKS_SCHEMA_VERSION",
]
