"""Scaling of the dense-force model: latency vs contact count and vs mesh size, with a plot.

* vs contacts: ``predict_with_jacobian`` with 10 / 100 / 1000 / 5000
  barycentric contacts on the mesh (the real Punyo mesh, else the embedded
  bubble), beside the dense reference of :mod:`benchmarks.bench_library`;
* vs mesh size: 100 barycentric contacts on the Punyo mesh subdivided with
  ``trimesh.remesh.subdivide`` 0, 1, 2 times (390 -> 1554 -> 6210 vertices,
  i.e. ~400 / ~1600 / ~6400), library and reference; the pressure model too
  (its per-call cost does not depend on the mesh).

One torch thread (the caller sets it).  :func:`plot_scaling` writes a
two-panel PNG with matplotlib's Agg backend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

from benchmarks.library_rows import meshes, row


def subdivided(VF, times: int):
    """``(V, F)`` after ``times`` rounds of 1-to-4 midpoint subdivision."""
    import trimesh
    V, F = VF
    for _ in range(times):
        V, F = trimesh.remesh.subdivide(V, F)
    return np.asarray(V), np.asarray(F)


def scaling_section(contact_counts: Sequence[int], subdivisions: Sequence[int], repeats: int,
                    budget_s: float, log: Callable = print) -> Dict[str, Any]:
    """Both curves; ``{"mesh", "vs_contacts": [row...], "vs_vertices": [row...]}``."""
    ms, skipped = meshes()
    label = "punyo" if "punyo" in ms else "bubble"
    base = ms[label]
    vs_contacts: List[Dict[str, Any]] = []
    for n in contact_counts:
        r = row(label, base, "dense_force", "barycentric", n, repeats, budget_s)
        vs_contacts.append(r)
        lib, ref = r["library"]["median_s"], r["reference"]["median_s"]
        log(f"  scaling N={n:<5} V={r['vertices']:<5} library {lib * 1e3:8.3f} ms, "
            f"reference {ref * 1e3:8.3f} ms")
    vs_vertices: List[Dict[str, Any]] = []
    for k in subdivisions:
        VF = subdivided(base, k)
        for sensor in ("dense_force", "pressure"):
            r = row(f"{label}/subdiv{k}", VF, sensor, "barycentric", 100, repeats, budget_s)
            r["subdivisions"] = k
            vs_vertices.append(r)
            lib, ref = r["library"]["median_s"], r["reference"]["median_s"]
            log(f"  scaling N=100   V={r['vertices']:<5} {sensor:<12} library {lib * 1e3:8.3f} ms, "
                f"reference {ref * 1e3:8.3f} ms")
    return {"mesh": label, "vs_contacts": vs_contacts, "vs_vertices": vs_vertices, "skipped": skipped}


def plot_scaling(section: Dict[str, Any], path: Path) -> Path:
    """Two log-log panels (latency vs contacts; vs vertices), library and reference, to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    rc = section["vs_contacts"]
    n = [r["contacts"] for r in rc]
    for key, style, name in (("library", "o-", "library predict + sparse J"),
                             ("reference", "s--", "dense reference")):
        med = [1e3 * r[key]["median_s"] for r in rc]
        p90 = [1e3 * r[key]["p90_s"] for r in rc]
        a.plot(n, med, style, label=f"{name} (median; band to p90)")
        a.fill_between(n, med, p90, alpha=0.2)
    a.axhline(0.3, color="grey", lw=0.8, ls=":", label="0.3 ms target (100 contacts)")
    a.set(xscale="log", yscale="log", xlabel="barycentric contacts",
          ylabel="ms per call (1 thread)",
          title=f"dense force vs contacts ({section['mesh']} mesh, {rc[0]['vertices']} vertices)")
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8)
    for sensor, colour in (("dense_force", "C0"), ("pressure", "C2")):
        rv = [r for r in section["vs_vertices"] if r["sensor"] == sensor]
        v = [r["vertices"] for r in rv]
        b.plot(v, [1e3 * r["library"]["median_s"] for r in rv], "o-", color=colour,
               label=f"{sensor} library")
        b.plot(v, [1e3 * r["reference"]["median_s"] for r in rv], "s--", color=colour,
               label=f"{sensor} reference")
    b.set(xscale="log", yscale="log", xlabel="mesh vertices (Punyo mesh subdivided)",
          ylabel="ms per call (1 thread)", title="vs mesh size (100 barycentric contacts)")
    from matplotlib.ticker import NullFormatter
    verts = sorted({r["vertices"] for r in section["vs_vertices"]})
    b.set_xticks(verts, [str(v) for v in verts])
    b.xaxis.set_minor_formatter(NullFormatter())
    lo, hi = b.get_ylim()
    b.set_ylim(lo, hi * 30)          # head room: the legend sits above the curves
    b.grid(True, which="both", alpha=0.3)
    b.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
