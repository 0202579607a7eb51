"""The literature presets of ``sdc compare`` (``--preset NAME``).

Each :class:`Preset` reproduces a paper's experiment on the sample data: its methods
(with the paper's labels), k values, columns or blockings, and a note mapping the
paper's method names onto the registry's. :data:`PRESETS` is the catalogue the
``--preset`` choice, the man page and the compare report read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameterError
from .cells import MethodChoice, PlanChoice

__all__ = ["PRESETS", "Preset", "resolve_preset"]


# ------------------------------------------------------------------------ presets

#: Census attributes a1..a9 of the one-dimension microaggregation paper.
_NIN_A = ("AGI", "FICA", "INTVAL", "EMCONTRB", "TAXINC", "WSALVAL", "ERNVAL", "PEARNVAL", "POTHVAL")


@dataclass(frozen=True)
class Preset:
    """A literature experiment on the sample data (``--preset NAME``)."""

    name: str
    summary: str
    methods: tuple[MethodChoice, ...]
    ks: tuple[int, ...]
    columns: tuple[str, ...] | None = None
    plans: tuple[PlanChoice, ...] | None = None
    mic1d_ks: tuple[int, ...] | None = None
    reference: str = ""
    notes: str = ""


def _blocks(*groups: tuple[int, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(("-".join(f"a{i}" for i in g), tuple(_NIN_A[i - 1] for i in g)) for g in groups)


#: Blockings of a1..a9 measured on sample_data/census.csv (``sdc blocks --strategy correlated``
#: and ``--strategy cross``, size 3): mean within-block |r| 0.658 and 0.418. The same blocks
#: are in sample_data/plans/census-correlated.toml and census-noncorrelated.toml.
_NIN_CORRELATED = _blocks((1, 2, 5), (3, 4, 9), (6, 7, 8))
_NIN_NONCORRELATED = _blocks((1, 8, 9), (2, 3, 6), (4, 5, 7))
_NIN_BLOCKED = ("correlated", "non-correlated")

#: The comparative study's 13 Census attributes.
_CENSUS_13 = ("AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX", "TAXINC", "POTHVAL",
              "INTVAL", "PEARNVAL", "FICA", "WSALVAL", "ERNVAL")

#: The comparative study's orders: PV (a particular variable: the first attribute,
#: pv:0), SZ (sum of z-scores), FPC (first principal component), MD (maximum distance).
_ORDERS = (("PV", "pv:0"), ("SZ", "sz"), ("FPC", "fpc"))


def _comparative_methods() -> tuple[MethodChoice, ...]:
    out = [MethodChoice("ufs", {"order": o}, f"UFS-{tag}") for tag, o in _ORDERS]
    out += [MethodChoice("kward-1d", {"order": o}, f"UDO-{tag}") for tag, o in _ORDERS]
    out.append(MethodChoice("md", {"grow": "group"}, "MFS-MD"))
    out += [MethodChoice("kward", {"order": o}, f"MDO-{tag}") for tag, o in _ORDERS + (("MD", "md"),)]
    return tuple(out)


#: name -> :class:`Preset`.
PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "nin-census",
            "Census, attributes a1..a9: MDAV, PCP, Z-scores with k = 5, 25, 50 in correlated and "
            "non-correlated blocks of 3; Mic1D once over all nine attributes with k = 3000, 4000, 5000 "
            "values",
            methods=(MethodChoice("mdav", {}, "mdav", _NIN_BLOCKED),
                     MethodChoice("pcp", {}, "pcp", _NIN_BLOCKED),
                     MethodChoice("zscores", {}, "zscores", _NIN_BLOCKED),
                     MethodChoice("mic1d", {}, "mic1d", ("all-nine",))),
            ks=(5, 25, 50),
            plans=(
                PlanChoice("correlated", _NIN_CORRELATED,
                           "blocks (a1,a2,a5), (a3,a4,a9), (a6,a7,a8): sdc blocks --strategy correlated, "
                           "mean within-block |r| 0.658"),
                PlanChoice("non-correlated", _NIN_NONCORRELATED,
                           "blocks (a1,a8,a9), (a2,a3,a6), (a4,a5,a7): sdc blocks --strategy cross, "
                           "mean within-block |r| 0.418"),
                PlanChoice("all-nine", (("a1-a9", _NIN_A),), "a1..a9 in one block (Mic1D)"),
            ),
            mic1d_ks=(3000, 4000, 5000),
            reference="Pont-Tuset, Nin, Medrano-Gracia, Larriba-Pey & Muntes-Mulero (2008), Improving "
                      "microaggregation for complex record anonymization, MDAI 2008, LNCS 5285",
            notes="Mic1D's k counts values per partition and, as in the paper, it runs once over all "
                  "nine attributes (9720 values) with k = 3000, 4000, 5000; MDAV, PCP and Z-scores run "
                  "in the two blockings. The blockings were measured on this file (the paper's a1..a9 "
                  "order does not make a1-a3 correlated here: mean |r| 0.441 against 0.535 for "
                  "a1-a4-a7): 'correlated' is sdc blocks' correlated strategy (mean within-block |r| "
                  "0.658), 'non-correlated' its cross strategy (0.418).",
        ),
        Preset(
            "comparative-13",
            "Census, all 13 attributes in one block: UFS, UDO with orders PV/SZ/FPC, MFS (MD, grow by "
            "group), MDO with orders PV/SZ/FPC/MD, k = 3, 4, 5",
            methods=_comparative_methods(),
            ks=(3, 4, 5),
            columns=_CENSUS_13,
            reference="Mateo-Sanz & Domingo-Ferrer (1998), A comparative study of microaggregation "
                      "methods, Questiio 22(3)",
            notes="Mapping of the paper's methods: UFS (univariate fixed size on projected data) = ufs; "
                  "UDO (univariate data-oriented: k-Ward on the projected axis) = kward-1d; MFS "
                  "(multivariate fixed size, maximum distance, each group grown around its centroid) = "
                  "md with grow=group; MDO (multivariate data-oriented, k-Ward) = kward. Orders: PV = a "
                  "particular variable (the first attribute, AFNLWGT; choose another with --methods "
                  "ufs:order=pv:COL), SZ = sum of z-scores, FPC = first principal component, MD = the "
                  "two farthest records (MDO only).",
        ),
    )
}


def resolve_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidParameterError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None

