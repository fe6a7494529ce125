"""Raw subscribe / publish glue of the node's hot path (``fast_path``).

With ``fast_path`` (the default) the node's two per-step inputs,
``joint_states`` and ``contacts``, are subscribed with ``raw=True``: rclpy
hands over the serialised bytes, which :mod:`vsf_sensor_ros.ros.messages.wire` decodes
with numpy into records carrying the attribute names of the generated
messages, so the node's handlers run unchanged.  Bytes that are not a
well-formed message of the topic's type are rejected with the decoder's
reason (``malformed_cdr``, ``unsupported_encapsulation``) before any handler
runs.  Outputs (``<s>/predicted``, ``<s>/residual``, ``<s>/jacobian``) are
serialised by the same module and published as bytes.

Without ``fast_path`` the standard message objects are used on both sides:
the reference implementation, which gives the same messages (same bytes up
to the padding bytes rmw leaves uninitialised; ``test/ros/test_fast_path.py``).
"""
from __future__ import annotations

from typing import Any, Callable, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState, PointCloud2

from .messages import wire as cdr
from .messages import readings as enc
from .messages.stamps import ns_to_stamp

Reject = Callable[[str, str], None]

CDR_REJECT_REASONS = ("malformed_cdr", "unsupported_encapsulation")
"""Reject reasons of the fast path's decoders (counted on ``/diagnostics`` like every other)."""


def _decoding(decode: Callable[[Any], Any], handler: Callable[[Any], None],
              reject: Reject, topic: str) -> Callable[[Any], None]:
    """A raw-subscription callback: ``handler(decode(raw))``, or ``reject`` on bad bytes."""
    def callback(raw: Any) -> None:
        try:
            msg = decode(raw)
        except cdr.CdrDecodeError as exc:
            return reject(exc.reason, f"{topic}: {exc}")
        handler(msg)
    return callback


def subscribe_inputs(node: Node, qos: QoSProfile, on_joint_state: Callable[[Any], None],
                     on_contacts: Callable[[Any], None], reject: Reject, fast: bool) -> Tuple[Any, Any]:
    """Create the ``joint_states`` and ``contacts`` subscriptions (in that order).

    Args:
        node: the node owning them.
        qos: their QoS.
        on_joint_state, on_contacts: the node's handlers; they take a
            ``JointState`` / ``PointCloud2`` or, on the fast path, the
            :class:`~vsf_sensor_ros.ros.messages.wire.RawJointState` /
            :class:`~vsf_sensor_ros.ros.messages.wire.RawPointCloud2` decoded from the bytes.
        reject: ``f(reason, detail)``, the node's reject counter (bad bytes).
        fast: raw subscriptions decoded with :mod:`~vsf_sensor_ros.ros.messages.wire`.

    Returns:
        ``(joint_states subscription, contacts subscription)``.
    """
    if not fast:
        return (node.create_subscription(JointState, "joint_states", on_joint_state, qos),
                node.create_subscription(PointCloud2, "contacts", on_contacts, qos))
    return (node.create_subscription(
                JointState, "joint_states",
                _decoding(cdr.decode_joint_state, on_joint_state, reject, "joint_states"), qos, raw=True),
            node.create_subscription(
                PointCloud2, "contacts",
                _decoding(cdr.decode_pointcloud2, on_contacts, reject, "contacts"), qos, raw=True))


def vector_message(layout: enc.SensorLayout, values: np.ndarray, stamp_ns: int, fast: bool) -> Any:
    """A predicted/residual message: CDR bytes (``fast``) or the message object.

    Args:
        layout: the sensor's layout.
        values: ``(#meas,)`` float64, SI.
        stamp_ns: header stamp (ns, non-negative).
        fast: serialise with :func:`vsf_sensor_ros.ros.messages.wire.encode_vector`.
    """
    if fast:
        return cdr.encode_vector(layout, values, stamp_ns)
    return enc.encode_vector(layout, values, ns_to_stamp(stamp_ns))


def jacobian_message(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, stamp_ns: int,
                     frame_id: str, fast: bool) -> Any:
    """A sparse COO Jacobian cloud: CDR bytes (``fast``) or the ``PointCloud2`` object.

    Args:
        rows, cols, values: COO entries (``cols`` in contacts-message rows).
        stamp_ns: header stamp (ns).
        frame_id: the world frame.
        fast: serialise with :func:`vsf_sensor_ros.ros.messages.wire.encode_jacobian`.
    """
    if fast:
        return cdr.encode_jacobian(rows, cols, values, stamp_ns, frame_id)
    return enc.encode_jacobian(rows, cols, values, ns_to_stamp(stamp_ns), frame_id)


__all__ = ["CDR_REJECT_REASONS", "jacobian_message", "subscribe_inputs", "vector_message"]
