"""Demo figures (matplotlib, Agg; pyplot's global state is not touched); time is simulation time."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence, Tuple

import numpy as np
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure


def _mark_session(ax: Any, tare_t: Optional[float], contact_span: Optional[Tuple[float, float]]) -> None:
    if contact_span is not None:
        ax.axvspan(contact_span[0], contact_span[1], color="0.9", zorder=0, label="contact")
    if tare_t is not None:
        ax.axvline(tare_t, color="tab:red", linestyle="--", linewidth=1.2, label="tare")


def _zoom_limits(values: np.ndarray) -> Optional[Tuple[float, float]]:
    """y limits holding every finite value (nothing clipped), padded by 8 % of the range."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    lo, hi = float(values.min()), float(values.max())
    pad = max(0.08 * (hi - lo), 1e-6 * max(abs(lo), abs(hi)), 1e-9)
    return lo - pad, hi + pad


# measured first, thick and black; the prediction over it, dashed with hollow markers
MEASURED_STYLE = dict(color="black", linestyle="-", linewidth=2.4, marker="o", markersize=3.5, zorder=2)
PREDICTED_STYLE = dict(color="tab:blue", linestyle="--", linewidth=1.2, marker="s", markersize=3.5,
                       markerfacecolor="none", zorder=3)
RESIDUAL_STYLE = dict(color="tab:purple", linestyle="-", linewidth=0.9, marker=".", markersize=3, zorder=2)
COMPONENT_MARKERS = ("o", "s", "^", "D", "v", "P")      # one per component of a vector reading
QUANTITY = {"Pa": "pressure p", "N": "force F"}         # axis label quantity per unit


def _markevery(n: int) -> int:
    """Every k-th point carries a marker: about 60 per curve."""
    return max(1, n // 60)


def _tare_effect(t: np.ndarray, res: np.ndarray, tare_t: Optional[float]) -> Tuple[float, int]:
    """``(t_eff, in_flight)``: when every residual is tared (below half the mean before ``tare_t``), and
    the samples after ``tare_t`` before it; ``(-inf, 0)`` without a tare."""
    if tare_t is None:
        return -np.inf, 0
    before = res[t < tare_t]
    if not before.size:
        return tare_t, 0
    level = 0.5 * abs(float(before.mean()))
    later = np.flatnonzero(t >= tare_t)
    untared = later[np.abs(res[later]) >= level]
    # the last untared sample right after the tare ends the in-flight stretch (not a later spike)
    k = int(np.argmin(np.append(untared == later[:untared.size], False)))
    if k == 0:
        return tare_t, 0
    nxt = later[k] if k < later.size else later[-1]
    return float(t[nxt]), k


def pressure_figure(t_meas: np.ndarray, p_meas: np.ndarray, t_pred: np.ndarray, p_pred: np.ndarray,
                    tare_t: Optional[float] = None, contact_span: Optional[Tuple[float, float]] = None,
                    title: str = "pressure", measured_label: str = "measured") -> Figure:
    """Predicted vs measured pressure (``(M,)``/``(K,)`` s, Pa): overview, zoom and residual after
    ``tare_t`` (s), ``contact_span`` (s) shaded."""
    t_meas, p_meas = np.asarray(t_meas, float), np.asarray(p_meas, float)
    t_pred, p_pred = np.asarray(t_pred, float), np.asarray(p_pred, float)
    fig = Figure(figsize=(8.0, 8.6), dpi=110)
    ax_all, ax, ax_r = fig.subplots(3, 1, sharex=True, gridspec_kw={"height_ratios": [1, 2.2, 1.2]})
    common, im, ip = np.intersect1d(t_meas, t_pred, return_indices=True)
    res = p_meas[im] - p_pred[ip]
    after, in_flight = _tare_effect(common, res, tare_t)
    for a in (ax_all, ax):
        _mark_session(a, tare_t, contact_span)
        a.plot(t_meas, p_meas, markevery=_markevery(len(t_meas)), label=measured_label, **MEASURED_STYLE)
        a.plot(t_pred, p_pred, markevery=_markevery(len(t_pred)), label="predicted", **PREDICTED_STYLE)
        a.grid(alpha=0.3)
    ax_all.set_title(title)
    ax_all.set_ylabel("pressure p [Pa]")
    ax_all.legend(loc="lower right", fontsize=7)
    ax_all.text(0.01, 0.92, "whole run", transform=ax_all.transAxes, fontsize=8, va="top")
    late = np.concatenate([p_meas[t_meas >= after], p_pred[t_pred >= after]])
    lim = _zoom_limits(late)
    if lim is not None and tare_t is not None:
        ax.set_ylim(*lim)
        flight = (f"; {in_flight} prediction(s) published while the tare call was in flight, untared, "
                  "shown in the top panel only" if in_flight else "")
        ax.text(0.01, 0.97, f"from the first tared prediction on (y axis fitted to every point){flight}",
                transform=ax.transAxes, fontsize=8, va="top", wrap=True)
    ax.set_ylabel("pressure p [Pa]")
    # the residual after the tare (~Pa); the level before it (~10^5 Pa) is stated, not drawn
    shown = common >= after
    _mark_session(ax_r, tare_t, None)
    ax_r.plot(common[shown], res[shown], markevery=_markevery(int(shown.sum())), **RESIDUAL_STYLE)
    ax_r.axhline(0.0, color="0.5", linewidth=0.6)
    if (lim_r := _zoom_limits(res[shown])) is not None:
        ax_r.set_ylim(*lim_r)
    before = res[common < tare_t] if tare_t is not None else res[:0]
    if before.size:
        ax_r.text(0.01, 0.95, f"before the tare (not drawn): mean {before.mean():.6g} Pa",
                  transform=ax_r.transAxes, fontsize=8, va="top")
    ax_r.set_ylabel("residual, measured − predicted p [Pa]", fontsize=8)
    ax_r.set_xlabel("simulation time t [s]")
    ax_r.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_force_field(points: np.ndarray, forces: np.ndarray, path: Path,
                     measured_forces: Optional[np.ndarray] = None, title: str = "force field",
                     frame: str = "", measured_label: str = "measured") -> Path:
    """Write ``(V, 3)`` vertices (m, ``frame``) coloured by |f| of ``(V, 3)`` forces (N), and
    ``measured_forces`` beside, to ``path``.  Raises ValueError: shapes not ``(V, 3)`` or disagreeing."""
    points, forces = np.asarray(points, float), np.asarray(forces, float)
    if points.ndim != 2 or points.shape[1] != 3 or forces.shape != points.shape:
        raise ValueError(f"points and forces must both be (V, 3), got {points.shape} and {forces.shape}")
    panels = [("predicted", forces)]
    if measured_forces is not None:
        measured_forces = np.asarray(measured_forces, float)
        if measured_forces.shape != points.shape:
            raise ValueError(f"measured_forces must be {points.shape}, got {measured_forces.shape}")
        panels.append((measured_label, measured_forces))
    mags = [np.linalg.norm(f, axis=1) for _, f in panels]
    vmax = max(float(m.max()) for m in mags) if points.shape[0] else 1.0
    vmax = vmax if vmax > 0 else 1.0
    fig = Figure(figsize=(4.6 * len(panels) + 1.2, 4.6), dpi=110)
    # square-root colours: the small forces around the patch stay visible
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=vmax)
    sc = None
    for k, ((label, _), mag) in enumerate(zip(panels, mags)):
        ax = fig.add_subplot(1, len(panels), k + 1, projection="3d")
        order = np.argsort(mag)  # strongest vertices drawn last, on top
        sc = ax.scatter(points[order, 0], points[order, 1], points[order, 2], c=mag[order],
                        cmap="viridis", norm=norm, s=8 + 60 * np.sqrt(mag[order] / vmax), depthshade=False)
        ax.view_init(elev=28, azim=-60)
        ax.set_title(f"{label}\nΣ|f| = {mag.sum():.3g} N", fontsize=9)
        suffix = f" ({frame})" if frame else ""
        ax.set_xlabel("x [m]" + suffix, fontsize=7)
        ax.set_ylabel("y [m]", fontsize=7)
        ax.set_zlabel("z [m]", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.set_box_aspect(np.ptp(points, axis=0) + 1e-9)
    fig.colorbar(sc, ax=fig.axes, shrink=0.7, pad=0.08, label="|f| per vertex [N] (sqrt scale)")
    fig.suptitle(title)
    fig.savefig(path, bbox_inches="tight")
    return Path(path)


def components_figure(t_meas: Optional[np.ndarray], meas: Optional[np.ndarray], t_pred: np.ndarray,
                      pred: np.ndarray, labels: Sequence[str], tare_t: Optional[float] = None,
                      contact_span: Optional[Tuple[float, float]] = None, title: str = "",
                      unit: str = "", measured_label: str = "measured") -> Figure:
    """Each component of ``(M, D)`` measured (or None) and ``(K, D)`` predicted readings over time (s), and
    the residual.  Raises ValueError: ``pred`` is not ``(K, len(labels))``."""
    pred = np.asarray(pred, float).reshape(len(t_pred), -1)
    if pred.shape[1] != len(labels):
        raise ValueError(f"predicted readings have {pred.shape[1]} components but {len(labels)} labels")
    quantity = QUANTITY.get(unit, "reading")
    fig = Figure(figsize=(8.0, 6.2), dpi=110)
    ax = fig.add_subplot(3, 1, (1, 2))
    ax_r = fig.add_subplot(3, 1, 3, sharex=ax)
    _mark_session(ax, tare_t, contact_span)
    _mark_session(ax_r, tare_t, contact_span)
    m = None if meas is None or t_meas is None or not len(t_meas) else np.asarray(meas, float).reshape(
        len(t_meas), -1)
    m = m if m is not None and m.shape[1] == len(labels) else None
    if m is not None:
        common, i_m, i_p = np.intersect1d(np.round(t_meas, 6), np.round(t_pred, 6), return_indices=True)
    for k, name in enumerate(labels):
        color, marker = f"C{k}", COMPONENT_MARKERS[k % len(COMPONENT_MARKERS)]
        if m is not None:   # measured first and thickest, the prediction over it (thin, dashed, hollow)
            ax.plot(t_meas, m[:, k], color=color, linestyle="-", linewidth=2.4, marker=marker, markersize=3.5,
                    markevery=_markevery(len(t_meas)), zorder=2, label=f"{name} {measured_label}")
        ax.plot(t_pred, pred[:, k], color=color, linestyle="--", linewidth=1.1, marker=marker, markersize=3.5,
                markerfacecolor="white", markevery=_markevery(len(t_pred)), zorder=3,
                label=f"{name} predicted")
        if m is not None:
            ax_r.plot(common, m[i_m, k] - pred[i_p, k], color=color, linestyle="-", linewidth=0.8,
                      marker=marker, markersize=3, markevery=_markevery(len(common)), label=name)
    ax_r.axhline(0.0, color="0.5", linewidth=0.6)
    ax_r.set_xlabel("simulation time t [s]")
    ax_r.set_ylabel(f"residual, measured − predicted [{unit}]" if unit else "residual, measured − predicted",
                    fontsize=8)
    ax_r.grid(alpha=0.3)
    if m is not None:
        ax_r.legend(loc="best", fontsize=6, ncol=len(labels))
    ax.tick_params(labelbottom=False)
    ax.set_ylabel(f"{quantity} [{unit}]" if unit else quantity)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
