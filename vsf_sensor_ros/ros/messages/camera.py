"""Decoders of the bubble camera and pressure messages into ``membrane_force_node``'s arrays;
:class:`InputRejected` names the value (docs/membrane_force.md)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
from sensor_msgs.msg import CameraInfo, FluidPressure, Image, PointCloud2
from std_msgs.msg import Float32, Float64

from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
from vsf_sensor_ros.sensor.membrane_force_estimator import FrameRejected

from .pointcloud import read_cloud
from .wire import CloudDecodeError, as_byte_array, float_columns


#: ``pressure_type`` parameter values → message class.
PRESSURE_TYPES: Dict[str, type] = {
    "std_msgs/msg/Float32": Float32, "std_msgs/msg/Float64": Float64,
    "sensor_msgs/msg/FluidPressure": FluidPressure,
}
#: ``Image`` encodings → (dtype, channels): the depth ones :func:`depth_from_image` reads, the colour
#: ones :func:`colour_from_image` reads.
DEPTH_ENCODINGS: Dict[str, Tuple[type, int]] = {"16UC1": (np.uint16, 1), "mono16": (np.uint16, 1),
                                                "32FC1": (np.float32, 1)}
COLOUR_ENCODINGS: Dict[str, Tuple[type, int]] = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3),
                                                 "mono8": (np.uint8, 1)}


class InputRejected(FrameRejected):
    """An input message the node cannot use (a ValueError); ``reason``: its ``/diagnostics`` counter key."""


def _pixels(msg: Image, encodings: Dict[str, Tuple[type, int]], what: str) -> np.ndarray:
    """A view of ``msg``'s pixels, ``(height, width[, channels])``; InputRejected (naming ``what``) as the
    callers say."""
    dtype, ch = next((v for k, v in encodings.items() if k.lower() == msg.encoding.lower()), (None, 0))
    if dtype is None:
        raise InputRejected(f"{what} encoding {msg.encoding!r} is not one of {', '.join(encodings)}",
                            "bad_encoding")
    dt = np.dtype(dtype).newbyteorder(">" if msg.is_bigendian else "<")
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    buf = as_byte_array(msg.data)
    row = w * ch * dt.itemsize
    if h < 1 or w < 1 or step < row or buf.size < h * step:
        why = ("has no pixels" if h < 1 or w < 1 else f"is shorter than a row of {row} bytes" if step < row
               else f"needs {h * step} bytes, got {buf.size}")
        raise InputRejected(f"{what} {w}x{h} ({msg.encoding}) with step {step} {why}", "wrong_size")
    img = np.ndarray((h, w, ch), dtype=dt, buffer=buf, strides=(step, ch * dt.itemsize, dt.itemsize))
    return img[..., 0] if ch == 1 else img


def depth_from_image(msg: Image, depth_unit_m: float) -> np.ndarray:
    """``(height, width)`` float64 depth (m) of a ``16UC1`` / ``mono16`` (x ``depth_unit_m``) or
    ``32FC1`` ``Image`` (``step``, ``is_bigendian`` honoured; holes kept).  InputRejected:
    ``bad_encoding``, ``wrong_size`` (data shorter than ``height × step``, ``step`` below a row)."""
    img = _pixels(msg, DEPTH_ENCODINGS, "depth image")
    return img.astype(np.float64) * (float(depth_unit_m) if img.dtype.kind == "u" else 1.0)


def colour_from_image(msg: Image) -> np.ndarray:
    """A copy of an ``rgb8`` / ``bgr8`` / ``mono8`` ``Image``'s pixels: ``(height, width, 3)`` uint8
    RGB, or ``(height, width)`` for ``mono8``.  InputRejected: ``bad_encoding``, ``wrong_size``."""
    img = _pixels(msg, COLOUR_ENCODINGS, "colour image")   # copied: the frame may wait for its depth partner
    return np.array(img[..., ::-1] if msg.encoding.lower() == "bgr8" else img, order="C")


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


def camera_info_text(msg: Optional[CameraInfo]) -> str:
    """``'640x480 camera (K [..], plumb_bob D [..])'``: a CameraInfo's size, intrinsics and
    distortion, for messages; equal texts: one camera model."""
    if msg is None:
        return "no camera"
    return (f"{int(msg.width)}x{int(msg.height)} camera (K {[float(v) for v in msg.k]}, "
            f"{msg.distortion_model or 'no model'} D {[float(v) for v in msg.d]})")
