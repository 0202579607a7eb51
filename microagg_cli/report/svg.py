"""The one set of SVG helpers of the HTML reports: a writer, axes, markers, label placement.

Charts are hand-drawn inline SVG (no script, no external asset) and well-formed XML.
The writer keeps an estimate of the box of every text it draws, so that labels placed
later (:meth:`Svg.place`) avoid the texts and markers already there: the labels of two
close points of a risk-utility map go to different sides instead of on top of each
other (``checks/browser.py`` measures the real boxes in Chromium).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Sequence

__all__ = [
    "Box",
    "Svg",
    "axes",
    "marker",
    "nice_max",
    "text_box",
    "text_width",
    "tick_text",
    "ticks",
    "COLORS",
    "LABEL_COLORS",
    "PALETTE",
]

#: Colours of the linkage measures in the charts (colour-blind safe, Okabe-Ito).
COLORS = {"dld": "#0072B2", "pld": "#E69F00", "id": "#009E73", "k_prime": "#CC79A7", "worst": "#333333"}
#: Colours of intruder-knowledge labels (1G, 2G, ...).
LABEL_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
#: Colours of methods in the compare maps.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
           "#7F7F7F", "#BCBD22")

#: (x_min, y_min, x_max, y_max) in SVG user units, y downwards.
Box = tuple[float, float, float, float]

# Average advance of a character in em for a sans-serif face, on the generous side
# (system-ui, Helvetica, DejaVu Sans): an estimate too small would let labels overlap.
_NARROW = set("iljtfrI.,:;'|!() ")
_WIDE = set("mwMWG@%")


def text_width(s: str, size: float, weight: str = "normal") -> float:
    """Estimated width of ``s`` at font size ``size`` (upper bound for common faces).

    >>> round(text_width("mdav 300", 10), 1)
    50.4
    """
    em = 0.0
    for ch in s:
        if ch in _NARROW:
            em += 0.36
        elif ch in _WIDE:
            em += 0.9
        elif ch.isupper() or ch.isdigit():
            em += 0.66
        else:
            em += 0.6
    return em * size * (1.08 if weight == "bold" else 1.0)


def text_box(x: float, y: float, s: str, size: float, anchor: str = "start", weight: str = "normal",
             rotate: float | None = None) -> Box:
    """Estimated box of a text drawn at (x, y) (baseline) with ``text-anchor`` ``anchor``."""
    w = text_width(s, size, weight)
    left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
    box = (left, y - 0.95 * size, left + w, y + 0.28 * size)
    if rotate is not None and abs(abs(rotate) - 90) < 1e-9:  # a vertical axis title
        cx, cy = x, y
        return (cx - (y - box[1]), cy - (box[2] - x), cx + (box[3] - y), cy + (x - box[0]))
    return box


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def nice_max(v: float, steps: Sequence[float] = (1, 2, 2.5, 5, 10)) -> float:
    """Smallest ``step x 10^e`` >= ``v`` (at least 1e-9): the top of an axis.

    >>> nice_max(43.2), nice_max(43.2, (1, 2, 2.5, 3, 4, 5, 6, 8, 10)), nice_max(0.7)
    (50, 50, 1.0)
    """
    v = max(float(v), 1e-9)
    e = math.floor(math.log10(v))
    for m in steps:
        if m * 10**e >= v * (1 - 1e-12):
            return m * 10**e
    return 10.0 ** (e + 1)  # pragma: no cover


def ticks(vmax: float, count: int = 5) -> list[float]:
    """``count + 1`` evenly spaced ticks from 0 to ``vmax``."""
    step = vmax / count
    return [step * i for i in range(count + 1)]


def tick_text(v: float) -> str:
    """``20`` for whole numbers, else three significant digits."""
    return f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:.3g}"


class Svg:
    """A tiny SVG writer: elements as escaped strings (well-formed XML), plus the
    estimated boxes of the texts and markers drawn so far (for :meth:`place`)."""

    def __init__(self, width: int, height: int, title: str, desc: str) -> None:
        self.width, self.height = width, height
        self.boxes: list[Box] = []
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
            f"<title>{escape(title)}</title>",
            f"<desc>{escape(desc)}</desc>",
        ]

    def add(self, tag: str, text: str | None = None, **attrs: Any) -> None:
        """``<tag attr="..."/>``; a trailing ``_`` is dropped and ``_`` becomes ``-``."""
        a = " ".join(f'{k.rstrip("_").replace("_", "-")}="{escape(str(v))}"' for k, v in attrs.items())
        if text is None:
            self.parts.append(f"<{tag} {a}/>")
        else:
            self.parts.append(f"<{tag} {a}>{escape(text)}</{tag}>")

    def raw(self, text: str) -> None:
        self.parts.append(text)

    def obstacle(self, box: Box) -> None:
        """Something labels must not cover (a marker, a legend swatch)."""
        self.boxes.append(box)

    def text(self, x: float, y: float, s: str, *, anchor: str = "middle", size: float = 11,
             weight: str = "normal", fill: str = "#222", rotate: float | None = None) -> None:
        extra: dict[str, Any] = {}
        if rotate is not None:
            extra["transform"] = f"rotate({rotate:g} {x:.1f} {y:.1f})"
        self.add("text", s, x=f"{x:.1f}", y=f"{y:.1f}", text_anchor=anchor, font_size=f"{size:g}",
                 font_weight=weight, fill=fill, **extra)
        self.boxes.append(text_box(x, y, s, size, anchor, weight, rotate))

    def free(self, box: Box, bounds: Box | None = None) -> bool:
        """Whether ``box`` overlaps nothing drawn and lies inside ``bounds``."""
        if bounds is not None and (box[0] < bounds[0] or box[1] < bounds[1] or box[2] > bounds[2]
                                   or box[3] > bounds[3]):
            return False
        return not any(_overlap(box, b) > 0 for b in self.boxes)

    def place(self, x: float, y: float, s: str, *, size: float = 10, fill: str = "#222",
              weight: str = "normal", gap: float = 8.0, bounds: Box | None = None,
              prefer: str = "right") -> tuple[float, float, str]:
        """Draw label ``s`` next to the point (x, y) where it covers nothing drawn so far.

        Tries eight places around the point (right first, or left with
        ``prefer="left"``), then the same places further out on rings of growing
        radius, joined to the point by a thin leader line; the first free place inside
        ``bounds`` wins (else the least-overlapping one). Returns (x, y, anchor) of
        the text drawn.
        """
        bounds = bounds or (0.0, 0.0, float(self.width), float(self.height))
        asc, desc = 0.95 * size, 0.28 * size
        mid = (asc - desc) / 2  # baseline offset that centres the text on y
        best: tuple[float, tuple[float, float, str, bool]] | None = None
        for ring in range(0, 8):
            r = gap + ring * (size + 4)
            right = [(x + r, y + mid, "start"), (x + r * 0.7, y - r * 0.7 + mid - 2, "start"),
                     (x + r * 0.7, y + r * 0.7 + mid + 2, "start")]
            left = [(x - r, y + mid, "end"), (x - r * 0.7, y - r * 0.7 + mid - 2, "end"),
                    (x - r * 0.7, y + r * 0.7 + mid + 2, "end")]
            vert = [(x, y - r - desc, "middle"), (x, y + r + asc, "middle")]
            order = right + left + vert if prefer == "right" else left + right + vert
            for lx, ly, anchor in order:
                box = text_box(lx, ly, s, size, anchor, weight)
                inside = (box[0] >= bounds[0] and box[1] >= bounds[1] and box[2] <= bounds[2]
                          and box[3] <= bounds[3])
                cost = sum(_overlap(box, b) for b in self.boxes) + (0.0 if inside else 1e6)
                if best is None or cost < best[0]:
                    best = (cost, (lx, ly, anchor, ring > 0))
                if cost == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        lx, ly, anchor, leader = best[1]
        if leader:  # a thin line from the point to the label's near edge
            ey = ly - mid if anchor != "middle" else (ly + desc if ly < y else ly - asc)
            self.add("line", x1=f"{x:.1f}", y1=f"{y:.1f}", x2=f"{lx:.1f}", y2=f"{ey:.1f}",
                     stroke=fill, stroke_width=0.6, stroke_opacity=0.7)
        self.text(lx, ly, s, anchor=anchor, size=size, weight=weight, fill=fill)
        return lx, ly, anchor

    def close(self) -> str:
        return "\n".join(self.parts + ["</svg>"])


def axes(svg: Svg, x0: float, y0: float, w: float, h: float, ymax: float, ylabel: str) -> None:
    """Y axis with grid lines from 0 to ymax; the plot box is (x0, y0, w, h), y0 top."""
    for t in ticks(ymax):
        y = y0 + h - h * t / ymax
        svg.add("line", x1=f"{x0:.1f}", x2=f"{x0 + w:.1f}", y1=f"{y:.1f}", y2=f"{y:.1f}",
                stroke="#ddd", stroke_width=1)
        svg.text(x0 - 6, y + 4, tick_text(t), anchor="end", size=10, fill="#555")
    svg.add("line", x1=f"{x0:.1f}", x2=f"{x0:.1f}", y1=f"{y0:.1f}", y2=f"{y0 + h:.1f}", stroke="#888")
    svg.add("line", x1=f"{x0:.1f}", x2=f"{x0 + w:.1f}", y1=f"{y0 + h:.1f}", y2=f"{y0 + h:.1f}", stroke="#888")
    svg.text(14, y0 + h / 2, ylabel, size=11, rotate=-90)


def marker(shape: int, x: float, y: float, color: str, tip: str, hollow: bool = False) -> str:
    """One marker (shape by plan: circle, square, triangle, diamond, ...) with a tooltip;
    ``hollow``: an outline only (a dominated point)."""
    r = 5.5
    title = f"<title>{escape(tip)}</title>"
    style = (f'fill="none" stroke="{color}" stroke-width="1.5"' if hollow
             else f'fill="{color}" fill-opacity="0.85" stroke="#fff" stroke-width="1"')
    s = shape % 4
    if s == 0:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" {style}>{title}</circle>'
    if s == 1:
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" {style}>{title}</rect>'
    if s == 2:
        pts = f"{x:.1f},{y - r - 1:.1f} {x - r - 1:.1f},{y + r:.1f} {x + r + 1:.1f},{y + r:.1f}"
    else:
        pts = f"{x:.1f},{y - r - 1.5:.1f} {x + r + 1.5:.1f},{y:.1f} {x:.1f},{y + r + 1.5:.1f} {x - r - 1.5:.1f},{y:.1f}"
    return f'<polygon points="{pts}" {style}>{title}</polygon>'
