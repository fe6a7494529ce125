"""Dense membrane force of a Punyo bubble measured by its own depth camera.

A linearised pre-tensioned membrane about a contact-free reference, solved per frame for non-negative
inward pushes (with colour, also tangential forces).  Model, constants, frames, units: docs/membrane_force.md.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import block_diag
from scipy.optimize import nnls

from .camera_model import BrownConradyCamera
from .errors import SettingError
from .membrane_mesh import MembraneMesh

__all__ = ["FrameRejected", "MembraneForceEstimator", "MembraneForceResult", "MembraneModel",
           "WrenchComparison", "compare_with_wrench", "isa_pressure", "peak_distance",
           "punyo_camera_rotation"]


class FrameRejected(ValueError):
    """A camera frame (or reference) the estimator cannot use; nothing changed.  ``reason``: ``'wrong_size'``,
    ``'nan'``, ``'too_few_valid_pixels'``, ``'bad_pressure'``, ``'no_reference'`` or ``'solver_failed'``."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


#: the colour image is scaled down by this for the optical flow (DIS on a half-size image: about 2 ms)
FLOW_SCALE = 2


def isa_pressure(altitude_m: float) -> float:
    """ISA pressure (Pa) at a geopotential altitude (m): ``101325 (1 − 0.0065 h / 288.15)^5.25588`` (ISO
    2533); ValueError outside −500 … 11000 m."""
    h = float(altitude_m)
    if not -500.0 <= h <= 11000.0:
        raise ValueError(f"altitude must be within -500..11000 m for the troposphere formula, got {h}")
    return 101325.0 * (1.0 - 0.0065 * h / 288.15) ** 5.25588


def punyo_camera_rotation(angle_deg: float = 25.0) -> np.ndarray:
    """``(3, 3)`` float64 ``R_cam_mesh`` of the Punyo reference mesh: a rotation by ``angle_deg`` about the
    camera y axis (the reference estimator's convention, ``p_cam = R p_mesh``).
    """
    t = np.deg2rad(float(angle_deg))
    return np.array([[np.cos(t), 0.0, -np.sin(t)], [0.0, 1.0, 0.0], [np.sin(t), 0.0, np.cos(t)]])


def _blocks_to_csr(tri: np.ndarray, blocks: np.ndarray, n_vertices: int) -> sp.csr_matrix:
    """Per-triangle ``(T, 9, 9)`` blocks (vertex-major, xyz-minor; or (T, 3, 3, 3, 3)) as a (3V, 3V) CSR."""
    dof = (3 * tri[:, :, None] + np.arange(3)).reshape(len(tri), 9)
    rows_cols = (np.repeat(dof, 9, axis=1).ravel(), np.tile(dof, (1, 9)).ravel())
    return sp.csr_matrix((blocks.ravel(), rows_cols), shape=(3 * n_vertices, 3 * n_vertices))


class MembraneModel:
    """Linearised mechanics of an inflated membrane about its reference shape (docs/membrane_force.md).

    ``mesh``: reference (contact-free, inflated) shape, mesh frame; ``gauge_pressure`` ``p0`` (Pa, > 0);
    ``prestress``: ``'uniform'`` (the isotropic tension best balancing ``p0`` over the free vertices),
    ``'equilibrium'`` (the per-triangle field balancing it exactly, nearest the uniform one) or a tension
    in N/m (a flat membrane); ``material``: add the neo-Hookean material stiffness.

    Attributes: ``K`` ``(3V, 3V)`` CSR ``K_m + K_σ − p0 H`` (N/m); ``g0`` ``(V, 3)`` pressure load per
    unit pressure ``∂V/∂x`` (m²); ``normals`` ``(V, 3)`` outward unit (along ``g0``); ``stress`` ``(T, 3)``
    ``(N11, N22, N12)`` per triangle (N/m, e1 along its first edge); ``mean_tension`` (N/m, area-weighted
    ½ tr N); ``areal_stretch`` ``A_dome / A_base``; ``equilibrium_residual`` (N, free vertices).

    Raises:
        SettingError: ``setting`` ``'prestress'`` (unknown, or a tension not positive) or ``'gauge_pressure'``
            (negative, non-finite, or zero without a prescribed tension).
        ValueError: no enclosed volume without a prescribed tension; ``material`` on an unstretched membrane.
    """

    def __init__(self, mesh: MembraneMesh, gauge_pressure: float, prestress: Union[str, float] = "uniform",
                 material: bool = True) -> None:
        p0 = float(gauge_pressure)
        fixed_tension = not isinstance(prestress, str)
        if not fixed_tension and prestress not in ("uniform", "equilibrium"):
            raise SettingError(f"prestress must be 'uniform', 'equilibrium' or a tension in N/m, "
                               f"got {prestress!r}", "prestress", prestress, "invalid",
                               ("uniform", "equilibrium"))
        if fixed_tension and not (np.isfinite(float(prestress)) and float(prestress) > 0):
            raise SettingError(f"a prescribed pre-tension must be positive and finite (N/m), got {prestress}",
                               "prestress", prestress, "not_positive")
        if not np.isfinite(p0) or p0 < 0.0 or (p0 == 0.0 and not fixed_tension):
            raise SettingError(f"gauge pressure must be a positive finite value in Pa, got {gauge_pressure}",
                               "gauge_pressure", gauge_pressure, "not_positive")
        self.mesh, self.gauge_pressure = mesh, p0
        x, tri, n_v = mesh.points, mesh.triangles, len(mesh.points)
        centre = x[mesh.boundary].mean(axis=0)
        xc = x - centre  # volume and its derivatives about the base centre
        a, b, c = xc[tri[:, 0]], xc[tri[:, 1]], xc[tri[:, 2]]
        volume = float(np.einsum("ij,ij->", a, np.cross(b, c))) / 6.0
        if abs(volume) < 1e-12 and not fixed_tension:
            raise ValueError("the membrane encloses no volume over its base; its pre-tension cannot be "
                             "found from the pressure (pass prestress=<tension in N/m>)")
        # Orient so that g points outward (a flat membrane: along its winding's normal).
        sign = -1.0 if volume < -1e-12 else 1.0

        # Pressure load: a third of each triangle's area vector per vertex (= dV/dx at free vertices).
        self.g0 = g = np.zeros((n_v, 3))
        np.add.at(g, tri.T.ravel(), np.tile(sign * np.cross(b - a, c - a) / 6.0, (3, 1)))
        # H = d g / d x: a triangle's area vector changes with its vertex j by ½[x_{j+2} − x_{j+1}]×, a
        # third of it on each of its vertices i. At free vertices this is the Hessian of V.
        # ([d]_× of d = x_{j+2} − x_{j+1}: its row r is e_r × d)
        d = xc[np.roll(tri, -2, axis=1)] - xc[np.roll(tri, -1, axis=1)]
        s = sign * np.cross(np.eye(3), d[..., None, :]) / 6.0  # (T, j, 3, 3)
        H = _blocks_to_csr(tri, np.broadcast_to(s.swapaxes(1, 2)[:, None], (len(tri),) + (3,) * 4), n_v)

        # Triangle geometry: basis (e1, e2), area, shape-function gradients (local and 3-D).
        x1, x2, x3 = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
        nrm = np.cross(x2 - x1, x3 - x1)
        area = 0.5 * np.linalg.norm(nrm, axis=1)
        e1 = (x2 - x1) / np.linalg.norm(x2 - x1, axis=1)[:, None]
        e2 = np.cross(nrm / (2.0 * area[:, None]), e1)  # unit normal × e1
        loc = np.stack([np.stack([np.einsum("ij,ij->i", p - x1, e1), np.einsum("ij,ij->i", p - x1, e2)], -1)
                        for p in (x1, x2, x3)], axis=1)  # (T, 3 nodes, 2)
        lj, lm = np.roll(loc, -1, axis=1), np.roll(loc, -2, axis=1)  # node k's next and previous nodes
        grad = np.stack([lj[..., 1] - lm[..., 1], lm[..., 0] - lj[..., 0]], -1) / (2.0 * area)[:, None, None]

        # Strain of a nodal displacement per unit length, (T, 3 strain (11, 22, 12), 3 nodes, 3 xyz); it is
        # also the nodal force of a unit stress per unit area: r_a = A (N11 gx e1 + N22 gy e2 + ...).
        bm = np.stack([grad[:, :, 0:1] * e1[:, None, :], grad[:, :, 1:2] * e2[:, None, :],
                       grad[:, :, 1:2] * e1[:, None, :] + grad[:, :, 0:1] * e2[:, None, :]], axis=1)
        unit = area[:, None, None, None] * bm.transpose(0, 2, 3, 1)  # (T, 3 nodes, 3 xyz, 3 components)
        rows = (3 * tri[:, :, None, None] + np.arange(3)[None, None, :, None]).repeat(3, axis=3)
        cols = np.broadcast_to(3 * np.arange(len(tri))[:, None, None, None] + np.arange(3), rows.shape)
        C = sp.csr_matrix((unit.ravel(), (rows.ravel(), cols.ravel())), shape=(3 * n_v, 3 * len(tri)))
        free_dof = (3 * mesh.interior[:, None] + np.arange(3)).ravel()
        Cf = C[free_dof]
        bvec = p0 * g.ravel()[free_dof]
        iso = np.tile([1.0, 1.0, 0.0], len(tri))
        ciso = Cf @ iso
        t_uniform = float(ciso @ bvec / (ciso @ ciso)) if p0 > 0 else float("nan")
        stress = (float(prestress) if fixed_tension else t_uniform) * iso
        if prestress == "equilibrium":
            # Nearest field (weights = areas) to t_uniform*iso satisfying Cf n = bvec.
            winv = sp.diags(np.repeat(1.0 / area, 3))
            S = (Cf @ winv @ Cf.T).tocsc()
            y = spla.spsolve(S + 1e-12 * sp.identity(S.shape[0], format="csc") * S.diagonal().mean(),
                             bvec - Cf @ stress)
            stress = stress + winv @ (Cf.T @ y)
        self.stress = stress = stress.reshape(-1, 3)
        self.equilibrium_residual = float(np.abs((Cf @ stress.ravel() - bvec).reshape(-1, 3)).max())
        self.mean_tension = float((0.5 * (stress[:, 0] + stress[:, 1]) * area).sum() / area.sum())  # ½ tr N

        # Geometric stiffness: A (grad_a . N . grad_b) I3, N in local components.
        gng = area[:, None, None] * np.einsum("tai,tij,tbj->tab", grad, stress[:, [[0, 2], [2, 1]]], grad)
        kblk = np.einsum("tab,ij->taibj", gng, np.eye(3))

        # Material stiffness (neo-Hookean tangent on the inflated sheet).
        ring = x[mesh.boundary] - centre  # the base: the clamped ring's vector area
        base_area = float(0.5 * np.linalg.norm(np.cross(ring, np.roll(ring, -1, axis=0)).sum(axis=0)))
        self.areal_stretch = float(area.sum() / base_area) if base_area > 0 else float("nan")
        self.material_tangent = np.zeros((3, 3))
        if material:
            if not self.areal_stretch > 1.0 + 1e-6:
                raise ValueError(f"the material tangent needs an inflated membrane (areal stretch > 1), "
                                 f"got {self.areal_stretch:.6f}; pass material=False")
            jm3 = self.areal_stretch ** -3.0  # D = μ t0 J⁻³ [...] with μ t0 = T / (1 − J⁻³)
            self.material_tangent = dmat = (self.mean_tension / (1.0 - jm3) * jm3
                                            * np.array([[4.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]))
            b9 = bm.reshape(len(tri), 3, 9)
            kmat = area[:, None, None] * np.einsum("tsa,sr,trb->tab", b9, dmat, b9)
            kblk = kblk + kmat.reshape(kblk.shape)
        self.K = (_blocks_to_csr(tri, kblk, n_v) - p0 * H).tocsr()
        self.normals = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-300)

    def forces(self, displacement: np.ndarray, pressure_change: float = 0.0) -> np.ndarray:
        """``(V, 3)`` float64 external nodal forces (N, mesh frame; boundary rows = reactions) ``K u − δp g0``
        of a ``(V, 3)`` displacement (m) and a pressure change (Pa).
        """
        u = np.asarray(displacement, dtype=np.float64).reshape(-1)
        return (self.K @ u).reshape(-1, 3) - float(pressure_change) * self.g0


def _row_nanmedian(a: np.ndarray) -> np.ndarray:
    """Median of each row ignoring NaN (every row holds at least one number); = ``np.nanmedian(a, 1)``."""
    s = np.sort(a, axis=1)  # NaN sorts last
    n = np.isfinite(a).sum(axis=1)
    r = np.arange(len(a))
    return 0.5 * (s[r, (n - 1) // 2] + s[r, n // 2])


@dataclass(frozen=True)
class MembraneForceResult:
    """One frame's estimate; float64, mesh frame, N and m.  ``forces`` ``(V, 3)`` on every vertex (boundary
    rows: support reactions); ``contact_forces`` the same, boundary rows 0; ``reaction_forces`` ``(B, 3)``
    change of the clamp's force (``mesh.boundary`` order); ``total_contact_force`` ``(3,)``; ``positions``
    ``(V, 3)`` (read vertices: the membrane point on their ray; others: the model's); ``displacement``
    ``(V, 3)`` the model's (boundary 0); ``displacement_normal`` ``(V,)`` measured, outward positive, NaN
    where not read; ``pressure_change`` (Pa); ``residual_rms`` of the normal misfit; ``vertices_measured``;
    ``timings`` (s: ``'sample'``, ``'solve'``, ``'total'``); ``displacement_measured`` ``(V, 3)`` by flow +
    depth, NaN where not measured; ``vertices_flow`` how many."""

    forces: np.ndarray
    contact_forces: np.ndarray
    reaction_forces: np.ndarray
    total_contact_force: np.ndarray
    positions: np.ndarray
    displacement: np.ndarray
    displacement_normal: np.ndarray
    pressure_change: float
    residual_rms: float
    vertices_measured: int
    timings: Dict[str, float] = field(default_factory=dict)
    displacement_measured: Optional[np.ndarray] = None
    vertices_flow: int = 0


class MembraneForceEstimator:
    """Per-vertex membrane force from depth frames and the bubble pressure (docs/membrane_force.md).

    Construct once, :meth:`set_reference` with contact-free frames (assembles and factorises), then
    :meth:`estimate` per frame.  ``camera`` the depth camera; ``p_cam = R_cam_mesh p_mesh + t_cam_mesh``
    (m); ``ambient_pressure`` Pa (a barometer or :func:`isa_pressure`); ``prestress``, ``material`` as
    :class:`MembraneModel` (a number also allows no gauge pressure); ``window`` odd side (px) read around
    each vertex; readings at or beyond ``max_depth`` (m) are not membrane; a vertex is read when
    ``min_window_fraction`` of its window is; a frame needs ``min_vertex_fraction`` of the reference's read
    vertices; colour is scaled down by :data:`FLOW_SCALE` for the optical flow.

    Raises:
        SettingError: ``setting`` ``'R_cam_mesh'`` (``reason`` ``'not_rotation'``, or ``'behind_camera'``
            with ``value`` the free vertices behind it), ``'window'``, ``'ambient_pressure'``, or ``'camera'``
            (a lens folding the membrane's image or not converging; see :meth:`_check_lens`).
    """

    def __init__(self, mesh: MembraneMesh, camera: BrownConradyCamera, R_cam_mesh: np.ndarray,
                 t_cam_mesh: Sequence[float] = (0.0, 0.0, 0.0), ambient_pressure: float = 101325.0,
                 prestress: Union[str, float] = "uniform", material: bool = True, window: int = 9,
                 max_depth: float = 0.2, min_window_fraction: float = 0.5,
                 min_vertex_fraction: float = 0.8) -> None:
        R = np.asarray(R_cam_mesh, dtype=np.float64)
        if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
            raise SettingError(f"R_cam_mesh must be a 3x3 rotation, got {R.tolist()}", "R_cam_mesh",
                               R.tolist(), "not_rotation")
        if int(window) < 1 or int(window) % 2 == 0:
            raise SettingError(f"window must be a positive odd number of pixels, got {window}", "window",
                               window, "not_odd")
        if not (np.isfinite(ambient_pressure) and ambient_pressure > 0):
            raise SettingError(f"ambient pressure must be a positive value in Pa, got {ambient_pressure}",
                               "ambient_pressure", ambient_pressure, "not_positive")
        self.mesh, self.camera, self.R = mesh, camera, R
        self.t = np.asarray(t_cam_mesh, dtype=np.float64).reshape(3)
        self.ambient_pressure, self.prestress = float(ambient_pressure), prestress
        self.material, self.window = bool(material), int(window)
        self.max_depth, self.min_window_fraction, self.min_vertex_fraction = (
            float(max_depth), float(min_window_fraction), float(min_vertex_fraction))
        self._dis = None  # DIS optical flow, created with the first colour reference
        self.startup_s = float("nan")
        self.reset_reference()  # (no model until set_reference)

        # Pixel window and camera ray of every free vertex (fixed: the camera is fixed to the clamp).
        free = mesh.interior
        p_cam = mesh.points[free] @ R.T + self.t
        if (p_cam[:, 2] <= 0).any():
            raise SettingError("some free membrane vertices are behind the camera (z <= 0); check R_cam_mesh",
                               "R_cam_mesh", free[p_cam[:, 2] <= 0].tolist(), "behind_camera")
        uv = camera.project(p_cam)
        self._check_lens(camera, uv, p_cam)
        h = self.window // 2
        du, dv = np.meshgrid(np.arange(-h, h + 1), np.arange(-h, h + 1))
        self._free, self._uv, self._win_du, self._win_dv = free, uv, du.ravel(), dv.ravel()
        ray = np.c_[camera.deproject(uv[:, 0], uv[:, 1]), np.ones(len(free))]
        self._ray_len = np.linalg.norm(ray, axis=1)  # metres along the ray per metre of depth
        self._ray_mesh = (ray / self._ray_len[:, None]) @ R  # unit rays, mesh frame

    @staticmethod
    def _check_lens(camera: BrownConradyCamera, uv: np.ndarray, p_cam: np.ndarray) -> None:
        """Refuse a lens whose radial map ``r (1 + k1 r^2 + k2 r^4 + k3 r^6)`` does not increase out to the
        farthest vertex's pixel (a fold mirrors the image), or whose projection did not converge.

        Raises:
            SettingError: ``setting`` ``'camera'``, ``value`` the coefficients, ``reason`` ``'folds'``
                (``expected`` ``{'fold_radius', 'seen_radius'}``: where the map folds, how far out the
                membrane is seen) or ``'not_converged'`` (``expected`` ``{'vertices', 'of'}``).
        """
        off = np.abs(camera.deproject(uv[:, 0], uv[:, 1]) - p_cam[:, :2] / p_cam[:, 2:3]).max(axis=1)
        k1, k2, _, _, k3 = camera.coeffs
        xn, yn = (uv[:, 0] - camera.cx) / camera.fx, (uv[:, 1] - camera.cy) / camera.fy
        r_max = float(np.nanmax(np.hypot(xn, yn), initial=0.0))
        # ds/dr = 1 + 3 k1 u + 5 k2 u^2 + 7 k3 u^3 with u = r^2: its smallest positive root is the fold
        roots = np.roots([7.0 * k3, 5.0 * k2, 3.0 * k1, 1.0]) if any((k1, k2, k3)) else np.zeros(0)
        u = [float(z.real) for z in roots if abs(z.imag) < 1e-12 and 0.0 < z.real <= r_max ** 2]
        if u:
            raise SettingError(f"the camera's distortion {camera.coeffs} folds back at a normalised radius "
                               f"of {np.sqrt(min(u)):.3g} (the membrane is seen out to {r_max:.3g}): pixels "
                               "beyond show a mirror image; check the distortion coefficients", "camera",
                               camera.coeffs, "folds", {"fold_radius": float(np.sqrt(min(u))),
                                                        "seen_radius": r_max})
        bad = int((~(off <= 1e-9)).sum())
        if bad:
            raise SettingError(f"the camera's distortion {camera.coeffs}: the projection of {bad} of "
                               f"{len(off)} free membrane vertices does not converge; check the distortion "
                               "coefficients", "camera", camera.coeffs, "not_converged",
                               {"vertices": bad, "of": len(off)})

    # ------------------------------------------------------------------ input checks
    def _depth_of(self, frame: np.ndarray) -> np.ndarray:
        """Depth image (m, float64) of a depth image or an organised cloud; raises FrameRejected."""
        arr = np.asarray(frame)
        hw = (self.camera.height, self.camera.width)
        if arr.shape not in (hw, hw + (3,)):
            raise FrameRejected(f"frame must be a {hw} depth image or a {hw + (3,)} organised cloud, "
                                f"got shape {arr.shape}", "wrong_size")
        if not np.issubdtype(arr.dtype, np.floating):
            raise FrameRejected(f"frame must hold float depths (m), got dtype {arr.dtype}", "wrong_size")
        z = (arr if arr.ndim == 2 else arr[..., 2]).astype(np.float64, copy=False)
        # REP 117: ±Inf and NaN are no reading, like 0 (the windows drop them); all of them reads nothing
        if not np.isfinite(z).any():
            raise FrameRejected("frame holds no finite depth (every pixel NaN or +-Inf: no reading)", "nan")
        return z

    def _window_depths(self, z: np.ndarray, uv: np.ndarray) -> np.ndarray:
        """``(len(uv), window²)`` depths in the windows around pixels ``uv``; NaN where no membrane reading
        (0, NaN, +-Inf, negative, at or beyond ``max_depth``) and in a window leaving the image."""
        w, h = self.camera.width, self.camera.height
        cu = np.rint(uv[:, 0]).astype(np.int64)[:, None] + self._win_du
        cv = np.rint(uv[:, 1]).astype(np.int64)[:, None] + self._win_dv
        inside = ((cu >= 0) & (cu < w) & (cv >= 0) & (cv < h)).all(axis=1)
        vals = z.reshape(-1)[np.where(inside[:, None], cv * w + cu, 0)]
        ok = (vals > 0.0) & (vals < self.max_depth) & inside[:, None]  # NaN compares False
        return np.where(ok, vals, np.nan)

    def _grey_of(self, colour: np.ndarray) -> np.ndarray:
        """8-bit grey image of a colour ``(H, W, 3)`` or grey ``(H, W)`` uint8 image, scaled down by
        :data:`FLOW_SCALE`; raises FrameRejected."""
        arr = np.asarray(colour)
        hw = (self.camera.height, self.camera.width)
        if arr.shape not in (hw, hw + (3,)) or arr.dtype != np.uint8:
            raise FrameRejected(f"colour must be a {hw + (3,)} or {hw} uint8 image, got shape {arr.shape} "
                                f"dtype {arr.dtype}", "wrong_size")
        import cv2  # on first use: only the colour (optical-flow) path needs OpenCV
        if arr.ndim == 3:  # channel order only changes the grey weights, not the speckle's motion
            arr = cv2.cvtColor(np.ascontiguousarray(arr), cv2.COLOR_RGB2GRAY)
        s = 1.0 / FLOW_SCALE
        return np.ascontiguousarray(cv2.resize(arr, None, fx=s, fy=s, interpolation=cv2.INTER_AREA))

    def _material_pixels(self, grey: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(len(rows), 2)`` pixel (u, v), full resolution, where the material seen at each free vertex's
        reference pixel is now: the reference pixel plus the optical flow from the reference image."""
        flow = self._dis.calc(self._grey_ref, grey, None)  # (h, w, 2) px of the scaled image
        s, uv = FLOW_SCALE, self._uv[rows]
        # Nearest flow sample at the vertex's pixel (cell centres of the scaled image at s·(i + ½) − ½).
        iu, iv = np.clip(np.rint((uv + 0.5) / s - 0.5).astype(np.int64), 0, np.array(flow.shape[1::-1]) - 1).T
        return uv + s * flow[iv, iu].astype(np.float64)

    def _surface_at(self, vals: np.ndarray, uv: np.ndarray) -> np.ndarray:
        """``(n, 3)`` camera-frame points of the membrane at pixels ``uv`` (median of their windows' depths
        ``vals``, :meth:`_window_depths`, times the pixel's ray); NaN rows where a window is mostly empty."""
        good = np.isfinite(vals).mean(axis=1) >= self.min_window_fraction
        out = np.full((len(uv), 3), np.nan)
        slope = self.camera.deproject(uv[good, 0], uv[good, 1])
        out[good] = np.c_[slope, np.ones(good.sum())] * _row_nanmedian(vals[good])[:, None]
        return out

    @staticmethod
    def _pressure_pa(pressure: object, what: str) -> float:
        try:
            p = float(pressure)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            p = float("nan")
        if not (np.isfinite(p) and p > 0.0):
            raise FrameRejected(f"{what} pressure must be a positive absolute number in Pa, got {pressure!r}",
                                "bad_pressure")
        return p

    # ------------------------------------------------------------------ reference
    def set_reference(self, frames: Sequence[np.ndarray], pressures: Sequence[float],
                      colours: Optional[Sequence[np.ndarray]] = None) -> None:
        """Take contact-free frames as the reference shape and pressure; assemble and factorise.  ``frames``:
        depth images ``(H, W)`` (m, float) or organised clouds ``(H, W, 3)``; ``pressures``: absolute, Pa, one
        per frame; ``colours``: optional ``(H, W, 3)`` / ``(H, W)`` uint8 images on the depth pixel grid,
        which make :meth:`estimate` measure sliding and tangential forces.

        Raises (the previous reference stays in force):
            FrameRejected: a frame or colour image of the wrong size or type, a bad pressure, a reference
                pressure not above ambient, or too few vertices read.
            ValueError: ``frames`` and ``pressures`` (or ``colours``) differ in length or are empty.
        """
        t0 = time.perf_counter()
        if len(frames) == 0 or len(frames) != len(pressures):
            raise ValueError(f"need as many pressures as frames (>= 1), got {len(frames)} frames and "
                             f"{len(pressures)} pressures")
        if colours is not None and len(colours) != len(frames):
            raise ValueError(f"need as many colour images as frames, got {len(colours)} and {len(frames)}")
        grey_ref = None
        if colours is not None:  # mean of the reference images: less sensor noise in the flow's template
            grey_ref = np.rint(np.mean([self._grey_of(c) for c in colours], axis=0)).astype(np.uint8)
            if self._dis is None:
                import cv2  # DIS optical flow (Kroeger et al., ECCV 2016), 'fast': ~2 ms on a half-size image
                self._dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)
        # NaN wherever a reference frame lacks the reading
        ref = np.mean([self._window_depths(self._depth_of(f), self._uv) for f in frames], axis=0)
        p_abs = float(np.mean([self._pressure_pa(p, "reference") for p in pressures]))
        seen = np.isfinite(ref).mean(axis=1) >= self.min_window_fraction
        if seen.sum() < 3:
            raise FrameRejected(f"too few valid pixels in the reference: {int(seen.sum())} of "
                                f"{len(self._free)} free vertices read", "too_few_valid_pixels")
        p0 = p_abs - self.ambient_pressure
        if p0 < 0.0 or (p0 == 0.0 and isinstance(self.prestress, str)):  # a prescribed tension allows p0 = 0
            raise FrameRejected(f"reference pressure {p_abs:.1f} Pa is not above the ambient "
                                f"{self.ambient_pressure:.1f} Pa", "bad_pressure")
        model = MembraneModel(self.mesh, p0, prestress=self.prestress, material=self.material)

        # Normal compliance: free vertices' normal displacement per unit inward push and per unit pressure.
        free = self._free
        dof = (3 * free[:, None] + np.arange(3)).ravel()
        lu = spla.splu(model.K[dof][:, dof].tocsc())  # the last step that can fail: the old reference stays
        nrm = model.normals[free]
        # (3F, F) displacement per unit inward push (column f pushes vertex f inwards), m/N; (3F,) per Pa
        self._u_push, self._u_dp = lu.solve(block_diag(*(-nrm[:, :, None]))), lu.solve(model.g0[free].ravel())
        self._w_push = np.einsum("fk,fkc->fc", nrm, self._u_push.reshape(len(free), 3, len(free)))
        self._w_dp = np.einsum("fk,fk->f", nrm, self._u_dp.reshape(-1, 3))
        # Tangent basis per free vertex (t1 ⟂ n, t2 = n × t1) and the response to unit tangential pushes.
        helper = np.where(np.abs(nrm[:, 0:1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
        t1 = np.cross(nrm, helper)
        t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
        self._tang = tang = np.stack([t1, np.cross(nrm, t1)], axis=1)  # (F, 2, 3)
        self._u_tan = lu.solve(block_diag(*tang.transpose(0, 2, 1)))  # (3F, 2F) per tangential push, m/N
        # Tangential components (2F rows) of every response.
        self._t_push, self._t_tan, self._t_dp = (
            np.einsum("fjk,fkc->fjc", tang, r.reshape(len(free), 3, -1)).reshape(2 * len(free), *r.shape[1:])
            for r in (self._u_push, self._u_tan, self._u_dp))
        self._p_ref_cam = self._surface_at(ref, self._uv)  # the reference surface at each vertex's pixel
        self._dot = np.einsum("ij,ij->i", self._ray_mesh, nrm)  # d . n per free vertex
        self.model, self._seen, self._ref, self._p_ref = model, seen, ref[seen], p_abs
        self._grey_ref = grey_ref
        self.startup_s = time.perf_counter() - t0

    def reset_reference(self) -> None:
        """Forget the reference: :meth:`estimate` raises ``FrameRejected`` (no_reference) until the next."""
        self.model: Optional[MembraneModel] = None

    @property
    def reference_pressure(self) -> float:
        """Absolute reference pressure, Pa (mean over the reference frames); NaN without reference."""
        return self._p_ref if self.model is not None else float("nan")

    @property
    def seen_vertices(self) -> np.ndarray:
        """Indices of the free vertices read in the reference (empty without reference)."""
        return self._free[self._seen] if self.model is not None else np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ per frame
    def estimate(self, frame: np.ndarray, colour: Optional[np.ndarray] = None,
                 pressure: Optional[float] = None) -> MembraneForceResult:
        """Estimate the vertex forces of one frame: ``min_{c >= 0} |W c + δp w_p − w|`` over the vertices
        read (Lawson–Hanson), force ``−c_i n_i``, plus with colour the tangential forces fitted to the
        sliding (docs/membrane_force.md, From depth to forces); returns a :class:`MembraneForceResult`.

        ``frame``: ``(H, W)`` depth (m, float; 0, NaN, ±Inf = no reading, REP 117) or ``(H, W, 3)``
        organised cloud (its z); ``colour``: as :meth:`set_reference`'s, checked, used only with a colour
        reference; ``pressure``: absolute, Pa (None = the reference's: forces come out low under load).

        FrameRejected (nothing changed): no reference, a wrong size or dtype (depth or colour), not one
        finite depth, a bad pressure, or too few read vertices (the message names the count).
        """
        t0 = time.perf_counter()
        if self.model is None:
            raise FrameRejected("no reference: call set_reference with contact-free frames first",
                                "no_reference")
        z = self._depth_of(frame)
        grey = None if colour is None else self._grey_of(colour)  # checked even when not used
        dp = 0.0 if pressure is None else self._pressure_pa(pressure, "frame") - self._p_ref
        diff = self._window_depths(z, self._uv)[self._seen] - self._ref
        have = np.isfinite(diff).mean(axis=1) >= self.min_window_fraction
        n_seen = len(self._ref)
        if have.sum() < self.min_vertex_fraction * n_seen:
            raise FrameRejected(f"too few valid pixels: {int(have.sum())} of {n_seen} vertices have a depth "
                                f"reading (need {self.min_vertex_fraction:.0%})", "too_few_valid_pixels")
        rows = np.flatnonzero(self._seen)[have]
        ds = _row_nanmedian(diff[have]) * self._ray_len[rows]  # along the ray, m
        w = ds * self._dot[rows]
        t1 = time.perf_counter()

        b = w - dp * self._w_dp[rows]  # measured minus the pressure-only response
        # Candidate pushes: vertices read pressed in beyond the pressure response, and those not read
        cand = ~np.isin(np.arange(len(self._free)), rows[b >= 0.0])
        push, rnorm = np.zeros(len(self._free)), float(np.linalg.norm(b))  # (the residual of no push)
        if cand.any():  # (SciPy's nnls aborts the process on a matrix without columns)
            try:
                push[cand], rnorm = nnls(self._w_push[rows][:, cand], b, maxiter=10 * len(self._free))
            except RuntimeError as exc:  # iteration limit: never seen, but a node must stay up
                raise FrameRejected(f"contact solve did not converge: {exc}", "solver_failed") from exc

        # Tangential stage (docs/membrane_force.md, Sliding): the pushes stay the depth's; tangential forces
        # at the contact vertices the flow reads fit the sliding the pushes and the pressure leave.
        tforce = np.zeros(2 * len(self._free))
        u_meas = np.full((len(rows), 3), np.nan)
        n_flow = 0
        if grey is not None and self._grey_ref is not None:
            uv_now = self._material_pixels(grey, rows)
            p_now = self._surface_at(self._window_depths(z, uv_now), uv_now)
            u_meas = (p_now - self._p_ref_cam[rows]) @ self.R  # mesh frame
            fl = np.isfinite(u_meas).all(axis=1)
            n_flow, tr = int(fl.sum()), rows[fl]
            active = np.flatnonzero(push > 0.0)
            # only where the camera sees the material slide: a hidden vertex would absorb all the sliding
            tact = active[np.isin(active, tr)]
            if len(tact):
                trow, tcol = ((2 * i[:, None] + np.arange(2)).ravel() for i in (tr, tact))  # (t1, t2) rows
                t_meas = np.einsum("fjk,fk->fj", self._tang[tr], u_meas[fl]).ravel()
                resid = t_meas - dp * self._t_dp[trow] - self._t_push[trow][:, active] @ push[active]
                tforce[tcol] = np.linalg.lstsq(self._t_tan[trow][:, tcol], resid, rcond=None)[0]
        n_v = len(self.mesh.points)
        u = np.zeros((n_v, 3))
        u[self._free] = (self._u_push @ push + self._u_tan @ tforce + dp * self._u_dp).reshape(-1, 3)
        forces = self.model.forces(u, dp)
        contact = np.zeros((n_v, 3))
        contact[self._free] = (-push[:, None] * self.model.normals[self._free]
                               + np.einsum("fj,fjk->fk", tforce.reshape(-1, 2), self._tang))
        forces[self._free] = contact[self._free]  # exact where the solve is exact; drop round-off
        t2 = time.perf_counter()

        positions = self.mesh.points + u  # read vertices: on their ray, or where the flow followed them
        flowed = np.isfinite(u_meas).all(axis=1, keepdims=True)
        moved = np.where(flowed, u_meas, ds[:, None] * self._ray_mesh[rows])
        positions[self._free[rows]] = self.mesh.points[self._free[rows]] + moved
        w_full, u_full = np.full(n_v, np.nan), np.full((n_v, 3), np.nan)  # NaN where not read
        w_full[self._free[rows]], u_full[self._free[rows]] = w, u_meas
        return MembraneForceResult(
            forces=forces, contact_forces=contact, reaction_forces=forces[self.mesh.boundary].copy(),
            total_contact_force=contact.sum(axis=0), positions=positions, displacement=u,
            displacement_normal=w_full, pressure_change=dp, residual_rms=float(rnorm / np.sqrt(len(rows))),
            vertices_measured=int(len(rows)),
            timings={"sample": t1 - t0, "solve": t2 - t1, "total": time.perf_counter() - t0},
            displacement_measured=u_full, vertices_flow=n_flow)


# ---------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class WrenchComparison:
    """:func:`compare_with_wrench`: ``lag`` (F/T frame = estimate frame + lag), ``correlation`` (Pearson,
    |estimate| vs |F − bias| on loaded frames), ``ratio_at_peak``, ``rms_error`` (N), ``frames``, ``bias``
    ``(3,)`` N, ``peak_frame``."""

    lag: int
    correlation: float
    ratio_at_peak: float
    rms_error: float
    frames: np.ndarray
    bias: np.ndarray
    peak_frame: int


def compare_with_wrench(estimate: np.ndarray, wrench_force: np.ndarray,
                        bias_frames: Sequence[int] = range(30), threshold: float = 0.5,
                        max_lag: int = 3) -> WrenchComparison:
    """Compare contact-force magnitudes ``estimate`` ``(N, 3)`` or ``(N,)`` with a force/torque reading
    ``wrench_force`` ``(N, 3)`` (N, any fixed frame; bias its mean over ``bias_frames``) on the frames with
    ``|F − bias| > threshold``, at the best lag within ``±max_lag``.  ValueError: length mismatch,
    non-finite values, no loaded frame."""
    est = np.asarray(estimate, dtype=np.float64)
    mag_est = np.linalg.norm(est, axis=1) if est.ndim == 2 else est.ravel()
    ft = np.asarray(wrench_force, dtype=np.float64)
    if ft.ndim != 2 or ft.shape[1] != 3 or len(ft) != len(mag_est):
        raise ValueError(f"wrench_force must be ({len(mag_est)}, 3), got {ft.shape}")
    if not (np.isfinite(ft).all() and np.isfinite(mag_est).all()):
        raise ValueError("estimate and wrench must be finite")
    bias = ft[list(bias_frames)].mean(axis=0)
    mag_ft = np.linalg.norm(ft - bias, axis=1)
    n = len(mag_ft)
    fits = []  # (lag, correlation, loaded estimate frames with an F/T partner)
    for lag in range(-int(max_lag), int(max_lag) + 1):
        i = np.arange(max(0, -lag), min(n, n - lag))
        i = i[mag_ft[i + lag] > threshold]
        if len(i) >= 3:
            fits.append((lag, float(np.corrcoef(mag_est[i], mag_ft[i + lag])[0, 1]), i))
    if not fits:
        raise ValueError(f"no frame with |F - bias| > {threshold} N")
    lag, corr, frames = max(fits, key=lambda fit: fit[1])  # the first of equal ones
    e, f = mag_est[frames], mag_ft[frames + lag]
    k = int(np.argmax(f))
    rms = float(np.sqrt(np.mean((e - f) ** 2)))
    return WrenchComparison(lag, corr, float(e[k] / f[k]), rms, frames, bias, int(frames[k]))


def peak_distance(forces: np.ndarray, positions: np.ndarray, point: Sequence[float]) -> np.ndarray:
    """``(N,)`` float64 distances (m) from ``point`` to the vertex of the largest force, per frame;
    ``forces`` ``(N, V, 3)`` or ``(V, 3)``, ``positions`` ``(V, 3)`` or ``(N, V, 3)``.  ValueError: shapes."""
    f = np.asarray(forces, dtype=np.float64)
    f = f[None] if f.ndim == 2 else f
    pos = np.asarray(positions, dtype=np.float64)
    if pos.ndim == 2 and f.ndim == 3 and pos.shape == f.shape[1:]:
        pos = np.broadcast_to(pos, f.shape)
    if f.ndim != 3 or f.shape[2] != 3 or pos.shape != f.shape:
        raise ValueError(f"forces (N, V, 3) and positions (V, 3) or (N, V, 3) must match, got {f.shape} "
                         f"and {np.shape(positions)}")
    k = np.argmax(np.linalg.norm(f, axis=2), axis=1)
    return np.linalg.norm(pos[np.arange(len(f)), k] - np.asarray(point, dtype=np.float64), axis=1)
