"""The node's two message encodings, one chosen at start-up (``fast_path``): bytes or objects.

:data:`BYTES` (``fast_path: true``, the default): the node's two per-step inputs,
``joint_states`` and ``contacts``, are subscribed with ``raw=True``: rclpy hands over the
serialised bytes, which :mod:`.wire` decodes with numpy into records carrying the attribute
names of the generated messages, so the node's handlers run unchanged.  Bytes that are not a
well-formed message of the topic's type are rejected with the decoder's reason
(``malformed_cdr``, ``unsupported_encapsulation``) before any handler runs.  Outputs
(``<s>/predicted``, ``<s>/residual``, ``<s>/jacobian``) are serialised by each reading kind's
codec (:meth:`~.readings.ReadingCodec.to_bytes`) and published as bytes.  This halves the
node's CPU time per message.

:data:`OBJECTS` (``fast_path: false``): the standard message objects on both sides, the
reference implementation, which gives the same messages (same bytes up to the padding bytes
rmw leaves uninitialised; ``test/ros/test_fast_path.py``).

Markers always use message objects (rviz only; not on the hot path).
"""
from __future__ import annotations

from typing import Any, Callable, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState, PointCloud2

from . import readings, wire
from .stamps import ns_to_stamp

Reject = Callable[[str, str], None]

CDR_REJECT_REASONS = ("malformed_cdr", "unsupported_encapsulation")
"""Reject reasons of the byte decoders (counted on ``/diagnostics`` like every other)."""


def _decoding(decode: Callable[[Any], Any], handler: Callable[[Any], None],
              reject: Reject, topic: str) -> Callable[[Any], None]:
    """A raw-subscription callback: ``handler(decode(raw))``, or ``reject`` on bad bytes."""
    def callback(raw: Any) -> None:
        try:
            msg = decode(raw)
        except wire.CdrDecodeError as exc:
            return reject(exc.reason, f"{topic}: {exc}")
        handler(msg)
    return callback


class Encoding:
    """How the node reads its per-step inputs and writes its per-step outputs.

    Attributes:
        name: ``bytes`` or ``objects`` (logs, tests).
    """

    name = ""

    def subscribe_inputs(self, node: Node, qos: QoSProfile, on_joint_state: Callable[[Any], None],
                         on_contacts: Callable[[Any], None], reject: Reject,
                         contacts_type: Any = None) -> Tuple[Any, Any]:
        """Create the ``joint_states`` and ``contacts`` subscriptions (in that order).

        Args:
            node: the node owning them.
            qos: their QoS.
            on_joint_state, on_contacts: the node's handlers; they take a ``JointState`` /
                ``PointCloud2`` or the :class:`~.wire.RawJointState` /
                :class:`~.wire.RawPointCloud2` decoded from the bytes.
            reject: ``f(reason, detail)``, the node's reject counter (bad bytes).
            contacts_type: the contacts message class when it is not ``PointCloud2``
                (gz ``Contacts``, :mod:`.gz_contacts`): subscribed as message objects in
                either encoding, the byte decoders have no layout for it.

        Returns:
            ``(joint_states subscription, contacts subscription)``.
        """
        joints = self._joint_states(node, qos, on_joint_state, reject)
        if contacts_type is not None and contacts_type is not PointCloud2:
            return joints, node.create_subscription(contacts_type, "contacts", on_contacts, qos)
        return joints, self._contacts(node, qos, on_contacts, reject)

    def _joint_states(self, node: Node, qos: QoSProfile, on_joint_state: Callable[[Any], None],
                      reject: Reject) -> Any:
        """The ``joint_states`` subscription of this encoding."""
        raise NotImplementedError

    def _contacts(self, node: Node, qos: QoSProfile, on_contacts: Callable[[Any], None],
                  reject: Reject) -> Any:
        """The ``contacts`` (``PointCloud2``) subscription of this encoding."""
        raise NotImplementedError

    def vector(self, layout: readings.SensorLayout, values: np.ndarray, stamp_ns: int) -> Any:
        """A predicted / residual message of ``values`` (``(#meas,)`` float64, SI), stamped ``stamp_ns``."""
        raise NotImplementedError

    def jacobian(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, stamp_ns: int,
                 frame_id: str) -> Any:
        """A sparse COO Jacobian cloud (``cols`` in contacts-message rows), frame ``frame_id``."""
        raise NotImplementedError


class _Objects(Encoding):
    name = "objects"

    def _joint_states(self, node, qos, on_joint_state, reject):
        return node.create_subscription(JointState, "joint_states", on_joint_state, qos)

    def _contacts(self, node, qos, on_contacts, reject):
        return node.create_subscription(PointCloud2, "contacts", on_contacts, qos)

    def vector(self, layout, values, stamp_ns):
        return layout.codec.to_message(layout, values, ns_to_stamp(stamp_ns))

    def jacobian(self, rows, cols, values, stamp_ns, frame_id):
        return readings.encode_jacobian(rows, cols, values, ns_to_stamp(stamp_ns), frame_id)


class _Bytes(Encoding):
    name = "bytes"

    def _joint_states(self, node, qos, on_joint_state, reject):
        return node.create_subscription(
            JointState, "joint_states",
            _decoding(wire.decode_joint_state, on_joint_state, reject, "joint_states"), qos, raw=True)

    def _contacts(self, node, qos, on_contacts, reject):
        return node.create_subscription(
            PointCloud2, "contacts",
            _decoding(wire.decode_pointcloud2, on_contacts, reject, "contacts"), qos, raw=True)

    def vector(self, layout, values, stamp_ns):
        return layout.codec.to_bytes(layout, values, stamp_ns)

    def jacobian(self, rows, cols, values, stamp_ns, frame_id):
        return wire.encode_jacobian(rows, cols, values, stamp_ns, frame_id)


OBJECTS: Encoding = _Objects()
BYTES: Encoding = _Bytes()


def encoding(fast_path: bool) -> Encoding:
    """The encoding of the ``fast_path`` parameter: :data:`BYTES` when true, else :data:`OBJECTS`."""
    return BYTES if fast_path else OBJECTS


__all__ = ["BYTES", "CDR_REJECT_REASONS", "Encoding", "OBJECTS", "encoding"]
