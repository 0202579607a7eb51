"""``sdc evaluate`` proves the record pairing before any figure (``microagg_cli/pairing.py``).

A shuffled release, an unrelated file with the same header, renamed columns and a key
that is not an identifier must never give figures; with the key or the pairing file
written by ``sdc protect --shuffle-rows --pairing-file`` the true figures come back.
"""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import only_error_line, run_cli
from microagg_cli import api
from microagg_cli.errors import DataError
from microagg_cli.frames import evaluate_frame
from microagg_cli.pairing import PAIRING_HEADER, _text_quantum, check_pairing
from microagg_cli.partition import aggregate


def summary_of(res) -> dict:
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def census_runs(census_path, tmp_path_factory):
    """census.csv protected at k = 3: in order, shuffled, shuffled with a pairing file, and
    (with an identifier column added) shuffled keeping the identifier."""
    tmp = tmp_path_factory.mktemp("census")
    plain, shuffled, paired = tmp / "plain.csv", tmp / "shuffled.csv", tmp / "paired.csv"
    pairing = tmp / "pairing.csv"
    for out, extra in ((plain, []), (shuffled, ["-r", tmp / "shuffled.json"]),
                       (paired, ["--pairing-file", pairing, "-r", tmp / "paired.json"])):
        res = run_cli("protect", census_path, "-o", out, "-k", 3, *extra, *([] if out == plain else ["--shuffle-rows"]))
        assert res.exit_code == 0, res.output
    with_id = tmp / "census_id.csv"
    frame = pd.read_csv(census_path)
    frame.insert(0, "rid", [f"p{i:04d}" for i in range(len(frame))])
    frame.to_csv(with_id, index=False)
    keyed = tmp / "keyed.csv"
    res = run_cli("protect", with_id, "-o", keyed, "-k", 3, "--shuffle-rows", "--id-column", "rid",
                  "-r", tmp / "keyed.json")
    assert res.exit_code == 0, res.output
    ordered = summary_of(run_cli("evaluate", census_path, plain, "--format", "json", "-q"))
    return {"tmp": tmp, "plain": plain, "shuffled": shuffled, "paired": paired, "pairing": pairing,
            "with_id": with_id, "keyed": keyed, "ordered": ordered, "protect_stderr": res.stderr}


# --------------------------------------------------------------------------- acceptance


def test_shuffled_release_paired_by_position_is_refused(census_path, census_runs):
    res = run_cli("evaluate", census_path, census_runs["shuffled"])
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "not paired right" in line and "--key COL" in line and "--pairing-file" in line
    assert "in column 'AFNLWGT'" in line and "shared by 3 records" in line
    # the gates that passed on the wrong figures (DLD 0.07 %, k' 3) no longer pass
    gated = run_cli("evaluate", census_path, census_runs["shuffled"], "--max-dld", 20, "--min-kprime", 3, "-q")
    assert gated.exit_code == 3
    assert "not paired right" in only_error_line(gated)


def test_the_error_holds_no_original_value(census_path, census_runs):
    line = only_error_line(run_cli("evaluate", census_path, census_runs["shuffled"]))
    census = pd.read_csv(census_path)
    numbers = {tok.strip("(),.;'") for tok in line.split()}
    originals = {str(v) for v in census.to_numpy().ravel() if v >= 100}
    assert not numbers & originals


def test_the_pairing_file_gives_the_true_figures(census_path, census_runs):
    path = census_runs["pairing"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert lines[0] == PAIRING_HEADER and len(lines) == 1081
    rows = np.array([int(v) for v in lines[1:]])
    assert sorted(rows) == list(range(1, 1081)) and (rows != np.arange(1, 1081)).any()
    # the released row i is the original row rows[i]: the released file is the plain one, reordered
    plain = pd.read_csv(census_runs["plain"])
    paired = pd.read_csv(census_runs["paired"])
    pd.testing.assert_frame_equal(paired, plain.iloc[rows - 1].reset_index(drop=True))
    rep = summary_of(run_cli("evaluate", census_path, census_runs["paired"], "--pairing-file", path,
                             "--format", "json", "-q"))
    want = census_runs["ordered"]
    assert rep["measures"] == want["measures"]
    assert rep["summary"]["dld"] == want["summary"]["dld"] and 16 < rep["summary"]["dld"] < 18
    assert rep["summary"]["il_sse"] == pytest.approx(5.6922, abs=1e-4)
    assert rep["matching"]["by"] == "pairing file" and rep["matching"]["check"]["passed"] is True
    # the gates judge the true figures: a DLD of 17 % passes --max-dld 20, not --max-dld 10
    assert run_cli("evaluate", census_path, census_runs["paired"], "--pairing-file", path,
                   "--max-dld", 20, "--min-kprime", 3, "--gate-on", "mean", "-q").exit_code == 0
    assert run_cli("evaluate", census_path, census_runs["paired"], "--pairing-file", path,
                   "--max-dld", 10, "-q").exit_code == 5
    report = json.loads((census_runs["tmp"] / "paired.json").read_text())
    assert report["output_hygiene"]["pairing_file"] == "pairing.csv"
    assert report["output_hygiene"]["evaluate_with"] == "sdc evaluate INPUT OUTPUT --pairing-file pairing.csv"
    # nothing in the released file reveals the original order
    assert list(paired.columns) == list(plain.columns)


def test_a_kept_identifier_is_the_key(census_runs):
    report = json.loads((census_runs["tmp"] / "keyed.json").read_text())
    assert report["output_hygiene"]["evaluate_with"] == "sdc evaluate INPUT OUTPUT --key rid"
    assert "evaluate with: sdc evaluate INPUT OUTPUT --key rid" in census_runs["protect_stderr"]
    rep = summary_of(run_cli("evaluate", census_runs["with_id"], census_runs["keyed"], "--key", "rid",
                             "--format", "json", "-q"))
    assert rep["measures"] == census_runs["ordered"]["measures"]
    assert rep["matching"]["key"] == "rid" and rep["matching"]["check"]["passed"] is True
    res = run_cli("evaluate", census_runs["with_id"], census_runs["keyed"], "-q")
    assert res.exit_code == 3


def test_shuffled_without_key_says_evaluate_needs_one(census_runs):
    report = json.loads((census_runs["tmp"] / "shuffled.json").read_text())
    hygiene = report["output_hygiene"]
    assert hygiene["rows_shuffled"] is True and hygiene["evaluate_with"] is None
    assert "--key" in hygiene["pairing_note"] and "--pairing-file" in hygiene["pairing_note"]


def test_shuffled_summary_names_the_way_to_evaluate(census_path, tmp_path):
    res = run_cli("protect", census_path, "-o", tmp_path / "s.csv", "-k", 3, "--shuffle-rows")
    assert res.exit_code == 0
    assert "rows shuffled: the rows are shuffled and nothing in the release pairs them" in res.stderr
    assert "--key COL" in res.stderr


def test_regenerated_ids_are_no_key(census_path, tmp_path):
    out, source = tmp_path / "regen.csv", tmp_path / "numbered.csv"
    frame = pd.read_csv(census_path)
    frame.insert(0, "rid", np.arange(1, len(frame) + 1))  # the fresh ids are 1..n too: every key matches
    frame.to_csv(source, index=False)
    res = run_cli("protect", source, "-o", out, "-k", 3, "--shuffle-rows", "--id-column", "rid",
                  "--regenerate-ids", "-r", tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r.json").read_text())["output_hygiene"]["evaluate_with"] is None
    res = run_cli("evaluate", source, out, "--key", "rid", "-q")
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "paired by --key" in line and "--regenerate-ids" in line


def test_unrelated_file_with_the_same_header_is_refused(census_path, tmp_path):
    census = pd.read_csv(census_path)
    rng = np.random.default_rng(7)
    fake = pd.DataFrame({c: np.round(rng.normal(census[c].mean(), census[c].std(), len(census)))
                         for c in census.columns})
    path = tmp_path / "fake.csv"
    fake.to_csv(path, index=False)
    res = run_cli("evaluate", census_path, path)
    assert res.exit_code == 3
    assert "not paired right" in only_error_line(res)


def test_renamed_columns_are_named_with_their_own_reason(census_path, census_runs, tmp_path):
    renamed = pd.read_csv(census_runs["plain"]).rename(columns={"AGI": "AGI_2", "FICA": "fica"})
    path = tmp_path / "renamed.csv"
    renamed.to_csv(path, index=False)
    res = run_cli("evaluate", census_path, path, "--format", "json", "--report", tmp_path / "r.json",
                  "--max-scenarios", 4)
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    cols = rep["columns"]
    assert cols["only_in_original"] == ["AGI", "FICA"] and cols["only_in_protected"] == ["AGI_2", "fica"]
    assert cols["not_numeric_in_protected"] == []
    assert "AGI" not in cols["evaluated"] and len(cols["evaluated"]) == 11
    assert "columns not in both files are not evaluated (only in the original: 'AGI', 'FICA'; only in the " \
           "protected file: 'AGI_2', 'fica')" in res.stderr


def test_no_common_protected_column_is_exit_3(tmp_path):
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    pd.DataFrame({"a": [1.0, 2, 3, 4], "t": list("wxyz")}).to_csv(o, index=False)
    pd.DataFrame({"b": [1.5, 1.5, 3.5, 3.5], "t": list("wxyz")}).to_csv(p, index=False)
    res = run_cli("evaluate", o, p, "-q")
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "only in the original: 'a'; only in the protected file: 'b'" in line


# --------------------------------------------------------------------------- keys and pairing files


def test_key_of_two_columns(tmp_path):
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    pd.DataFrame({"hh": [1, 1, 2, 2], "person": [1, 2, 1, 2], "x": [1.0, 2, 10, 12]}).to_csv(o, index=False)
    pd.DataFrame({"hh": [2, 1, 2, 1], "person": [2, 2, 1, 1], "x": [11.0, 1.5, 11, 1.5]}).to_csv(p, index=False)
    rep = api.evaluate(o, p, key=["hh", "person"], columns=["x"], k=2)
    assert rep["matching"]["key"] == ["hh", "person"] and rep["matching"]["check"]["columns"] == {"x": "mean"}
    assert rep["summary"]["il_sse"] == pytest.approx(100 * (0.25 * 2 + 1 * 2) / (np.var([1, 2, 10, 12]) * 4))
    res = run_cli("evaluate", o, p, "--key", "hh,person", "--columns", "x", "-k", 2, "-q")
    assert res.exit_code == 0, res.output
    res = run_cli("evaluate", o, p, "--key", "hh", "--columns", "x", "-q")
    assert res.exit_code == 3 and "occurs 2 times" in only_error_line(res)
    with pytest.raises(DataError, match=r"key \('1', '1'\) occurs 2 times"):
        bad = tmp_path / "bad.csv"
        pd.DataFrame({"hh": [1, 1, 2, 2], "person": [1, 1, 1, 2], "x": [1.0, 2, 10, 12]}).to_csv(bad, index=False)
        api.evaluate(bad, p, key=["hh", "person"], columns=["x"])


def test_pairing_file_errors(census_path, census_runs, tmp_path):
    shuffled = census_runs["paired"]
    bad = tmp_path / "bad.csv"
    cases = [
        ("row\n1\n", "not a pairing file"),
        (PAIRING_HEADER + "\n1\n2\n", "2 row(s), but the protected file has 1080"),
        (PAIRING_HEADER + "\n" + "1\n" * 1080, "original row 1 is named 1080 times"),
        (PAIRING_HEADER + "\n" + "".join(f"{i}\n" for i in range(2, 1082)), "line 1081 names row 1081"),
        (PAIRING_HEADER + "\nx\n" + "".join(f"{i}\n" for i in range(2, 1081)), "line 2 is not a row number"),
    ]
    for text, fragment in cases:
        bad.write_text(text)
        res = run_cli("evaluate", census_path, shuffled, "--pairing-file", bad, "-q")
        assert res.exit_code == 3, text[:20]
        assert fragment in only_error_line(res)
    # a pairing file that belongs to another release: the proof refuses it
    bad.write_text(PAIRING_HEADER + "\n" + "".join(f"{i}\n" for i in range(1, 1081)))
    res = run_cli("evaluate", census_path, shuffled, "--pairing-file", bad, "-q")
    assert res.exit_code == 3 and "paired by --pairing-file" in only_error_line(res)
    res = run_cli("evaluate", census_path, shuffled, "--pairing-file", census_runs["pairing"], "--key", "AGI", "-q")
    assert res.exit_code == 2


def test_protect_pairing_file_options(census_path, tmp_path):
    out, pairing = tmp_path / "o.csv", tmp_path / "pairing.csv"
    res = run_cli("protect", census_path, "-o", out, "-k", 3, "--pairing-file", pairing, "-q")
    assert res.exit_code == 2 and "--shuffle-rows" in only_error_line(res)
    pairing.write_text("keep me\n")
    res = run_cli("protect", census_path, "-o", out, "-k", 3, "--shuffle-rows", "--pairing-file", pairing, "-q")
    assert res.exit_code != 0 and pairing.read_text() == "keep me\n" and not out.exists()
    res = run_cli("protect", census_path, "-o", out, "-k", 3, "--shuffle-rows", "--pairing-file", pairing, "-q",
                  "--force")
    assert res.exit_code == 0 and pairing.read_text().startswith(PAIRING_HEADER)
    res = run_cli("protect", census_path, "-o", out, "-k", 3, "--shuffle-rows", "--pairing-file", out, "-q",
                  "--force")
    assert res.exit_code == 2 and "same file" in only_error_line(res)


def test_no_pairing_check_is_explicit_and_reported(census_path, census_runs, tmp_path):
    # four scenarios: the figures are not the point here, only that they are given unproven
    res = run_cli("evaluate", census_path, census_runs["shuffled"], "--no-pairing-check", "--format", "json",
                  "--max-scenarios", 4)
    rep = summary_of(res)
    assert rep["matching"]["check"] == {"passed": None,
                                        "skipped": "--no-pairing-check: the pairing was not proven"}
    assert rep["parameters"]["pairing_check"] is False
    assert "the pairing was NOT proven (--no-pairing-check)" in res.stderr
    page = tmp_path / "r.html"
    assert run_cli("evaluate", census_path, census_runs["shuffled"], "--no-pairing-check", "--html", page,
                   "-q", "--max-scenarios", 4).exit_code == 0
    assert "NOT proven" in page.read_text()


def test_frames_get_the_same_proof():
    orig = pd.DataFrame({"x": [1.0, 2.0, 10.0, 12.0], "y": [5.0, 6.0, 7.0, 9.0]})
    prot = pd.DataFrame({"x": [1.5, 1.5, 11.0, 11.0], "y": [5.5, 5.5, 8.0, 8.0]})
    assert evaluate_frame(orig, prot, k=2)["matching"]["check"]["passed"] is True
    with pytest.raises(DataError, match="not paired right: in column 'x'"):
        evaluate_frame(orig, prot.iloc[[2, 0, 1, 3]].reset_index(drop=True), k=2)


# --------------------------------------------------------------------------- the rule


def _release(X, labels, stat="mean", weights=None):
    return aggregate(X, labels, stat=stat, weights=weights)


@pytest.mark.parametrize("stat", ["mean", "median", "trimmed:0.2", "onestep"])
def test_every_group_statistic_passes_and_is_labelled(stat, rng):
    X = rng.lognormal(3, 1, size=(200, 3))
    labels = np.repeat(np.arange(40), 5)[rng.permutation(200)]
    Xp = _release(X, labels, stat)
    out = check_pairing(X, Xp, ["a", "b", "c"], {"by": "order"})
    assert out["check"]["passed"] is True
    assert set(out["check"]["columns"].values()) == ({"mean"} if stat == "mean" else {"range"})
    with pytest.raises(DataError, match="not paired right: in column 'a' the released value shared by 5 records"):
        check_pairing(X, Xp[rng.permutation(200)], ["a", "b", "c"], {"by": "order"})


def test_weighted_means_individual_ranking_strata_and_blanks_pass(rng):
    X = rng.normal(100, 20, size=(120, 2))
    w = rng.uniform(1, 5, size=120)
    labels = np.arange(120) // 3
    Xp = _release(X, labels, weights=w)
    # individual ranking: every column its own partition
    Xp[:, 1] = _release(X[:, [1]], np.argsort(np.argsort(X[:, 1])) // 4)[:, 0]
    # a suppressed stratum (blanked), a missing original cell left missing
    Xp[:6, 0] = np.nan
    X[10, 0] = np.nan
    Xp[9:12, 0] = _release(X[9:12, [0]], np.zeros(3, dtype=int))[:, 0]
    Xp[10, 0] = np.nan
    out = check_pairing(X, Xp, ["w", "ir"], {"by": "order"})
    assert out["check"]["columns"] == {"w": "range", "ir": "mean"}


def test_a_cell_blanked_after_grouping_is_allowed_once(rng):
    X = np.array([[1.0], [2.0], [10.0], [11.0]])
    Xp = np.array([[1.5], [1.5], [10.5], [np.nan]])  # 11 suppressed after the pair (10, 11) was averaged
    assert check_pairing(X, Xp, ["x"], {"by": "order"})["check"]["passed"] is True
    Xp = np.array([[10.5], [1.5], [1.5], [np.nan]])  # ... but not a shuffle
    with pytest.raises(DataError):
        check_pairing(X, Xp, ["x"], {"by": "order"})


@pytest.mark.parametrize("fmt", ["%.2f", "%.6g", "%.15g"])
def test_values_written_with_fewer_digits_pass(fmt, tmp_path, rng):
    X = np.round(rng.lognormal(5, 2, size=(90, 2)), 2)
    Xp = _release(X, np.arange(90) // 3)
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(o, index=False)
    pd.DataFrame(Xp, columns=["a", "b"]).to_csv(p, index=False, float_format=fmt)
    rep = api.evaluate(o, p, k=3)
    assert rep["matching"]["check"]["columns"] == {"a": "mean", "b": "mean"}


def test_text_quantum_reads_the_last_digit():
    got = _text_quantum(np.array([12.34, 45500.0, 1e-05, 1.5e20, 4.56e4, 3.0, 91416.33333333333, 0.0, np.nan]))
    assert got[:6] == pytest.approx([0.005, 50.0, 5e-6, 5e18, 50.0, 0.5])
    assert 0 < got[6] <= 1e-10 and got[7] == got[6] and got[8] == 0


def test_mic1d_needs_the_explicit_opt_out(census_path, tmp_path):
    out = tmp_path / "m.csv"
    assert run_cli("protect", census_path, "-o", out, "-k", 3, "-m", "mic1d", "-q").exit_code == 0
    res = run_cli("evaluate", census_path, out, "-q")
    assert res.exit_code == 3 and "--no-pairing-check" in only_error_line(res)
    assert run_cli("evaluate", census_path, out, "-q", "--no-pairing-check", "--max-scenarios", 4).exit_code == 0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 40), k=st.integers(2, 4), seed=st.integers(0, 2**16),
       stat=st.sampled_from(["mean", "median", "trimmed:0.25", "onestep"]), decimals=st.sampled_from([None, 0, 3]))
def test_a_right_pairing_always_passes(n, k, seed, stat, decimals):
    """Any partition (groups >= k, data with ties or not), any statistic: proven."""
    g = np.random.default_rng(seed)
    X = g.normal(50, 30, size=(n, 3))
    if decimals is not None:
        X = np.round(X, decimals)
    groups = max(1, n // k)
    labels = np.concatenate([np.arange(groups), g.integers(0, groups, size=n - groups)])[g.permutation(n)]
    Xp = _release(X, labels, stat)
    out = check_pairing(X, Xp, ["a", "b", "c"], {"by": "order"})
    assert out["check"]["passed"] is True


@pytest.mark.slow
def test_the_proof_is_fast_at_50k_by_10(rng):
    import time

    X = rng.normal(size=(50_000, 10))
    Xp = _release(X, np.argsort(X[:, 0]) // 3)
    t0 = time.perf_counter()
    check_pairing(X, Xp, [f"c{j}" for j in range(10)], {"by": "order"})
    assert time.perf_counter() - t0 < 2.0


def test_a_few_swapped_records_in_a_mean_release_are_caught(census_path, census_runs, tmp_path):
    """Two records swapped: their classes keep a value within range but lose their mean."""
    plain = pd.read_csv(census_runs["plain"])
    swapped = plain.copy()
    swapped.iloc[[0, 500]] = plain.iloc[[500, 0]].to_numpy()
    path = tmp_path / "swapped.csv"
    swapped.to_csv(path, index=False)
    res = run_cli("evaluate", census_path, path, "-q")
    assert res.exit_code == 3
    line = only_error_line(res)
    assert "not paired right" in line and ("classes of differing values hold their mean" in line
                                           or "outside the range" in line)


def test_a_mean_release_may_hold_other_group_statistics(rng):
    """Nearly every class holds its mean; the others are a trimmed mean (a larger last
    group), or a weighted mean with weights that are constant in most groups."""
    X = rng.normal(50, 10, size=(62, 2))
    labels = np.minimum(np.arange(62) // 3, 19)  # 19 groups of 3, the last of 5
    Xp = _release(X, labels, "trimmed:0.2")
    assert check_pairing(X, Xp, ["a", "b"], {"by": "order"})["check"]["columns"] == {"a": "range", "b": "range"}
    w = np.ones(62)
    w[:3] = [1.0, 2.0, 5.0]
    Xw = _release(X, labels, weights=w)
    with pytest.raises(DataError, match="though 19 of the 20 classes of differing values hold their mean"):
        check_pairing(X, Xw, ["a", "b"], {"by": "order"})
    out = check_pairing(X, Xw, ["a", "b"], {"by": "order"}, candidate_weights=lambda: [np.ones(62) * 7, w])
    assert out["check"]["passed"] is True


def test_weighted_release_with_its_weight_column_passes(tmp_path, rng):
    n = 60
    orig = pd.DataFrame({"x": rng.normal(100, 20, n).round(1), "y": rng.normal(10, 2, n).round(2),
                         "w": np.ones(n)})
    orig.loc[0, "w"] = 5.0  # one group's weights vary: its class is no plain mean
    o, p = tmp_path / "o.csv", tmp_path / "p.csv"
    orig.to_csv(o, index=False)
    assert run_cli("protect", o, "-o", p, "-k", 3, "--columns", "x,y", "--weights", "w", "-q").exit_code == 0
    released = pd.read_csv(p)
    with pytest.raises(DataError, match="hold their mean"):  # without the weight column, it would not pass
        check_pairing(orig[["x", "y"]].to_numpy(), released[["x", "y"]].to_numpy(), ["x", "y"], {"by": "order"})
    rep = api.evaluate(o, p, k=3)
    assert rep["matching"]["check"]["passed"] is True and rep["columns"]["evaluated"] == ["x", "y"]


def test_a_release_stored_in_single_precision_passes(rng):
    X = rng.lognormal(8, 1, size=(300, 2))
    Xp = _release(X, np.arange(300) // 3).astype(np.float32).astype(np.float64)
    assert check_pairing(X, Xp, ["a", "b"], {"by": "order"})["check"]["passed"] is True
    with pytest.raises(DataError):
        check_pairing(X, Xp[::-1], ["a", "b"], {"by": "order"})


def test_a_report_never_overwrites_the_pairing_file(census_path, census_runs):
    pairing = census_runs["pairing"]
    before = pairing.read_bytes()
    res = run_cli("evaluate", census_path, census_runs["paired"], "--pairing-file", pairing, "--report", pairing,
                  "--force", "-q")
    assert res.exit_code in (2, 3) and pairing.read_bytes() == before
