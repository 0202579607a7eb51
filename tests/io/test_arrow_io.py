"""The Arrow-backed I/O layer: type-faithful pass-through, byte-exact CSV, streaming."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io as _io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from microagg_cli.request import ReadOptions
from hypothesis import given, settings
from hypothesis import strategies as st

from microagg_cli import io
from microagg_cli.io import columns as io_columns
from microagg_cli.csvio import CsvWriter, csv_bytes, format_floats, open_csv_source, parse_numbers
from microagg_cli.errors import DataError


def pandas_csv(frame: pd.DataFrame, sep: str = ",", decimal: str = ".") -> bytes:
    """What the pandas writer of earlier versions wrote."""
    return frame.to_csv(index=False, sep=sep, decimal=decimal, lineterminator="\n").encode("utf-8")


def old_parse(texts: list[str], decimal: str) -> tuple[np.ndarray, np.ndarray]:
    """The pandas parse of earlier versions (io_columns._parse_numbers on a text column)."""
    return io_columns._parse_numbers(pd.Series(texts, dtype="str"), decimal)


# ------------------------------------------------------------------ Parquet fidelity


def rich_table(n: int = 7) -> pa.Table:
    rng = np.random.default_rng(1)
    ints = pa.array([None if i % 3 == 0 else i * 10 for i in range(n)], type=pa.int64())
    decs = pa.array([decimal.Decimal(f"{i}.{i:02d}") if i % 4 else None for i in range(n)], type=pa.decimal128(10, 2))
    strs = pa.array([f"s{i:03d}" if i % 5 else None for i in range(n)], type=pa.string())
    large = pa.array([f"L{i}" for i in range(n)], type=pa.large_string())
    codes = pa.array(["a", "b", None, "a", "c", "b", "a"][:n]).dictionary_encode()
    codes = codes.cast(pa.dictionary(pa.int32(), pa.string()))
    stamps = pa.array([dt.datetime(2024, 1, 1 + i, 12, tzinfo=dt.timezone.utc) for i in range(n)],
                      type=pa.timestamp("us", tz="Europe/Paris"))
    lists = pa.array([[i, i + 1] if i % 2 else [] for i in range(n)], type=pa.list_(pa.int64()))
    structs = pa.array([{"a": i, "b": f"b{i}"} for i in range(n)],
                       type=pa.struct([("a", pa.int32()), ("b", pa.string())]))
    x = pa.array(rng.normal(size=n))
    y = pa.array(rng.integers(0, 100, size=n), type=pa.int64())
    schema = pa.schema([
        pa.field("ints", pa.int64()), pa.field("x", pa.float64()), pa.field("decs", pa.decimal128(10, 2)),
        pa.field("strs", pa.string()), pa.field("large", pa.large_string(), nullable=False),
        pa.field("codes", codes.type), pa.field("stamps", stamps.type), pa.field("y", pa.int64()),
        pa.field("lists", lists.type), pa.field("structs", structs.type), pa.field("gone", pa.string()),
    ], metadata={b"origin": b"survey 2024", b"licence": b"internal"})
    return pa.Table.from_arrays([ints, x, decs, strs, large, codes, stamps, y, lists, structs,
                                 pa.array(["z"] * n)], schema=schema)


def test_parquet_round_trip_keeps_every_untouched_column(tmp_path):
    src = rich_table()
    pq.write_table(src, tmp_path / "in.parquet")
    table = io.read_table(tmp_path / "in.parquet")
    assert table.columns == src.column_names and table.n_rows == 7
    Xp = np.arange(14, dtype=float).reshape(7, 2)
    Xp[2, 0] = np.nan
    out = io.assemble_output(table, {"x": Xp[:, 0], "y": Xp[:, 1]}, drop=["gone"])
    io.write_table(out, tmp_path / "out.parquet", fmt="parquet", force=False)
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.column_names == [c for c in src.column_names if c != "gone"]
    for name in back.column_names:
        if name in ("x", "y"):
            assert back.schema.field(name).type == pa.float64()
            continue
        assert back.schema.field(name).equals(src.schema.field(name)), name
        assert back.column(name).equals(src.column(name)), name
    assert back.column("x").to_pylist()[2] is None  # a blanked value is a null, as before
    assert back.column("y").to_pylist() == list(Xp[:, 1])
    assert back.schema.metadata[b"origin"] == b"survey 2024"
    assert back.schema.metadata[b"licence"] == b"internal"


def test_pandas_metadata_rewritten_not_dropped(tmp_path):
    frame = pd.DataFrame({"n": pd.array([1, None, 3, 4], dtype="Int64"), "x": [1, 2, 3, 4],
                          "drop": ["a", "b", "c", "d"]}, index=[10, 11, 12, 13])
    frame.to_parquet(tmp_path / "in.parquet")
    table = io.read_table(tmp_path / "in.parquet")
    assert table.columns == ["n", "x", "drop"]  # the stored index is not a column
    out = io.assemble_output(table, {"x": np.array([1.5, 1.5, 3.5, 3.5])}, drop=["drop"])
    assert out.column_names == ["n", "x"]
    meta = json.loads(out.schema.metadata[b"pandas"])
    assert meta["index_columns"] == []
    assert [c["field_name"] for c in meta["columns"]] == ["n", "x"]
    back = out.to_pandas()
    assert str(back["n"].dtype) == "Int64" and back["x"].dtype == np.float64
    assert list(back.index) == [0, 1, 2, 3]
    # unchanged entry kept byte for byte when nothing it describes changed
    frame.reset_index(drop=True).to_parquet(tmp_path / "plain.parquet")
    plain = io.read_table(tmp_path / "plain.parquet")
    same = io.assemble_output(plain, {}, drop=[])
    assert same.schema.metadata[b"pandas"] == plain.data.schema.metadata[b"pandas"]


def test_take_rows_and_with_column(tmp_path):
    src = rich_table()
    table = io.Table(src, "parquet", None)
    out = io.assemble_output(table, {"x": np.zeros(7)}, drop=[])
    order = np.array([6, 5, 4, 3, 2, 1, 0])
    shuffled = io.take_rows(out, order)
    assert shuffled.schema.equals(out.schema, check_metadata=True)
    assert shuffled.column("decs").equals(out.column("decs").take(pa.array(order)))
    ids = io.with_column(shuffled, "strs", np.arange(1, 8), type=io.id_type(pa.string()))
    assert ids.schema.field("strs").type == pa.string()
    assert ids.column("strs").to_pylist() == [str(i) for i in range(1, 8)]
    assert ids.column_names == shuffled.column_names
    added = io.with_column(shuffled, "row_id", np.arange(7), position=0)
    assert added.column_names[0] == "row_id" and added.schema.metadata[b"origin"] == b"survey 2024"
    assert io.id_type(pa.int16()) == pa.int64() and io.id_type(pa.large_string()) == pa.large_string()


def test_parquet_in_memory_write_equals_streamed_row_groups(tmp_path):
    n = 150_000
    data = pa.table({"a": np.arange(n, dtype=float), "b": pa.array([str(i % 97) for i in range(n)])})
    io.write_table(data, tmp_path / "mem.parquet", fmt="parquet", force=False)
    with pq.ParquetWriter(tmp_path / "stream.parquet", data.schema) as writer:
        for batch in data.to_batches(max_chunksize=io.PARQUET_ROW_GROUP_ROWS):
            writer.write_batch(batch)
    assert (tmp_path / "mem.parquet").read_bytes() == (tmp_path / "stream.parquet").read_bytes()


@pytest.mark.parametrize("sep,dec", [(",", "."), (";", ",")])
def test_parquet_to_csv_equals_the_pandas_path(tmp_path, sep, dec):
    src = rich_table()
    pq.write_table(src, tmp_path / "in.parquet")
    frame = pd.DataFrame({"n": pd.array([1, None, 3, 4, 5, 6, 7], dtype="Int64"), "f": [0.5, None, 2, 3, 4, 5, 6],
                          "b": [True, False] * 3 + [True], "c": pd.Categorical(list("abcabca"))})
    frame.to_parquet(tmp_path / "pandas.parquet")
    for name in ("in.parquet", "pandas.parquet"):
        table = io.read_table(tmp_path / name)
        first = table.columns[1]
        Xp = np.linspace(-1, 1e6, 7)
        Xp[3] = np.nan
        old = pq.read_table(tmp_path / name).to_pandas().drop(columns=[table.columns[-1]])
        old[first] = Xp
        new = io.assemble_output(table, {first: Xp}, drop=[table.columns[-1]])
        assert csv_bytes(new, delimiter=sep, decimal=dec) == pandas_csv(old, sep, dec), name


# ------------------------------------------------------------------------ CSV text

TRICKY = (
    'id,code,amount,note,x\n'
    '007,0012,1.50,"a, b",1\n'
    '008,,2.50,"say ""hi""",2\n'
    '009,0001,,"two\nlines",3\n'
    '010, 01 ,1e3,plain,4\n'
)


def test_csv_pass_through_is_byte_exact(tmp_path):
    (tmp_path / "in.csv").write_text(TRICKY)
    table = io.read_table(tmp_path / "in.csv")
    assert table.data.schema.types == [pa.string()] * 5
    assert table.data.column("code").to_pylist() == ["0012", "", "0001", " 01 "]
    out = io.assemble_output(table, {"x": np.array([1.5, 1.5, 3.5, np.nan])}, drop=[])
    io.write_table(out, tmp_path / "out.csv", fmt="csv", force=False)
    got = (tmp_path / "out.csv").read_bytes()
    frame = pd.read_csv(_io.StringIO(TRICKY), dtype=str, keep_default_na=False, na_filter=False)
    frame["x"] = [1.5, 1.5, 3.5, np.nan]
    assert got == pandas_csv(frame)
    rows = list(csv.reader(_io.StringIO(got.decode())))
    src = list(csv.reader(_io.StringIO(TRICKY)))
    assert [r[:4] for r in rows] == [r[:4] for r in src]
    assert rows[4][4] == ""  # NaN -> empty cell


def test_csv_decimal_comma_and_semicolon(tmp_path):
    text = "a;b;c\n1,5;x;0012\n2,25;y, z;0013\n"
    (tmp_path / "in.csv").write_text(text)
    table = io.read_table(tmp_path / "in.csv", ReadOptions(decimal=","))
    assert table.delimiter == ";"
    a, bad = io.column_values(table, "a")
    assert a.tolist() == [1.5, 2.25] and not bad.any()
    out = io.assemble_output(table, {"a": np.array([1.75, 1e-05])}, drop=[])
    got = csv_bytes(out, delimiter=";", decimal=",")
    frame = pd.read_csv(_io.StringIO(text), sep=";", dtype=str, keep_default_na=False, na_filter=False)
    frame["a"] = [1.75, 1e-05]
    assert got == pandas_csv(frame, ";", ",")


def test_one_column_csv_quotes_empty_fields():
    data = pa.table({"x": pa.array([1.0, np.nan, 2.0], from_pandas=True)})
    assert csv_bytes(data) == pandas_csv(pd.DataFrame({"x": [1.0, np.nan, 2.0]}))
    text = pa.table({"t": ["", "a"]})
    assert csv_bytes(text) == pandas_csv(pd.DataFrame({"t": ["", "a"]}))


SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-05, 1.5e-05, 1e-4, 9.999999999999999e-05, 0.1, 1 / 3, 2.5, 100.0, 1e15,
           1e16, 9999999999999998.0, 1.234e16, 123456789012345.6, 1234560000000.0, 5e-324, -7.25e-300, 1e300,
           1.7976931348623157e308, 2.2250738585072014e-308, 1e21, 1e22, 0.30000000000000004, np.nan]


@pytest.mark.parametrize("sep,dec", [(",", "."), (";", ","), (",", ",")])
def test_float_formatting_equals_pandas_on_special_values(sep, dec):
    frame = pd.DataFrame({"v": SPECIAL, "t": ["a"] * len(SPECIAL)})
    assert csv_bytes(pa.Table.from_pandas(frame, preserve_index=False), delimiter=sep, decimal=dec) == \
        pandas_csv(frame, sep, dec)


def test_float_formatting_equals_numpy_on_random_bit_patterns():
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**63, size=200_000, dtype=np.int64) * rng.choice([1, -1], size=200_000)
    values = bits.view(np.float64)
    values = values[np.isfinite(values)]
    scaled = np.concatenate([values, rng.normal(size=50_000) * 10.0 ** rng.integers(-8, 20, size=50_000)])
    got = format_floats(scaled).to_pylist()
    assert got == scaled.astype(str).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=False, width=64), min_size=1, max_size=30),
       st.sampled_from([(",", "."), (";", ",")]))
def test_float_formatting_equals_pandas_property(values, dialect):
    sep, dec = dialect
    frame = pd.DataFrame({"t": ["x"] * len(values), "v": values})
    data = pa.table({"t": pa.array(["x"] * len(values)), "v": pa.array(values, type=pa.float64(), from_pandas=True)})
    assert csv_bytes(data, delimiter=sep, decimal=dec) == pandas_csv(frame, sep, dec)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list('ab,;"\n\r \t01')), max_size=6), min_size=1, max_size=12))
def test_text_quoting_equals_pandas_property(cells):
    frame = pd.DataFrame({"t": cells, "u": cells[::-1]})
    data = pa.table({"t": pa.array(cells), "u": pa.array(cells[::-1])})
    assert csv_bytes(data) == pandas_csv(frame)


# ------------------------------------------------------------------------- numbers

NUMERIC_CELLS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-10**20, 10**20).map(str),
    st.sampled_from(["", " ", "NA", "N/A", "NaN", "nan", "NULL", "null", ".", ",", "-0", "-0.0", "+1", "1.",
                     ".5", "1e5", "1E+05", "inf", "-inf", "Infinity", "x", "1 000", " 1.5 ", "\t2", "\xa03",
                     "1,5", "1.234,5", "0x10", "1_000", "00012", "1e400", "1e-400", "na", "None"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(NUMERIC_CELLS, min_size=1, max_size=20), st.sampled_from([".", ","]))
def test_parse_numbers_equals_the_old_parse(cells, dec):
    num, bad = parse_numbers(pa.array(cells, type=pa.string()), dec)
    onum, obad = old_parse(cells, dec)
    assert bad.tolist() == obad.tolist()
    assert np.array_equal(num, onum, equal_nan=True)
    assert np.signbit(num[~np.isnan(num)]).tolist() == np.signbit(onum[~np.isnan(onum)]).tolist()


def test_first_bad_row_messages_unchanged(tmp_path):
    table = io.read_table(_write(tmp_path / "in.csv", "a,b\n1,2\n3,x\n5,\n"))
    with pytest.raises(DataError, match=r"column 'b' is not numeric: row 2 holds a value with letters"):
        io.numeric_matrix(table, ["b"])
    blank = io.read_table(_write(tmp_path / "m.csv", "a\n1\n2\n\n3\nNA\n"))  # the blank line is skipped
    with pytest.raises(DataError, match=r"1 missing value\(s\) \(first in row 4\)"):
        io.numeric_matrix(blank, ["a"])
    typo = io.read_table(_write(tmp_path / "t.csv", "a,b\n1,x\n2,y\n3,4\n5,6\n7,8\n"))
    assert "row 1 holds a value with letters" in str(io.mostly_numeric_error(typo, "b"))


def _write(path, text):
    path.write_text(text)
    return path


def test_dataframe_tables_behave_as_before():
    frame = pd.DataFrame({"a": ["1", "2"], "b": ["x", "y"]})
    table = io.Table(frame, "csv", None)
    assert table.columns == ["a", "b"] and table.n_rows == 2 and table.frame is frame
    assert io.numeric_columns(table) == ["a"]
    assert table.data.column("b").to_pylist() == ["x", "y"]


# ----------------------------------------------------------------------- streaming


def test_streaming_writer_equals_in_memory_bytes():
    rng = np.random.default_rng(3)
    n = 10_000
    data = pa.table({"id": pa.array([f"{i:06d}" for i in range(n)]),
                     "x": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n) * 1e4), from_pandas=True),
                     "s": pa.array(rng.choice(["a", "b,c", 'q"', ""], size=n))})
    whole = csv_bytes(data)
    # one record a batch on the first 1,000 records (10,000 one-record batches took seconds)
    for part, size in ((data.slice(0, 1000), 1), (data, 777), (data, 4096), (data, n)):
        buf = _io.BytesIO()
        with CsvWriter(buf, data.schema) as writer:
            for batch in part.to_batches(max_chunksize=size):
                writer.write(batch)
        assert buf.getvalue() == (whole if part is data else csv_bytes(part)), size


def test_streaming_writer_with_pandas_formatted_columns_equals_pandas():
    n = 70_000  # more than one pandas chunk (100,000 cells / 3 columns)
    day = pd.Timestamp("2024-01-01")
    stamps = [day + pd.Timedelta(days=i % 9) if i < 40_000 else day + pd.Timedelta(hours=i % 7) for i in range(n)]
    frame = pd.DataFrame({"t": stamps, "b": [bool(i % 2) for i in range(n)],
                          "n": pd.array([None if i % 5 == 0 else i for i in range(n)], dtype="Int64")})
    data = pa.Table.from_pandas(frame, preserve_index=False)
    whole = csv_bytes(data)
    assert whole == pandas_csv(frame)
    buf = _io.BytesIO()
    with CsvWriter(buf, data.schema) as writer:
        for batch in data.to_batches(max_chunksize=12_345):
            writer.write(batch)
    assert buf.getvalue() == whole


def test_csv_source_batches_equal_whole_read(tmp_path):
    rows = ["id,x,note"] + [f"{i:05d},{i * 0.5},\"n, {i}\"" for i in range(2_500)]
    path = _write(tmp_path / "in.csv", "\n".join(rows) + "\n")
    whole = io.read_table(path)
    src = open_csv_source(path)
    assert src.n_rows == 2_500 and src.columns == ["id", "x", "note"] and src.delimiter == ","
    got = pa.Table.from_batches(list(src.batches(batch_rows=1000)))
    assert [b.num_rows for b in src.batches(batch_rows=1000)] == [1000, 1000, 500]
    assert got.equals(whole.data.combine_chunks())
    assert src.read_column("note").column(0).equals(whole.data.column("note"))
    assert src.read_rows(990, 1010, ["x"]).column(0).to_pylist() == whole.data.column("x").to_pylist()[990:1010]
    from microagg_cli.engines import StreamColumns

    cols = StreamColumns(src)
    assert np.array_equal(cols.numeric(["x"]), io.numeric_matrix(whole, ["x"]))
    assert np.array_equal(cols.numeric(["x", "id"]), io.numeric_matrix(whole, ["x", "id"]))
    values, missing = cols.keys("note")
    assert values.tolist() == whole.frame["note"].to_numpy().tolist() and not missing.any()
    assert src.fingerprint() == io.file_fingerprint(path)


@pytest.mark.parametrize("text,word", [("", "empty"), ("a,b\n", "no data rows"), ("a,a\n1,2\n", "duplicate"),
                                       ("1,2\n3,4\n", "header"), ("a,b\n1,2,3\n", "malformed")])
def test_csv_source_checks(tmp_path, text, word):
    with pytest.raises(DataError, match=word):
        open_csv_source(_write(tmp_path / "in.csv", text))


def test_csv_source_bom_and_quoted_newlines(tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b\n1,"x\ny"\n2,z\n')
    src = open_csv_source(path)
    assert src.columns == ["a", "b"] and src.n_rows == 2
    assert src.read_column("b").column(0).to_pylist() == ["x\ny", "z"]
    assert io.read_table(path).data.column("b").to_pylist() == ["x\ny", "z"]


def test_rows_arrow_refuses_read_as_before(tmp_path):
    with pytest.raises(DataError, match="line 2 has 1 field"):  # a short row is an error, not missing cells
        io.read_table(_write(tmp_path / "s.csv", "a,b\n1\n3,4\n"))
    blank = io.read_table(_write(tmp_path / "b.csv", "a\n1\n   \n2\n"))  # pandas skips a line of spaces
    assert blank.data.column("a").to_pylist() == ["1", "2"]
    with pytest.raises(DataError, match="malformed CSV"):
        io.read_table(_write(tmp_path / "m.csv", 'a,b\n1,2\n"3,4\n'))


ODD_FILES = [
    b"\xef\xbb\xbfa,b\n1,2\n", b"a,b\n1,2\n   \n3,4\n", b"a,b\n1,2\n\n3,4\n", b'a,b\nab"c,2\n', b'a,b\n"ab"c,2\n',
    b'a,b\n"a\nb",2\n', b"a,b\n1,2\r\n3,4\r", b"a,b\n , \n", b'a\n"" \n1\n', b'a,b\n"x" ,1\n',
    b"a,b\n x,1\n", b"a\n1\n\n", b'a,b\n"1,2",3\n', b'a,b\n1,"2""x"\n', b"a, b\n1,2\n", b"a;b\n1,5;2\n3,25;4\n",
    b"a\tb\n1\t2\n", b"a|b\n1|2\n", b"a,b\n-0,1\n-0,2\n", b"a,b\n-0,1.5\n2,2\n", b"a,b\n-0,\n", b"a,b\ninf,1\n-inf,2\n",
    b"a,b\n 1 ,\t2\n", b"a,b\n\xc2\xa01,2\n", b"a,b\n\x1c1,2\n", b"a,b\n1\x0b,2\n", b"a,b\nNA,N/A\nnan,NaN\nNULL,null\n.,3\n",
    b"a,b\n1_000,0x10\n", b"a,b\n12345678901234567890123456789,1\n", b"a,b\n1e999,1e-999\n", b"a\n   \n1\n",
    b"a,b\n1.,2\n+1,-2\n", b"a,b\n\xe2\x80\x831,2\n", b"a\xc3\xa9,b\n1,2\n", b"a,b\n1,2\n3,4",
]


@pytest.mark.parametrize("raw", ODD_FILES)
def test_odd_files_read_as_the_pandas_reader_did(tmp_path, raw):
    path = tmp_path / "odd.csv"
    path.write_bytes(raw)
    table = io.read_table(path)
    text = raw.decode("utf-8-sig")
    frame = pd.read_csv(_io.StringIO(text), sep=table.delimiter, dtype=str, keep_default_na=False, na_filter=False)
    assert table.columns == [str(c) for c in frame.columns]
    for name in table.columns:
        assert table.data.column(name).to_pylist() == frame[name].fillna("").tolist()
        for dec in (".", ","):
            table.decimal = dec
            num, bad = io.column_values(table, name)
            onum, obad = io_columns._parse_numbers(frame[name], dec)
            assert bad.tolist() == obad.tolist() and np.array_equal(num, onum, equal_nan=True)
            assert np.signbit(num).tolist() == np.signbit(onum).tolist()
        assert io.missing_mask(table, name).tolist() == io.missing_mask(io.Table(frame, "csv", None), name).tolist()


# ------------------------------------------------------------------ numpy without pandas
@pytest.mark.parametrize("values, typ", [
    ([1.5, None, -2.0, float("nan"), 3.25], pa.float64()),
    ([1.5, None, -2.0, 3.25], pa.float32()),
    ([1, 2, -3, 2**40], pa.int64()),
    ([1, None, 3], pa.int32()),
    ([0, 255, 7], pa.uint8()),
    ([True, False, True, True, False, False, True, False, True], pa.bool_()),
    ([True, None, False], pa.bool_()),
    (["a", "b"], pa.string()),
    ([], pa.float64()),
])
def test_arrow_numpy_matches_pyarrows_conversion(values, typ):
    from microagg_cli.csvio import arrow_numpy

    arr = pa.array(values, type=typ)
    for a in (arr, arr.slice(1), pa.chunked_array([arr, arr.slice(1)]), pa.chunked_array([arr], type=typ)):
        want = a.to_numpy(zero_copy_only=False) if isinstance(a, pa.Array) else \
            a.combine_chunks().to_numpy(zero_copy_only=False)
        got = arrow_numpy(a)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")
        if got.size:
            got[0] = got[-1]  # a writable copy, never a view of Arrow's buffer


def test_reading_numeric_parquet_does_not_import_pandas(tmp_path):
    """pyarrow's general to_numpy and read_table import pandas (0.2 s); protecting a
    numeric Parquet file needs neither."""
    path = tmp_path / "d.parquet"
    # continuous values (row numbers 0..49 and codes 0..6 would be refused by the default run)
    rng = np.random.default_rng(5)
    pq.write_table(pa.table({"a": rng.normal(size=50), "b": rng.gamma(2.0, size=50), "c": rng.normal(size=50)}), path)
    code = ("import sys\nfrom microagg_cli.api import protect\n"
            f"protect({str(path)!r}, {str(tmp_path / 'o.parquet')!r}, k=3, report=None)\n"
            "assert 'pandas' not in sys.modules, 'pandas imported'\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_float_arrow_matches_pyarrows_conversion():
    from microagg_cli.csvio import float_arrow

    for v in (np.array([1.5, np.nan, -0.0, np.inf, 3.0]), np.arange(20.0)[::2], np.array([]), np.full(9, np.nan)):
        assert float_arrow(v).equals(pa.array(v, type=pa.float64(), from_pandas=True))
