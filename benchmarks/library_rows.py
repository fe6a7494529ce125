"""Library section of the benchmark: per-call latency distributions, library vs dense reference.

Reuses :mod:`benchmarks.bench_library` (scenarios, the seed-style dense
reference implementations, the fixture lookup) and adds what the report
needs: individual call times (median and p90 over repeats rather than a
batch mean), rows per mesh / sensor / mode / contact count, and a device
argument for CUDA rows.

"predict + sparse Jacobian" is what the node runs per message and sensor:
``PunyoDenseForceSensor.predict_with_jacobian`` (one closest-point search)
and ``PunyoPressureSensor.predict`` + ``sparse_force_jacobian``.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from benchmarks import assets
from benchmarks import bench_library as bl

MeshVF = Tuple[np.ndarray, np.ndarray]


def time_calls(fn: Callable[[], Any], repeats: int, budget_s: float, warmup: int = 3,
               sync: Optional[Callable[[], None]] = None) -> Dict[str, float]:
    """Time individual calls of ``fn``: median / p90 / min (s) over up to ``repeats`` calls.

    Stops early once ``budget_s`` seconds of calls have run (at least 5 calls), so
    slow references stay bounded.  ``sync`` (e.g. ``torch.cuda.synchronize``) is
    called after every call, inside the timed region.
    """
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < repeats:
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
        if len(times) >= 5 and time.perf_counter() - start > budget_s:
            break
    a = np.asarray(times)
    return {"median_s": float(np.median(a)), "p90_s": float(np.percentile(a, 90)),
            "min_s": float(a.min()), "n": int(len(a))}


def meshes() -> Tuple[Dict[str, MeshVF], List[str]]:
    """``({label: (V, F)}, skipped reasons)``: the real Punyo mesh (when the fixture is there)
    and the embedded world's generated bubble."""
    from vsf_sensor_ros.embedded_world import bubble_mesh
    out: Dict[str, MeshVF] = {}
    skipped: List[str] = []
    punyo = bl.punyo_mesh()
    if punyo is None:
        skipped.append(f"punyo mesh rows skipped: assets absent ({assets.describe()})")
    else:
        out["punyo"] = punyo
    b = bubble_mesh()
    out["bubble"] = (np.asarray(b.vertices), np.asarray(b.faces))
    return out, skipped


def _to_device(state: Any, device: torch.device) -> Any:
    from vsf_sensor_ros.sensor import SimState
    return SimState({k: v.to(device) for k, v in state.body_transforms.items()}, {},
                    {k: c.to(device) for k, c in state.contacts.items()})


def row(mesh_label: str, mesh_VF: MeshVF, sensor: str, mode: str, n: int, repeats: int, budget_s: float,
        device: str = "cpu", reference: bool = True) -> Dict[str, Any]:
    """One table row: library latency (and the dense reference's, same inputs) for one case.

    Args:
        sensor: ``'dense_force'`` or ``'pressure'``.
        mode: ``'barycentric'`` or ``'per_vertex'`` (pressure ignores the element ids).
        device: ``'cpu'`` or ``'cuda'`` (the reference always runs in numpy on the CPU).

    Returns:
        dict with ``library`` / ``reference`` timing dicts, ``ratio`` (reference median /
        library median), ``sparse_bytes``, ``dense_bytes``, ``max_abs_diff`` (library vs
        reference prediction; a sanity check, not a test).
    """
    from vsf_sensor_ros.sensor import PunyoDenseForceSensor, PunyoPressureSensor
    mesh, T, pts, forces, elems, state = bl._scenario(mesh_VF, n, mode, torch.float64, seed=n)
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else None
    if dev.type != "cpu":
        state = _to_device(state, dev)
    if sensor == "dense_force":
        s = PunyoDenseForceSensor("punyo_force", "punyo")
        s.attach(mesh_VF)
        call = (lambda: s.predict_with_jacobian(state))
        pred, J = s.predict_with_jacobian(state)
        ref_call = (lambda: bl.reference_dense_force(mesh, T, pts, forces, elems))
    elif sensor == "pressure":
        s = PunyoPressureSensor("punyo_pressure", "punyo")
        s.attach(mesh_VF)
        call = (lambda: (s.predict(state), s.sparse_force_jacobian(state)))
        pred, J = call()
        n_local = s.base_normal_local.double().numpy()       # the seed keeps it as a tensor
        ref_call = (lambda: bl.reference_pressure(s.base_area, n_local, T, forces))
    else:
        raise ValueError(f"sensor must be 'dense_force' or 'pressure', got {sensor!r}")
    ref_pred, ref_J = ref_call()
    out: Dict[str, Any] = {
        "mesh": mesh_label, "vertices": int(len(mesh_VF[0])), "sensor": sensor,
        "mode": mode if sensor == "dense_force" else "any",   # pressure ignores element ids
        "contacts": int(n), "device": device, "threads": torch.get_num_threads(),
        "library": time_calls(call, repeats, budget_s, sync=sync),
        "sparse_bytes": int(J.nbytes()), "dense_bytes": int(ref_J.nbytes), "nnz": int(J.values.numel()),
        "max_abs_diff": float(np.max(np.abs(pred.detach().double().cpu().numpy() - ref_pred), initial=0.0)),
    }
    if reference:
        out["reference"] = time_calls(ref_call, repeats, budget_s)
        out["ratio"] = out["reference"]["median_s"] / out["library"]["median_s"]
        # fastest call of each: least disturbed by other load on a shared host
        out["ratio_min"] = out["reference"]["min_s"] / out["library"]["min_s"]
    return out


def library_section(counts: Sequence[int], repeats: int, budget_s: float, log: Callable = print,
                    device: str = "cpu") -> Dict[str, Any]:
    """Every row: meshes x (dense force barycentric, dense force per-vertex, pressure) x counts."""
    ms, skipped = meshes()
    rows = []
    for label, VF in ms.items():
        for n in counts:
            for sensor, mode in (("dense_force", "barycentric"), ("dense_force", "per_vertex"),
                                 ("pressure", "barycentric")):
                r = row(label, VF, sensor, mode, n, repeats, budget_s, device=device,
                        reference=(device == "cpu"))
                rows.append(r)
                lib = r["library"]["median_s"] * 1e6
                ref = f", reference {r['reference']['median_s'] * 1e6:.0f} us (x{r['ratio']:.1f})" \
                    if "reference" in r else ""
                log(f"  {device} {label:<7} {sensor:<12} {mode:<12} N={n:<5} library {lib:8.0f} us{ref}")
    return {"rows": rows, "skipped": skipped}
