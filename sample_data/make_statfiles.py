"""Make sample_data/household.sav and household.dta from household.csv (reproducible).

    python sample_data/make_statfiles.py

The household survey with what SPSS and Stata files carry: variable labels, value
labels on the categorical columns, and a few declared missing codes in the income
columns (a seeded choice of rows): in the .sav, SPSS user-missing values 999999998
("refused") and 999999999 ("don't know") declared on ``income``, ``expend`` and
``savings``; in the .dta, Stata extended missings ``.a`` ("refused") and ``.b``
("don't know"). The .sav declares ``sampling_weight`` as its weight variable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat

HERE = Path(__file__).resolve().parent

LABELS = {
    "urbrur": "Urban or rural area", "roof": "Main roof material", "walls": "Main wall material",
    "water": "Main source of drinking water", "electcon": "Connected to electricity", "relat": "Relation to head",
    "sex": "Sex", "age": "Age in years", "hhcivil": "Civil status", "expend": "Household expenditure",
    "income": "Household income", "savings": "Household savings", "ori_hid": "Household id",
    "sampling_weight": "Sampling weight", "household_weights": "Household weight",
}
VALUE_LABELS = {
    "urbrur": {1: "urban", 2: "rural"},
    "roof": {1: "concrete", 2: "tiles", 3: "metal sheets", 4: "thatch", 5: "other"},
    "walls": {1: "brick", 2: "wood", 3: "mud", 9: "other"},
    "water": {1: "piped", 2: "well", 3: "river", 4: "rain", 5: "vendor", 6: "other", 7: "other", 8: "other",
              9: "other"},
    "electcon": {0: "no", 1: "yes", 2: "shared", 3: "generator", 9: "unknown"},
    "relat": {1: "head", 2: "spouse", 3: "child", 4: "parent", 5: "other relative", 6: "not related",
              7: "other", 8: "other", 9: "other"},
    "sex": {1: "male", 2: "female"},
    "hhcivil": {1: "single", 2: "married", 3: "divorced", 4: "widowed", 5: "other", 6: "other", 7: "other",
                8: "other", 9: "other"},
}
CODED = ("income", "expend", "savings")
SPSS_CODES = {999999998.0: "refused", 999999999.0: "don't know"}
STATA_CODES = {"a": "refused", "b": "don't know"}


def main() -> None:
    df = pd.read_csv(HERE / "household.csv")
    rng = np.random.default_rng(28)
    picks = {c: rng.choice(len(df), size=6, replace=False) for c in CODED}
    # SPSS: every numeric column double; the codes are numbers declared user-missing
    sav = df.astype("float64")
    for c, rows in picks.items():
        sav.loc[rows[:4], c] = 999999998.0
        sav.loc[rows[4:], c] = 999999999.0
    vl = {c: {float(k): v for k, v in labs.items()} for c, labs in VALUE_LABELS.items()}
    vl.update({c: dict(SPSS_CODES) for c in CODED})
    measure = {c: ("nominal" if c in VALUE_LABELS else "scale") for c in df.columns}
    measure["ori_hid"] = "nominal"
    fmt = {c: ("F12.2" if c in CODED else "F8.0") for c in df.columns}
    fmt["savings"] = "F12.1"
    pyreadstat.write_sav(sav, HERE / "household.sav", file_label="Household survey (sample, sdc)",
                         column_labels=LABELS, variable_value_labels=vl,
                         missing_ranges={c: list(SPSS_CODES) for c in CODED},
                         variable_measure=measure, variable_format=fmt,
                         note="Made by sample_data/make_statfiles.py from household.csv", row_compress=True)
    from microagg_cli.statfiles import set_spss_weight  # pyreadstat does not write the weight variable

    set_spss_weight(HERE / "household.sav", list(df.columns).index("sampling_weight"))
    # Stata: integers stay integers; the codes are extended missings .a and .b
    dta = df.copy()
    for c in df.columns:
        if c not in CODED and (df[c] % 1 == 0).all():
            dta[c] = df[c].astype(np.int32)
    for c in CODED:
        dta[c] = dta[c].astype(object)
    for c, rows in picks.items():
        dta.loc[rows[:4], c] = "a"
        dta.loc[rows[4:], c] = "b"
    vl = {c: dict(labs) for c, labs in VALUE_LABELS.items()}
    vl.update({c: dict(STATA_CODES) for c in CODED})
    pyreadstat.write_dta(dta, HERE / "household.dta", file_label="Household survey (sample, sdc)",
                         column_labels=LABELS, variable_value_labels=vl,
                         missing_user_values={c: list(STATA_CODES) for c in CODED})


if __name__ == "__main__":
    main()
