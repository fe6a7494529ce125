"""A recorded session's per-sensor numbers: latency, residuals around the tare (summary.json)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from vsf_sensor_ros.demo.recorder import TopicLog
from vsf_sensor_ros.ros.messages.pointcloud import read_cloud
from vsf_sensor_ros.ros.messages.wire import float_columns
from vsf_sensor_ros.ros.kinds import reading_codecs


def cloud_fields(msg: Any, names: Sequence[str]) -> np.ndarray:
    """``(height*width, len(names))`` float64 fields of a ``PointCloud2``.  Raises ValueError
    (``CloudDecodeError``): a field missing, twice, not ``count 1`` or unknown, or the data short."""
    return float_columns(read_cloud(msg, names, exact_size=False), names)


def reading_vector(msg: Any, msgtype: str, kind: str, measured: bool = False,
                   scale: float = 1.0) -> np.ndarray:
    """The flat float64 SI vector the node compares of a ``kind`` reading (``scale`` x ``measured`` ones).
    Raises ValueError: unknown ``kind``, or its message type is not ``msgtype``."""
    codec = reading_codecs().get(kind)
    if codec is None:
        raise ValueError(f"unknown sensor kind {kind!r}; use one of {tuple(reading_codecs())}")
    if msgtype != codec.message_type:
        raise ValueError(f"a {kind} sensor reading must be {codec.message_type}, got {msgtype!r}")
    vec = codec.recorded_vector(msg, measured)
    return vec * scale if measured else vec


def touches(data: bytes, bodies: Sequence[int]) -> bool:
    """Whether a serialized contacts cloud has a point with ``body1`` or ``body2`` in ``bodies`` (empty:
    any).  Raises ValueError: a non-empty cloud without those fields."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2

    from vsf_sensor_ros.demo.recorder import cloud_point_count
    if cloud_point_count(data) == 0:
        return False
    if not bodies:
        return True
    idx = cloud_fields(deserialize_message(data, PointCloud2), ("body1", "body2"))
    return bool(np.isin(idx, np.asarray(list(bodies), dtype=np.float64)).any())


@dataclass
class Series:
    """One topic's readings in receive order: ``(M,)`` int64 stamps and receive times ns, M float64
    vectors (:func:`reading_vector`), ``(M,)`` send times or None."""

    stamp_ns: np.ndarray
    recv_ns: np.ndarray
    values: List[np.ndarray]
    sent_ns: Optional[np.ndarray] = None

    @property
    def event_ns(self) -> np.ndarray:
        """Send times when known, else receive times (what the tare split uses)."""
        return self.recv_ns if self.sent_ns is None else self.sent_ns

    @classmethod
    def from_log(cls, log: TopicLog, kind: str, measured: bool = False, scale: float = 1.0) -> "Series":
        """Decode every message of ``log`` with :func:`reading_vector` (same arguments)."""
        msgs = log.decode()
        sent = np.array(log.sent_ns, dtype=np.int64) if len(log.sent_ns) == len(log.data) else None
        return cls(np.array(log.stamps_ns(), dtype=np.int64), np.array(log.recv_ns, dtype=np.int64),
                   [reading_vector(m, log.msgtype, kind, measured, scale) for m in msgs], sent)


def first_index_by_stamp(stamp_ns: np.ndarray) -> Dict[int, int]:
    """Each stamp -> the index of its first occurrence."""
    return {s: i for i, s in reversed(list(enumerate(stamp_ns.tolist())))}


def latencies_ms(contacts_stamp_ns: np.ndarray, contacts_recv_ns: np.ndarray,
                 pred_stamp_ns: np.ndarray, pred_recv_ns: np.ndarray) -> np.ndarray:
    """``(m,)`` float64 ms from contacts to prediction receipt, per prediction (int64 ns) with a contacts
    message of its stamp."""
    first = first_index_by_stamp(np.asarray(contacts_stamp_ns))
    pairs = [(i, first[s]) for i, s in enumerate(np.asarray(pred_stamp_ns).tolist()) if s in first]
    if not pairs:
        return np.zeros(0)
    pi, ci = (np.array(v, dtype=np.int64) for v in zip(*pairs))
    return (np.asarray(pred_recv_ns)[pi] - np.asarray(contacts_recv_ns)[ci]) / 1e6


def match_by_stamp(measured: Series, predicted: Series) -> Dict[str, np.ndarray]:
    """Samples of equal stamps and shapes: ``{"stamp_ns": (m,), "pred_recv_ns": (m,) event_ns, "residual":
    (m, D) measured − predicted}`` (``(0, 0)`` when none)."""
    first = first_index_by_stamp(measured.stamp_ns)
    pairs = [(i, first[s]) for i, s in enumerate(predicted.stamp_ns.tolist())
             if s in first and measured.values[first[s]].shape == predicted.values[i].shape]
    if not pairs:
        return {"stamp_ns": np.zeros(0, np.int64), "pred_recv_ns": np.zeros(0, np.int64),
                "residual": np.zeros((0, 0))}
    i = np.array([a for a, _ in pairs])
    return {"stamp_ns": predicted.stamp_ns[i].astype(np.int64),
            "pred_recv_ns": predicted.event_ns[i].astype(np.int64),
            "residual": np.stack([measured.values[b] - predicted.values[a] for a, b in pairs])}


def rms(x: np.ndarray) -> Optional[float]:
    """RMS over all entries; ``None`` for an empty array (JSON ``null``)."""
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else None


def percentile(x: np.ndarray, q: float) -> Optional[float]:
    """``q``-th percentile (linear interpolation); ``None`` for an empty array."""
    return float(np.percentile(x, q)) if x.size else None


def sensor_numbers(predicted: Series, measured: Optional[Series], contacts_stamp_ns: np.ndarray,
                   contacts_recv_ns: np.ndarray, tare_request_ns: Optional[int],
                   tare_response_ns: Optional[int],
                   contact_stamp_ns: Optional[np.ndarray] = None,
                   near_contact_stamp_ns: Optional[np.ndarray] = None) -> Dict[str, object]:
    """A sensor's ``summary.json`` numbers (``summary.DEFINITIONS``); int64 ns: contacts stamps / receipts
    ``(K,)``, tare request / answer (or None), steps in contact ``(C,)`` and next to them (not contact-free).
    ``None`` where nothing is averaged; without a tare request every free sample counts as before it."""
    lat = latencies_ms(contacts_stamp_ns, contacts_recv_ns, predicted.stamp_ns, predicted.recv_ns)
    out: Dict[str, object] = {
        "published": int(len(predicted.values)),
        "latency_ms_p50": percentile(lat, 50),
        "latency_ms_p99": percentile(lat, 99),
        "latency_ms_max": float(lat.max()) if lat.size else None,
        "latency_samples": int(lat.size),
        "matched_samples": 0,
        "residual_rms_contact_free_before_tare": None,
        "residual_rms_contact_free_after_tare": None,
        "residual_rms_in_contact_after_tare": None,
    }
    if measured is None:
        return out
    m = match_by_stamp(measured, predicted)
    res, sent = m["residual"], m["pred_recv_ns"]
    out["matched_samples"] = int(res.shape[0])

    def member(stamps: Optional[np.ndarray]) -> np.ndarray:
        return np.isin(m["stamp_ns"], np.zeros(0, np.int64) if stamps is None
                       else np.asarray(stamps, dtype=np.int64))
    touching = member(contact_stamp_ns)
    free = ~(touching | member(near_contact_stamp_ns))
    before = np.ones(len(res), bool) if tare_request_ns is None else sent < tare_request_ns
    out["residual_rms_contact_free_before_tare"] = rms(res[before & free])
    if tare_response_ns is not None:
        after = sent > tare_response_ns
        out["residual_rms_contact_free_after_tare"] = rms(res[after & free])
        out["residual_rms_in_contact_after_tare"] = rms(res[after & touching])
    return out


def agreement_numbers(predicted: Series, measured: Series, after_ns: Optional[int],
                      contact_stamp_ns: np.ndarray, names: Sequence[str]) -> Dict[str, object]:
    """Measured − predicted per component ``names``, matched by stamp, published after ``after_ns`` (all
    when None): ``{"after_tare" | "in_contact": {"samples": n, "mean" | "rms" | "max_abs": {name: float or
    None}}}``.  Raises ValueError: vectors without ``len(names)`` entries."""
    m = match_by_stamp(measured, predicted)
    res = m["residual"]
    if res.size and res.shape[1] != len(names):
        raise ValueError(f"readings have {res.shape[1]} components but {len(names)} names: {list(names)}")
    keep = np.ones(len(res), dtype=bool) if after_ns is None else m["pred_recv_ns"] > after_ns
    res, stamps = res[keep], m["stamp_ns"][keep]
    touching = np.isin(stamps, np.asarray(contact_stamp_ns, dtype=np.int64))

    def block(r: np.ndarray) -> Dict[str, object]:
        n = int(r.shape[0])
        return {"samples": n,
                "mean": {k: (float(r[:, i].mean()) if n else None) for i, k in enumerate(names)},
                "rms": {k: (rms(r[:, i]) if n else None) for i, k in enumerate(names)},
                "max_abs": {k: (float(np.abs(r[:, i]).max()) if n else None) for i, k in enumerate(names)}}
    return {"after_tare": block(res), "in_contact": block(res[touching])}
