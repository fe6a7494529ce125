"""Session numbers of the demo: cloud decoding, latency, stamp matching, residuals around the tare."""
import struct

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import FluidPressure, PointCloud2, PointField

from vsf_sensor_ros.demo.analysis import (Series, agreement_numbers, cloud_fields, latencies_ms,
                                          match_by_stamp, reading_vector, sensor_numbers)
from vsf_sensor_ros.ros.messages.wire import CloudDecodeError


def padded_cloud(big_endian: bool) -> PointCloud2:
    """2 rows x 3 points; fx float32 @0, fy float32 @4, fz float64 @8, 4 pad bytes per point,
    8 pad bytes per row.  Point (r, c) holds fx = 10r + c, fy = -(10r + c), fz = 0.5 (10r + c)."""
    e = ">" if big_endian else "<"
    rows = []
    for r in range(2):
        row = b"".join(struct.pack(e + "ffd4x", 10 * r + c, -(10 * r + c), 0.5 * (10 * r + c))
                       for c in range(3))
        rows.append(row + b"\xff" * 8)
    msg = PointCloud2()
    msg.height, msg.width = 2, 3
    msg.fields = [PointField(name="fz", offset=8, datatype=PointField.FLOAT64, count=1),
                  PointField(name="fx", offset=0, datatype=PointField.FLOAT32, count=1),
                  PointField(name="fy", offset=4, datatype=PointField.FLOAT32, count=1)]
    msg.is_bigendian = big_endian
    msg.point_step, msg.row_step = 20, 68
    msg.data = b"".join(rows)
    return msg


@pytest.mark.parametrize("big_endian", [False, True])
def test_cloud_fields_honour_offsets_padding_rows_and_endianness(big_endian):
    got = cloud_fields(padded_cloud(big_endian), ["fx", "fy", "fz"])
    ids = np.array([0, 1, 2, 10, 11, 12], dtype=float)
    np.testing.assert_array_equal(got, np.stack([ids, -ids, 0.5 * ids], axis=1))


def test_cloud_fields_reject_missing_field_and_short_data():
    msg = padded_cloud(False)
    with pytest.raises(CloudDecodeError) as err:
        cloud_fields(msg, ["x"])
    assert err.value.reason == "missing_field"
    msg.data = msg.data[:-10]
    with pytest.raises(CloudDecodeError) as err:
        cloud_fields(msg, ["fx"])
    assert err.value.reason == "bad_size"


def test_reading_vector_by_kind_compares_what_the_node_compares():
    w = WrenchStamped()
    w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = 3.0, 0.0, -4.0
    w.wrench.torque.x = 9.0
    # wrench: force only; torque never predicted.
    assert reading_vector(w, "geometry_msgs/msg/WrenchStamped", "wrench").tolist() == [3.0, 0.0, -4.0]
    # load: predicted carries the value on force.z; a measured load cell may use any axis -> |f| = 5.
    assert reading_vector(w, "geometry_msgs/msg/WrenchStamped", "load").tolist() == [-4.0]
    assert reading_vector(w, "geometry_msgs/msg/WrenchStamped", "load", measured=True).tolist() == [5.0]
    # measured hPa x 100 = Pa; predicted values are not scaled.
    p = FluidPressure()
    p.fluid_pressure = 2.5
    assert reading_vector(p, "sensor_msgs/msg/FluidPressure", "pressure", True, 100.0).tolist() == [250.0]
    assert reading_vector(p, "sensor_msgs/msg/FluidPressure", "pressure", False, 100.0).tolist() == [2.5]
    with pytest.raises(ValueError):
        reading_vector(w, "geometry_msgs/msg/WrenchStamped", "pressure")
    with pytest.raises(ValueError, match="'torque'"):
        reading_vector(w, "geometry_msgs/msg/WrenchStamped", "torque")


def test_latency_is_prediction_receive_minus_contacts_receive_for_equal_stamps():
    contacts_stamp = np.array([100, 200, 300, 200])      # 200 resent later: first receive counts
    contacts_recv = np.array([1_000_000, 2_000_000, 3_000_000, 9_000_000])
    pred_stamp = np.array([200, 100, 400])                # 400 has no contacts message: dropped
    pred_recv = np.array([2_500_000, 4_000_000, 5_000_000])
    # 2.5 ms - 2.0 ms = 0.5 ms; 4.0 ms - 1.0 ms = 3.0 ms.
    np.testing.assert_allclose(latencies_ms(contacts_stamp, contacts_recv, pred_stamp, pred_recv), [0.5, 3.0])


def series(stamps, recv, values):
    return Series(np.array(stamps, np.int64), np.array(recv, np.int64),
                  [np.atleast_1d(np.asarray(v, float)) for v in values])


def test_match_by_stamp_pairs_equal_stamps_only():
    meas = series([1, 2, 3], [0, 0, 0], [10.0, 20.0, 30.0])
    pred = series([3, 1, 5], [7, 8, 9], [29.0, 12.0, 0.0])
    m = match_by_stamp(meas, pred)
    assert m["stamp_ns"].tolist() == [3, 1]
    assert m["pred_recv_ns"].tolist() == [7, 8]
    assert m["residual"].ravel().tolist() == [1.0, -2.0]  # 30 - 29, 10 - 12


def test_residual_rms_is_split_at_the_tare_call_by_prediction_receive_time():
    # Six samples; tare request sent at wall 35, answered at 45; step 5 (stamp 5) is in contact.
    stamps = [0, 1, 2, 3, 4, 5]
    pred_recv = [10, 20, 30, 40, 50, 60]     # 10, 20, 30 before; 40 in flight; 50, 60 after
    measured = [103.0, 104.0, 102.0, 110.0, 200.0, 301.0]
    predicted = [0.0, 0.0, 0.0, 0.0, 199.0, 302.0]
    numbers = sensor_numbers(series(stamps, pred_recv, predicted), series(stamps, [0] * 6, measured),
                             contacts_stamp_ns=np.array(stamps),
                             contacts_recv_ns=np.array([8, 17, 26, 35, 44, 53]),
                             tare_request_ns=35, tare_response_ns=45, contact_stamp_ns=np.array([5]))
    assert numbers["published"] == 6
    assert numbers["matched_samples"] == 6
    # Before, contact-free: residuals 103, 104, 102 -> sqrt((103² + 104² + 102²) / 3).
    assert numbers["residual_rms_contact_free_before_tare"] == pytest.approx(
        np.sqrt((103**2 + 104**2 + 102**2) / 3))
    # After: contact-free step 4 (residual 1), in contact step 5 (residual -1).
    assert numbers["residual_rms_contact_free_after_tare"] == pytest.approx(1.0)
    assert numbers["residual_rms_in_contact_after_tare"] == pytest.approx(1.0)
    # Latencies (ns -> ms): 2, 3, 4, 5, 6, 7 ns = 2e-6 ... 7e-6 ms; median 4.5e-6 ms.
    assert numbers["latency_ms_p50"] == pytest.approx(4.5e-6)
    assert numbers["latency_samples"] == 6


def test_sensor_numbers_without_measurements_or_tare_report_none():
    pred = series([0, 1], [5, 6], [[1.0, 2.0], [3.0, 4.0]])
    numbers = sensor_numbers(pred, None, np.array([0, 1]), np.array([1, 2]), None, None)
    assert numbers["published"] == 2
    assert all(numbers[k] is None for k in ("residual_rms_contact_free_before_tare",
                                            "residual_rms_contact_free_after_tare",
                                            "residual_rms_in_contact_after_tare"))
    empty = sensor_numbers(series([], [], []), None, np.array([0]), np.array([1]), None, None)
    assert empty["published"] == 0 and empty["latency_ms_p50"] is None


def test_tare_split_uses_send_times_when_known_not_late_receive_times():
    # Prediction 2 was sent at 30 (before the request at 35) but received late, at 50.
    stamps = [0, 1, 2, 3]
    pred = Series(np.array(stamps), np.array([10, 20, 50, 60]), [np.array([0.0]), np.array([0.0]),
                                                                 np.array([0.0]), np.array([100.0])],
                  sent_ns=np.array([9, 19, 30, 55]))
    meas = series(stamps, [0] * 4, [100.0, 100.0, 100.0, 101.0])
    n = sensor_numbers(pred, meas, np.array(stamps), np.array([5, 15, 25, 50]), 35, 45)
    assert n["residual_rms_contact_free_before_tare"] == pytest.approx(100.0)  # 0, 1, 2 (by send time)
    assert n["residual_rms_contact_free_after_tare"] == pytest.approx(1.0)     # sample 3 only
    assert n["residual_rms_in_contact_after_tare"] is None                    # no step in contact
    # Latency stays receive-to-receive: 5, 5, 25, 10 ns -> p50 = 7.5e-6 ms.
    assert n["latency_ms_p50"] == pytest.approx(7.5e-6)


def test_agreement_numbers_per_axis_after_the_tare_and_in_contact():
    # Five pad samples (fx, fy, fz); the tare answer arrived at wall 25, so samples sent at
    # 10 and 20 do not count.  Steps 3 and 4 are in contact.
    stamps = [0, 1, 2, 3, 4]
    pred = series(stamps, [10, 20, 30, 40, 50],
                  [[0, 0, 0], [0, 0, 0], [0, 0, 0], [1.0, 0, -5.0], [0, 2.0, -8.0]])
    meas = series(stamps, [0] * 5,
                  [[9, 9, 9], [9, 9, 9], [0.3, 0, -0.4], [1.0, 0, -5.6], [0.5, 2.0, -7.2]])
    got = agreement_numbers(pred, meas, 25, np.array([3, 4, 7]), ["force_x", "force_y", "force_z"])
    # Residuals kept: step 2 (0.3, 0, -0.4), step 3 (0, 0, -0.6), step 4 (0.5, 0, 0.8).
    a = got["after_tare"]
    assert a["samples"] == 3
    assert a["rms"]["force_x"] == pytest.approx(np.sqrt((0.09 + 0.25) / 3))
    assert a["rms"]["force_y"] == 0.0
    assert a["rms"]["force_z"] == pytest.approx(np.sqrt((0.16 + 0.36 + 0.64) / 3))
    assert a["max_abs"] == pytest.approx({"force_x": 0.5, "force_y": 0.0, "force_z": 0.8})
    assert a["mean"] == pytest.approx({"force_x": 0.8 / 3, "force_y": 0.0, "force_z": -0.2 / 3})
    c = got["in_contact"]
    assert c["samples"] == 2
    assert c["rms"]["force_x"] == pytest.approx(np.sqrt(0.25 / 2))
    assert c["rms"]["force_z"] == pytest.approx(np.sqrt((0.36 + 0.64) / 2))
    assert c["max_abs"]["force_z"] == pytest.approx(0.8)
    # Without a tare every matched sample counts: max |fx| = 9.
    everything = agreement_numbers(pred, meas, None, np.array([]), ["x", "y", "z"])
    assert everything["after_tare"]["max_abs"]["x"] == 9


def test_agreement_numbers_empty_and_wrong_width():
    pred = series([0], [10], [[1.0, 2.0]])
    meas = series([0], [0], [[1.0, 2.0]])
    empty = agreement_numbers(pred, meas, 100, np.array([0]), ["a", "b"])
    none = {"a": None, "b": None}
    assert empty["after_tare"] == {"samples": 0, "mean": none, "rms": none, "max_abs": none}
    with pytest.raises(ValueError):
        agreement_numbers(pred, meas, None, np.array([0]), ["a", "b", "c"])


def _wrench(t_s: float, f) -> WrenchStamped:
    w = WrenchStamped()
    w.header.stamp.sec, w.header.stamp.nanosec = int(t_s), int(round((t_s % 1) * 1e9))
    w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in f)
    return w


def test_summary_labels_every_measured_stream_and_reports_the_pad_against_klampt(tmp_path):
    """A four-step recording of the pad alone, built by hand (serialized like the recorder stores it)."""
    import torch
    from rclpy.serialization import serialize_message

    from vsf_sensor_ros.demo.demo import build_parser
    from vsf_sensor_ros.demo.config import resolve_config
    from vsf_sensor_ros.demo.session import SessionResult
    from vsf_sensor_ros.demo.tare import TareResult
    from vsf_sensor_ros.demo.recorder import TopicLog
    from vsf_sensor_ros.demo.summary import build_summary, series_for, summary_table
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    from vsf_sensor_ros.sensor import ContactState
    cfg = resolve_config(build_parser().parse_args(["--world", "embedded", "--out", str(tmp_path)]))
    bodies = cfg.contact_body_names                      # [punyo, object, table]
    touch = {("punyo", "object"): ContactState(torch.zeros(1, 3, dtype=torch.float64),
                                               torch.tensor([[0.0, 0.0, -6.0]], dtype=torch.float64))}
    contacts = TopicLog("/contacts", "sensor_msgs/msg/PointCloud2")
    for k, t in enumerate([1.0, 2.0, 3.0, 4.0]):        # the bubble touches the box at 3 s and 4 s
        contacts.data.append(serialize_message(contacts_to_pointcloud2(touch if k >= 2 else {}, bodies, t)))
        contacts.recv_ns.append(k * 100)
    pred = TopicLog("/punyo_pad/predicted", "geometry_msgs/msg/WrenchStamped")
    meas = TopicLog("/punyo_pad/measured", "geometry_msgs/msg/WrenchStamped")
    # Predicted sent at wall 10, 110, 210, 310; the tare answer arrives at 50 (step 1 is before it).
    for k, (p, m) in enumerate([((0, 0, 0), (0.05, 0.05, 0.05)), ((0, 0, 0), (0.1, -0.2, 0.0)),
                                ((0.5, 0, -6.0), (0.2, 0.1, -6.4)), ((0.4, 0.1, -6.2), (0.4, 0.4, -5.7))]):
        t = float(k + 1)
        pred.data.append(serialize_message(_wrench(t, p)))
        pred.recv_ns.append(k * 100 + 20)
        pred.sent_ns.append(k * 100 + 10)
        meas.data.append(serialize_message(_wrench(t, m)))
        meas.recv_ns.append(k * 100 + 5)
    session = SessionResult({"/contacts": contacts, pred.topic: pred, meas.topic: meas}, {},
                            TareResult(success=True, request_ns=30, response_ns=50), 1.0)
    series = {s.name: series_for(session, s) for s in cfg.sensors}
    summary = build_summary(cfg, session, series, {})
    labels = {n: s["measured_source"] for n, s in summary["sensors"].items()}
    assert labels == {"punyo_pressure": "synthetic-model", "punyo_force": "synthetic-model",
                      "punyo_pad": "klampt-native-contact-sensor", "object_load": "simulator-contact-forces"}
    assert summary["measured_source_mode"] == "independent"
    agree = summary["pad_vs_klampt_native"]
    assert agree["sensor"] == "punyo_pad" and agree["units"] == "N"
    # After the tare: steps 2..4, residuals (0.1, -0.2, 0), (-0.3, 0.1, -0.4), (0, 0.3, 0.5).
    a = agree["after_tare"]
    assert a["samples"] == 3
    assert a["rms"]["force_x"] == pytest.approx(np.sqrt((0.01 + 0.09) / 3))
    assert a["rms"]["force_y"] == pytest.approx(np.sqrt((0.04 + 0.01 + 0.09) / 3))
    assert a["rms"]["force_z"] == pytest.approx(np.sqrt((0.16 + 0.25) / 3))
    assert a["max_abs"] == pytest.approx({"force_x": 0.3, "force_y": 0.3, "force_z": 0.5})
    # In contact: steps 3 and 4.
    c = agree["in_contact"]
    assert c["samples"] == 2
    assert c["rms"]["force_z"] == pytest.approx(np.sqrt((0.16 + 0.25) / 2))
    assert c["max_abs"]["force_x"] == pytest.approx(0.3)
    assert c["mean"]["force_z"] == pytest.approx(0.05)              # (-0.4 + 0.5) / 2
    assert {"pad_vs_klampt_native", "measured_source"} <= set(summary["definitions"])
    text = summary_table(summary)
    # fz: after the tare mean 0.1 / 3, rms sqrt(0.41 / 3) = 0.370; in contact mean 0.05, rms
    # sqrt(0.41 / 2) = 0.453; max 0.5.
    assert "after tare (3 samples)" in text and "z 0.0333/0.37/0.5" in text \
        and "in contact (2 samples)" in text and "z 0.05/0.453/0.5" in text, text
    row = next(line for line in text.splitlines() if line.startswith("punyo_pad"))
    assert row.split()[1] == "klampt-native-contact-sensor"
