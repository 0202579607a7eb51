"""One pipeline: the in-memory and streaming paths write the same bytes, pass-through
columns keep their Arrow types, and the DataFrame API gives what the CLI gives."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from microagg_cli import api
from microagg_cli.blocking import BlockPlan
from microagg_cli.errors import DataError, InvalidParameterError, ThresholdExceeded
from microagg_cli.frames import as_table, compare_frames, evaluate_frame, propose_blocks, protect_frame


def _exotic(n: int = 300, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = [None if i % 7 == 0 else int(i) for i in range(n)]
    utc = dt.timezone.utc
    cols = {
        "a": pa.array(rng.normal(size=n)),
        "b": pa.array(rng.normal(size=n) * 10 + 3),
        "nint": pa.array(ints, type=pa.int64()),
        "dec": pa.array([decimal.Decimal(f"{i}.{i % 100:02d}") for i in range(n)], type=pa.decimal128(10, 2)),
        "s": pa.array([f"id{i:04d}" for i in range(n)], type=pa.string()),
        "ls": pa.array([f"x{i}" for i in range(n)], type=pa.large_string()),
        "cat": pa.array([["u", "v", "w"][i % 3] for i in range(n)], type=pa.string()).dictionary_encode(),
        "ts": pa.array([dt.datetime(2020, 1, 1, tzinfo=utc) + dt.timedelta(hours=i) for i in range(n)],
                       type=pa.timestamp("ms", tz="Europe/Paris")),
        "lst": pa.array([[i, i + 1] if i % 5 else None for i in range(n)], type=pa.list_(pa.int32())),
        "st": pa.array([{"p": i, "q": str(i)} for i in range(n)],
                       type=pa.struct([("p", pa.int16()), ("q", pa.string())])),
    }
    return pa.table(cols).replace_schema_metadata({b"owner": b"nso", b"survey": b"2026"})


PASS = ["nint", "dec", "s", "ls", "cat", "ts", "lst", "st"]


@pytest.mark.parametrize("path", ["memory", "streaming"])
def test_parquet_pass_through_columns_keep_their_types_values_and_metadata(tmp_path, path):
    src = _exotic()
    pq.write_table(src, tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    api.protect(tmp_path / "in.parquet", out, k=3, columns=["a", "b"], passthrough=PASS,
                engine="local" if path == "streaming" else None)
    got = pq.read_table(out)
    assert got.column_names == src.column_names
    for name in PASS:
        assert got.schema.field(name).type == src.schema.field(name).type, name
        assert got.column(name).to_pylist() == src.column(name).to_pylist(), name
    assert got.schema.field("a").type == pa.float64()
    assert got.schema.metadata[b"owner"] == b"nso" and got.schema.metadata[b"survey"] == b"2026"
    assert got.column("a").to_pylist() != src.column("a").to_pylist()


@pytest.mark.parametrize("regenerate", [False, True])
def test_in_memory_and_streaming_parquet_outputs_are_byte_identical(tmp_path, regenerate):
    src = _exotic(200, seed=1).to_pandas()  # with a pandas metadata entry, as most files have
    src["hh"] = np.arange(200, dtype=np.int32)
    pq.write_table(pa.Table.from_pandas(src, preserve_index=False), tmp_path / "in.parquet")
    # hh, unique per record, is either the regenerated id or released on purpose (named)
    kw = dict(k=3, columns=["a", "b"], drop=["ls"],
              passthrough=[c for c in PASS if c != "ls"] + ([] if regenerate else ["hh"]), seed=4, id_column="hh" if regenerate else None, regenerate_ids=regenerate)
    api.protect(tmp_path / "in.parquet", tmp_path / "mem.parquet", **kw)
    api.protect(tmp_path / "in.parquet", tmp_path / "stream.parquet", engine="local", **kw)
    assert (tmp_path / "mem.parquet").read_bytes() == (tmp_path / "stream.parquet").read_bytes()
    back = pd.read_parquet(tmp_path / "mem.parquet")
    assert "ls" not in back.columns and back["nint"].dtype == src["nint"].dtype
    if regenerate:
        assert back["hh"].dtype == np.int32 and sorted(back["hh"]) == list(range(1, 201))


def test_csv_pass_through_text_is_written_exactly_as_read(tmp_path):
    text = "id,code,x,y,note\n007,01.50,1,10,\"a, b\"\n008,1e3,2,11,\n009,-0,3,12,x\n010,NA,4,13,\"q\"\"\"\n"
    (tmp_path / "in.csv").write_text(text)
    api.protect(tmp_path / "in.csv", tmp_path / "out.csv", k=2, columns=["x", "y"], passthrough=["code"])
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert lines[0] == "id,code,x,y,note"
    assert lines[1] == "007,01.50,1.5,10.5,\"a, b\""
    assert [ln.split(",")[1] for ln in lines[2:]] == ["1e3", "-0", "NA"]
    assert lines[4].endswith(",\"q\"\"\"")


# ---------------------------------------------------------------- the DataFrame API


def _frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n), "g": rng.integers(0, 2, n),
                         "x": rng.normal(size=n), "y": rng.normal(size=n) * 5, "label": [f"r{i}" for i in range(n)]})


def test_protect_frame_equals_the_file_api(tmp_path):
    df = _frame()
    out, rep = protect_frame(df, 3, columns=["x", "y"], seed=2, strata=["g"], passthrough=["id", "label"])
    df.to_parquet(tmp_path / "in.parquet", index=False)
    file_rep = api.protect(tmp_path / "in.parquet", tmp_path / "out.parquet", k=3, columns=["x", "y"], seed=2,
                           strata=["g"], passthrough=["id", "label"], report=tmp_path / "r.json")
    pd.testing.assert_frame_equal(out, pd.read_parquet(tmp_path / "out.parquet"))
    assert rep["blocks"][0]["il_sse"] == file_rep["blocks"][0]["il_sse"]
    assert rep["blocks"][0]["strata"] == file_rep["blocks"][0]["strata"]
    assert "audit" not in rep and rep["privacy_check"]["passed"]
    assert out.groupby(["g", "x", "y"]).size().min() >= 3
    assert out["label"].tolist() == df["label"].tolist() and out["id"].tolist() == df["id"].tolist()


def test_protect_frame_arrow_in_arrow_out_and_default_columns():
    t = pa.Table.from_pandas(_frame(), preserve_index=False)
    out, rep = protect_frame(t, 4, passthrough=["id", "g", "label"])
    assert isinstance(out, pa.Table) and out.schema.field("id").type == pa.int64()
    assert rep["columns"]["protected"] == ["x", "y"] and rep["columns"]["passthrough"] == ["id", "g", "label"]


def test_protect_frame_errors_are_the_cli_errors():
    df = _frame()
    named = dict(passthrough=["id", "g", "label"])  # released on purpose: the role check passes
    with pytest.raises(InvalidParameterError, match="k must be an integer >= 2"):
        protect_frame(df, 1, columns=["x"], **named)
    with pytest.raises(DataError, match="no column 'zz'"):
        protect_frame(df, 3, columns=["zz"], **named)
    with pytest.raises(InvalidParameterError, match="expected a pandas DataFrame or a pyarrow Table"):
        protect_frame([[1, 2]], 3)
    with pytest.raises(DataError, match="duplicate column 'x'"):
        protect_frame(pd.DataFrame([[1.0, 2.0]] * 4, columns=["x", "x"]), 2)
    with pytest.raises(DataError, match="column names must be non-empty strings"):
        protect_frame(pd.DataFrame({0: [1.0, 2.0, 3.0]}), 2)
    with pytest.raises(DataError, match="no rows"):
        protect_frame(df.iloc[:0], 2, columns=["x"])


def test_evaluate_frame_measures_and_gates():
    df = _frame(60)
    out, _ = protect_frame(df, 3, columns=["x", "y"], passthrough=["id", "g", "label"])
    ev = evaluate_frame(df, out, columns=["x", "y"], k=3)
    assert ev["summary"]["k_prime"] >= 3 and 0 < ev["summary"]["il_sse"] < 100
    with pytest.raises(ThresholdExceeded) as info:
        evaluate_frame(df, out, columns=["x", "y"], k=3, gates={"max_il": 0.0})
    assert info.value.report["gates"]["passed"] is False


def test_compare_frames_and_propose_blocks():
    df = _frame(60)
    res = compare_frames(df, methods=["mdav", "md"], k=[3, 4], columns=["x", "y"], max_scenarios=3)
    assert [(r["method"], r["k"]) for r in res["rows"]] == [("mdav", 3), ("mdav", 4), ("md", 3), ("md", 4)]
    blocks = propose_blocks(df[["x", "y", "g"]].astype(float), strategy="individual", k=3, evaluate=True)
    plan = blocks["candidates"]["individual"]["plan"]
    assert isinstance(plan, BlockPlan) and len(plan.blocks) == 3
    assert blocks["candidates"]["individual"]["evaluation"]["il_sse"] > 0


def test_as_table_keeps_an_arrow_table_as_is():
    t = _exotic(30)
    assert as_table(t).data is t


def test_package_exports_the_dataframe_api_and_result_types():
    import microagg_cli as sdc

    assert sdc.protect_frame is protect_frame and sdc.METRICS["il_sse"].heading == "IL_SSE"
    assert sdc.ProtectResult.__module__ == "microagg_cli.protection.table"


@pytest.mark.parametrize("options", [
    dict(columns=["x", "y"], passthrough=["id", "g"]),
    dict(columns=["x", "y"], drop=["id"], strata=["g"], small_strata="merge"),
    dict(columns=["x", "y"], id_column="id", regenerate_ids=True, partition_size=40, passthrough=["g"]),
])
def test_in_memory_and_streaming_csv_outputs_are_byte_identical(tmp_path, options):
    rng = np.random.default_rng(3)
    n = 300
    lines = ["id;g;x;y;note"] + [
        f"{i:05d};{'ab'[i % 2]};{rng.normal():.6f};{rng.integers(0, 1000)};{'x, y' if i % 7 == 0 else ''}"
        for i in range(n)]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n")
    api.protect(tmp_path / "in.csv", tmp_path / "mem.csv", k=3, seed=2, **options)
    api.protect(tmp_path / "in.csv", tmp_path / "stream.csv", k=3, seed=2, engine="local", **options)
    mem = (tmp_path / "mem.csv").read_bytes()
    assert mem == (tmp_path / "stream.csv").read_bytes()
    assert mem.splitlines()[0] == (b"g;x;y;note" if "drop" in options else b"id;g;x;y;note")


def test_streaming_default_selection_equals_the_in_memory_one(tmp_path):
    """Numeric columns protected, text and role columns (strata, weights, ids) passed through,
    a mostly-numeric column refused: the same on both paths, CSV and Parquet."""
    text = "id,region,w,a,b,name\n" + "".join(
        f"{i},{i % 2},{1 + i % 3},{i * 1.5},{(i * 7) % 11},n{i}\n" for i in range(12))
    (tmp_path / "in.csv").write_text(text)
    pd.read_csv(tmp_path / "in.csv").to_parquet(tmp_path / "in.parquet", index=False)
    for src in ("in.csv", "in.parquet"):
        ext = src.split(".")[1]
        reps = [api.protect(tmp_path / src, tmp_path / f"{mode}.{ext}", k=3, strata=["region"], weights="w",
                            drop=["id"], engine=engine, force=True)
                for mode, engine in (("mem", None), ("stream", "local"))]
        assert reps[0]["columns"] == reps[1]["columns"]
        assert reps[0]["columns"]["protected"] == ["a", "b"]
        assert reps[0]["columns"]["passthrough"] == ["region", "w", "name"]
        assert (tmp_path / f"mem.{ext}").read_bytes() == (tmp_path / f"stream.{ext}").read_bytes()
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3,x\n5,6\n7,8\n")
    for engine in (None, "local"):
        with pytest.raises(DataError, match="column 'b' is mostly numeric"):
            api.protect(tmp_path / "bad.csv", tmp_path / "o.csv", k=2, engine=engine, force=True)
