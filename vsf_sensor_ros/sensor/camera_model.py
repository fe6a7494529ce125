"""Depth camera model of a RealSense sensor (the Punyo's inner camera): pixel <-> ray with the inverse
Brown-Conrady lens model (equations and conventions: docs/membrane_force.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

from .errors import InputError, SettingError

__all__ = ["BrownConradyCamera"]


@dataclass(frozen=True)
class BrownConradyCamera:
    """Pinhole camera with librealsense's inverse Brown–Conrady distortion: ``width``, ``height``, ``fx``,
    ``fy``, ``cx``, ``cy`` (px, pixel centres at integer u, v), ``coeffs`` ``(k1, k2, p1, p2, k3)``.
    SettingError naming the field: size < 1, focal length not positive, centre not finite, bad coeffs."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    coeffs: Tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if int(self.width) < 1 or int(self.height) < 1:
            small = "width" if int(self.width) < 1 else "height"
            raise SettingError(f"camera size must be at least 1x1, got {self.width}x{self.height}", small,
                               getattr(self, small), "not_positive", 1)
        for name, rule, reason in (("fx", "a positive finite focal length in px", "not_positive"),
                                   ("fy", "a positive finite focal length in px", "not_positive"),
                                   ("cx", "finite", "not_finite"), ("cy", "finite", "not_finite")):
            value = float(getattr(self, name))
            if not np.isfinite(value) or (reason == "not_positive" and value <= 0.0):
                raise SettingError(f"camera {name} must be {rule}, got {value}", name, getattr(self, name),
                                   reason)
        coeffs = tuple(float(c) for c in self.coeffs)
        if len(coeffs) != 5 or not all(np.isfinite(coeffs)):
            raise SettingError(f"distortion coefficients must be 5 finite numbers (k1, k2, p1, p2, k3), "
                               f"got {self.coeffs!r}", "coeffs", self.coeffs, "invalid", 5)
        object.__setattr__(self, "coeffs", coeffs)
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "height", int(self.height))

    @classmethod
    def from_camera_info(cls, width: int, height: int, k: Sequence[float],
                         d: Sequence[float] = ()) -> "BrownConradyCamera":
        """Build from ``CameraInfo`` fields ``width``, ``height``, ``k`` (row-major 3×3), ``d`` (up to 5,
        padded with 0).  InputError: ``argument`` ``'k'`` (not 9 numbers, ``reason`` ``'size'``) or ``'d'``
        (a nonzero term beyond the fifth, ``'too_many'``); ``value`` as given (a list)."""
        k = np.asarray(k, dtype=np.float64).ravel()
        if k.size != 9:
            raise InputError(f"CameraInfo.k must hold 9 numbers, got {k.size}", "k", k.tolist(), "size", 9)
        d = [float(x) for x in d]
        if any(x != 0.0 for x in d[5:]):
            raise InputError(f"only 5 distortion coefficients (k1, k2, p1, p2, k3) are supported, got {d}",
                             "d", d, "too_many", 5)
        d = (d + [0.0] * 5)[:5]
        return cls(width, height, float(k[0]), float(k[4]), float(k[2]), float(k[5]), tuple(d))

    @classmethod
    def fit_to_rays(cls, width: int, height: int, u: np.ndarray, v: np.ndarray,
                    slopes: np.ndarray) -> Tuple["BrownConradyCamera", float]:
        """``(camera, max |slope misfit|)``: the camera whose rays best match ``slopes`` ``(N, 2)`` (``x/z,
        y/z``) at pixels ``u``, ``v`` (N >= 9): pinhole fit, then SciPy least squares.  InputError
        (``'slopes'``): ``'count'``, ``'not_finite'`` or ``'not_growing'`` (no positive focal length)."""
        from scipy.optimize import least_squares

        u = np.asarray(u, dtype=np.float64).ravel()
        v = np.asarray(v, dtype=np.float64).ravel()
        s = np.asarray(slopes, dtype=np.float64).reshape(-1, 2)
        if not (len(u) == len(v) == len(s)) or len(u) < 9:
            raise InputError(f"need as many pixels as rays, at least 9: got u {len(u)}, v {len(v)}, "
                             f"slopes {len(s)}", "slopes", (len(u), len(v), len(s)), "count", 9)
        if not np.isfinite(s).all():
            rows = np.flatnonzero(~np.isfinite(s).all(axis=1)).tolist()
            raise InputError(f"{len(rows)} ray(s) are not finite", "slopes", rows, "not_finite")
        # pinhole start: x/z = (u - cx)/fx, y/z = (v - cy)/fy, linear in (1/fx, cx/fx)
        (ax, bx), (ay, by) = (np.linalg.lstsq(np.c_[q, np.ones_like(q)], s[:, i], rcond=None)[0]
                              for i, q in enumerate((u, v)))
        if not (np.isfinite([ax, ay]).all() and ax > 0.0 and ay > 0.0):
            raise InputError(f"the rays do not grow with u and v (pinhole slopes {ax:.3g}, {ay:.3g} per px): "
                             "no camera looks that way", "slopes", (float(ax), float(ay)), "not_growing")
        start = np.array([1.0 / ax, 1.0 / ay, -bx / ax, -by / ay, 0.0, 0.0, 0.0, 0.0, 0.0])

        def misfit(x: np.ndarray) -> np.ndarray:
            cam = cls(width, height, *x[:4], tuple(x[4:]))
            return (cam.deproject(u, v) - s).ravel()
        # scales: px for the intrinsics, 0.01 for the coefficients
        fit = least_squares(misfit, start, x_scale=np.r_[np.full(4, 10.0), np.full(5, 0.01)],
                            xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200)
        cam = cls(width, height, *map(float, fit.x[:4]), tuple(map(float, fit.x[4:])))
        return cam, float(np.abs(misfit(fit.x)).max())

    def distort(self, xn: np.ndarray, yn: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Ray slopes ``(x/z, y/z)`` (float64, input shape) of normalised pixel coordinates ``xn``, ``yn``."""
        k1, k2, p1, p2, k3 = self.coeffs
        r2 = xn * xn + yn * yn
        f = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
        xy = xn * yn
        return (xn * f + 2.0 * p1 * xy + p2 * (r2 + 2.0 * xn * xn),
                yn * f + 2.0 * p2 * xy + p1 * (r2 + 2.0 * yn * yn))

    def deproject(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``(..., 2)`` float64 ray slopes ``x/z, y/z`` (camera frame) of pixels ``u``, ``v`` (px, one shape).
        """
        xn = (np.asarray(u, dtype=np.float64) - self.cx) / self.fx
        yn = (np.asarray(v, dtype=np.float64) - self.cy) / self.fy
        return np.stack(self.distort(xn, yn), axis=-1)

    def project(self, points: np.ndarray, iterations: int = 20) -> np.ndarray:
        """Sub-pixel ``(u, v)`` ``(..., 2)`` float64 seeing each camera-frame point ``(..., 3)`` (m, z > 0):
        :meth:`deproject` inverted by Newton's method (at most ``iterations``); may lie outside the image.
        InputError (``'points'``): ``'shape'``, or ``'not_in_front'`` (z <= 0 or not finite; a count).
        """
        p = np.asarray(points, dtype=np.float64)
        if p.shape[-1] != 3:
            raise InputError(f"points must have shape (..., 3), got {p.shape}", "points", p.shape, "shape",
                             "(..., 3)")
        bad = ~np.isfinite(p).all(axis=-1) | (p[..., 2] <= 0.0)
        if bad.any():
            raise InputError(f"{int(bad.sum())} point(s) are not finite or not in front of the camera "
                             "(z <= 0)", "points", int(bad.sum()), "not_in_front")
        tx, ty = p[..., 0] / p[..., 2], p[..., 1] / p[..., 2]
        xn, yn = tx, ty
        k1, k2, p1, p2, k3 = self.coeffs
        for _ in range(int(iterations)):
            ex, ey = np.subtract(self.distort(xn, yn), (tx, ty))
            if max(np.abs(ex).max(initial=0.0), np.abs(ey).max(initial=0.0)) < 1e-14:
                break
            r2 = xn * xn + yn * yn
            f = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
            df = k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2)  # d f / d r2
            # Jacobian of the polynomial in (xn, yn).
            j11 = f + 2.0 * xn * xn * df + 2.0 * p1 * yn + 6.0 * p2 * xn
            j12 = 2.0 * xn * yn * df + 2.0 * p1 * xn + 2.0 * p2 * yn
            j22 = f + 2.0 * yn * yn * df + 2.0 * p2 * xn + 6.0 * p1 * yn
            det = j11 * j22 - j12 * j12   # (the Jacobian is symmetric)
            xn = xn - (j22 * ex - j12 * ey) / det
            yn = yn - (-j12 * ex + j11 * ey) / det
        return np.stack([xn * self.fx + self.cx, yn * self.fy + self.cy], axis=-1)
