"""Ctrl-C and SIGTERM during ``sdc evaluate``: the run ends within about
a second with exit code 130 / 143, whatever it is doing (PLD pair table, EM, k-d tree
searches in the scenario threads), and writes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pair(folder: Path, n: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 10))
    order = np.argsort(X[:, 0], kind="stable")
    Xp = X.copy()
    g = np.arange(n) // 3
    g[g >= n // 3] = n // 3 - 1
    labels = np.empty(n, dtype=np.int64)
    labels[order] = g
    sums = np.zeros((labels.max() + 1, 10))
    np.add.at(sums, labels, X)
    Xp = (sums / np.bincount(labels)[:, None])[labels]
    names = [f"c{j}" for j in range(10)]
    o, p = folder / "o.parquet", folder / "p.parquet"
    pd.DataFrame(X, columns=names).to_parquet(o)
    pd.DataFrame(Xp, columns=names).to_parquet(p)
    return o, p


@pytest.mark.slow
@pytest.mark.parametrize("sig,code,after", [(signal.SIGINT, 130, 4.0), (signal.SIGTERM, 143, 12.0)])
def test_signal_during_evaluate(tmp_path, sig, code, after):
    o, p = _pair(tmp_path, 60_000)
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "microagg_cli", "evaluate", str(o), str(p), "--report",
                             str(out / "r.json"), "--html", str(out / "r.html"), "--jobs", "2"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(after)  # in the PLD pair table (4 s) or in the scenario threads (12 s)
    assert proc.poll() is None
    sent = time.time()
    proc.send_signal(sig)
    proc.wait(timeout=30)
    elapsed = time.time() - sent
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    assert proc.returncode == code, err
    assert elapsed < 2.0, elapsed
    assert "Traceback" not in err and "interrupted; nothing was written" in err
    assert list(out.iterdir()) == []
