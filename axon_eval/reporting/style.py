"""Styling shared by every figure: colours, titles, contrast of cell text, saving and embedding PNGs.

Figures are built without ``pyplot``; :func:`save_figure` writes one, :func:`embed_png` makes a ``data:`` URI
(how the HTML report carries its figures), :func:`save_titled_figure` keeps the title in the PNG metadata.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from ..rubric import Rubric
from ..summaries import is_simulated_judge


BAND_COLOURS = {"good": "#2e7d32", "partial": "#f9a825", "poor": "#c62828"}


#: Prefix of every figure title of a simulated judge.
SIMULATED_PREFIX = "SIMULATED judge: "


#: The first bytes of every PNG file.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _rubric(rubric: Rubric | None) -> Rubric:
    return rubric if rubric is not None else Rubric.default()


def _is_simulated(results: pd.DataFrame, simulated: bool | None) -> bool:
    if simulated is not None:
        return bool(simulated)
    if "judge_id" not in results.columns:
        return False
    return is_simulated_judge(str(v) for v in results["judge_id"].dropna().unique())


def _title(results: pd.DataFrame, text: str, simulated: bool | None) -> str:
    """``text`` prefixed with :data:`SIMULATED_PREFIX` when the judge is simulated."""
    return (SIMULATED_PREFIX if _is_simulated(results, simulated) else "") + text


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 110) -> Path:
    """Save ``fig`` as PNG at ``path`` (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def png_bytes(fig: Figure, *, dpi: int = 110) -> bytes:
    """``fig`` rendered as PNG bytes, in memory."""
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format="png")
    return buffer.getvalue()


def embed_png(fig_or_path: Figure | str | Path, *, dpi: int = 110) -> str:
    """A ``data:image/png;base64,...`` URI of a figure (rendered in memory) or of a saved PNG file.

    Put it in ``<img src="...">`` and the page carries the picture itself: no file beside it.
    Raises ``ValueError`` naming a file that is not a PNG, ``FileNotFoundError`` for a missing one.
    """
    if isinstance(fig_or_path, Figure):
        data = png_bytes(fig_or_path, dpi=dpi)
    elif isinstance(fig_or_path, str | Path):
        path = Path(fig_or_path)
        data = path.read_bytes()
        if not data.startswith(PNG_SIGNATURE):
            raise ValueError(f"{path} is not a PNG file (first bytes {data[:8]!r})")
    else:
        raise TypeError(f"embed_png takes a matplotlib Figure or a PNG path, got {type(fig_or_path).__name__}")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


#: Text colours a heatmap cell's annotation is chosen from (the one with the higher contrast wins).
CELL_TEXT_COLOURS = ("black", "white")


#: WCAG 2 minimum contrast ratio for normal text (level AA); every heatmap annotation reaches it.
MIN_TEXT_CONTRAST = 4.5


#: What a bar that cannot be computed (an undefined kappa, an empty share) says instead of a 0-height bar.
UNDEFINED_BAR_TEXT = "undefined"


def relative_luminance(colour: object) -> float:
    """WCAG 2 relative luminance of a colour (any matplotlib colour spec), in [0, 1]:
    ``L = 0.2126 R + 0.7152 G + 0.0722 B`` over the linearised channels
    ``c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4`` (W3C, WCAG 2.1, "relative luminance")."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast_ratio(a: object, b: object) -> float:
    """WCAG 2 contrast ratio ``(L_light + 0.05) / (L_dark + 0.05)`` of two colours, in [1, 21]."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def cell_text_colour(background: object) -> str:
    """Black or white, whichever contrasts more with ``background`` (:func:`contrast_ratio`)."""
    return max(CELL_TEXT_COLOURS, key=lambda c: contrast_ratio(c, background))


def _annotate_heatmap(ax: object, image: object, values: np.ndarray, *, bold_diagonal: bool | None = None,
                      fontsize: float | None = None) -> None:
    """Write each cell's count over the heatmap ``image``, in the colour that reads on that cell.

    ``bold_diagonal``: True bolds the agreeing cells, False bolds the non-empty off-diagonal ones (the
    changes), None bolds nothing."""
    for i in range(values.shape[0]):
        for k in range(values.shape[1]):
            v = values[i, k]
            bold = (bold_diagonal is True and i == k) or (bold_diagonal is False and i != k and v)
            ax.text(k, i, str(int(v)), ha="center", va="center", fontsize=fontsize,
                    color=cell_text_colour(image.cmap(image.norm(v))), fontweight="bold" if bold else "normal")


def _undefined_bar(ax: object, x: float, text: str = UNDEFINED_BAR_TEXT) -> None:
    """Mark a bar that has no value (NaN) at ``x`` with a word instead of drawing it 0 high."""
    ax.text(x, 0.02, text, transform=ax.get_xaxis_transform(), ha="center", va="bottom", rotation=90,
            fontsize=8, color="#555555")


WEIGHT_COLOURS = {"intent_understood": "#1565c0", "sql_quality": "#6a1b9a", "result_relevance": "#00838f",
                  "answer_faithfulness": "#ef6c00"}


def _wrapped_title(text: str, subtitle: str, simulated: bool, width: int = 80) -> str:
    """``text`` (SIMULATED-prefixed when simulated) with ``subtitle`` wrapped under it at ``width`` characters."""
    import textwrap

    lines = textwrap.wrap(subtitle, width=width) if subtitle else []
    return "\n".join([(SIMULATED_PREFIX if simulated else "") + text, *lines])


def _nan_note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, color="#555555", wrap=True)


def figure_title(fig: Figure) -> str:
    """A figure's title: its suptitle, else its axes' titles joined by ' | '."""
    return fig.get_suptitle() or " | ".join(ax.get_title() for ax in fig.axes if ax.get_title())


def save_titled_figure(fig: Figure, path: str | Path, *, dpi: int = 110) -> Path:
    """:func:`save_figure` with the figure's title (:func:`figure_title`) in the PNG's ``Title`` metadata."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png", metadata={"Title": figure_title(fig)})
    return path
