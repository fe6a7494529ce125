"""Decoders of the bubble camera and pressure messages into ``membrane_force_node``'s arrays;
:class:`InputRejected` names the value (docs/membrane_force.md)."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
from sensor_msgs.msg import CameraInfo, FluidPressure, Image, PointCloud2
from std_msgs.msg import Float32, Float64

from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera

from .pointcloud import read_cloud
from .wire import CloudDecodeError, as_byte_array, float_columns


#: ``pressure_type`` parameter values → message class.
PRESSURE_TYPES: Dict[str, type] = {
    "std_msgs/msg/Float32": Float32, "std_msgs/msg/Float64": Float64,
    "sensor_msgs/msg/FluidPressure": FluidPressure,
}
_DEPTH_ENCODINGS = {"16uc1": np.uint16, "mono16": np.uint16, "32fc1": np.float32}
#: colour ``Image`` encodings :func:`colour_from_image` reads → channels per pixel.
COLOUR_ENCODINGS: Dict[str, int] = {"rgb8": 3, "bgr8": 3, "mono8": 1}


class InputRejected(ValueError):
    """An input message the node cannot use; ``reason``: its ``/diagnostics`` counter key."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def depth_from_image(msg: Image, depth_unit_m: float) -> np.ndarray:
    """``(height, width)`` float64 depth (m) of a ``16UC1`` / ``mono16`` (x ``depth_unit_m``) or
    ``32FC1`` ``Image`` (``step``, ``is_bigendian`` honoured; holes kept).  InputRejected:
    ``bad_encoding``, ``wrong_size`` (data shorter than ``height × step``, ``step`` below a row)."""
    enc = msg.encoding.lower()
    if enc not in _DEPTH_ENCODINGS:
        raise InputRejected(f"depth image encoding {msg.encoding!r} is not 16UC1, mono16 or 32FC1",
                            "bad_encoding")
    dt = np.dtype(_DEPTH_ENCODINGS[enc]).newbyteorder(">" if msg.is_bigendian else "<")
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    buf = as_byte_array(msg.data)
    if h < 1 or w < 1 or step < w * dt.itemsize or buf.size < h * step:
        raise InputRejected(f"depth image {w}x{h} with step {step} needs {h * step} bytes, got {buf.size}",
                            "wrong_size")
    img = np.ndarray((h, w), dtype=dt, buffer=buf, strides=(step, dt.itemsize))
    if dt.kind == "u":
        return img.astype(np.float64) * float(depth_unit_m)
    return img.astype(np.float64)


def colour_from_image(msg: Image) -> np.ndarray:
    """A copy of an ``rgb8`` / ``bgr8`` / ``mono8`` ``Image``'s pixels: ``(height, width, 3)`` uint8
    RGB, or ``(height, width)`` for ``mono8``.  InputRejected: ``bad_encoding``, ``wrong_size``."""
    enc = msg.encoding.lower()
    if enc not in COLOUR_ENCODINGS:
        raise InputRejected(f"colour image encoding {msg.encoding!r} is not one of "
                            f"{', '.join(COLOUR_ENCODINGS)}", "bad_encoding")
    ch = COLOUR_ENCODINGS[enc]
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    buf = as_byte_array(msg.data)
    if h < 1 or w < 1 or step < w * ch or buf.size < h * step:
        raise InputRejected(f"colour image {w}x{h} ({msg.encoding}) with step {step} needs "
                            f"{max(h, 0) * max(step, w * ch)} bytes, got {buf.size}", "wrong_size")
    shape, strides = ((h, w, ch), (step, ch, 1)) if ch > 1 else ((h, w), (step, 1))
    img = np.ndarray(shape, dtype=np.uint8, buffer=buf, strides=strides)
    if enc == "bgr8":
        img = img[..., ::-1]
    return np.array(img, order="C")   # a copy: the frame may wait for its depth partner


def depth_from_cloud(msg: PointCloud2) -> np.ndarray:
    """Depth (``z``, m) of an organised camera-frame cloud, ``(height, width)`` float64;
    InputRejected ``bad_cloud_layout``."""
    try:
        pts = read_cloud(msg, ["z"], exact_size=False)
    except CloudDecodeError as exc:
        raise InputRejected(f"camera cloud: {exc}", "bad_cloud_layout") from None
    with np.errstate(invalid="ignore"):
        z = float_columns(pts, ["z"])[:, 0]
    return z.reshape(int(msg.height), int(msg.width))


def camera_from_info(msg: CameraInfo) -> BrownConradyCamera:
    """The camera model of a ``CameraInfo`` (``plumb_bob`` / ``inverse_brown_conrady`` / none);
    InputRejected ``bad_camera_info`` (another distortion model, bad ``K`` or ``D``, no size)."""
    model = msg.distortion_model.lower()
    d = [float(x) for x in msg.d]
    if model not in ("", "plumb_bob", "inverse_brown_conrady", "brown_conrady") and any(d):
        raise InputRejected(f"distortion model {msg.distortion_model!r} is not supported (plumb_bob, "
                            f"inverse Brown-Conrady)", "bad_camera_info")
    try:
        return BrownConradyCamera.from_camera_info(int(msg.width), int(msg.height), list(msg.k), d)
    except ValueError as exc:
        raise InputRejected(f"camera info: {exc}", "bad_camera_info") from None


def pressure_pa(msg: Any, scale: float) -> float:
    """Absolute pressure in Pa of a ``Float32`` / ``Float64`` / ``FluidPressure`` times ``scale``;
    InputRejected ``bad_pressure`` (another type, non-finite or not positive)."""
    if isinstance(msg, FluidPressure):
        value = float(msg.fluid_pressure)
    elif isinstance(msg, (Float32, Float64)):
        value = float(msg.data)
    else:
        raise InputRejected(f"pressure message of type {type(msg).__name__} is not Float32, Float64 or "
                            "FluidPressure", "bad_pressure")
    p = value * float(scale)
    if not (np.isfinite(p) and p > 0.0):
        raise InputRejected(f"pressure {value!r} x scale {scale} = {p} Pa is not a positive absolute "
                            "pressure", "bad_pressure")
    return p


def camera_info_text(msg: Optional[CameraInfo]) -> str:
    """``'640x480 camera, K [..]'``: a CameraInfo's size and intrinsics, for messages."""
    if msg is None:
        return "no camera"
    return (f"{int(msg.width)}x{int(msg.height)} camera (K {[float(v) for v in msg.k]}, "
            f"{msg.distortion_model or 'no model'} D {[float(v) for v in msg.d]})")


def same_camera_info(a: CameraInfo, b: Optional[CameraInfo]) -> bool:
    """The two CameraInfos describe one camera model (size, K, distortion model and D)."""
    return b is not None and (int(a.width), int(a.height), a.distortion_model.lower()) == \
        (int(b.width), int(b.height), b.distortion_model.lower()) \
        and np.array_equal(np.asarray(a.k, dtype=float), np.asarray(b.k, dtype=float)) \
        and np.array_equal(np.asarray(a.d, dtype=float), np.asarray(b.d, dtype=float))
