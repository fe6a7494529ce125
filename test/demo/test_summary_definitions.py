"""Every key a demo or replay summary writes is defined in the file's own ``definitions``.

A key counts as defined when its dotted path, or a dotted tail of it, is a key of
``definitions`` (``sensors.punyo_pad.published`` -> ``published``; ``pressure.gain_fit_in_sample.
sensor_gain`` -> ``gain_fit_in_sample.sensor_gain``).  Tables keyed by data (topics, sensor
names, the pad's per-axis blocks, the out-of-sample entry) are defined as a whole.
"""
import numpy as np
import pytest

from vsf_sensor_ros.demo import replay_analysis, summary as demo_summary

OPAQUE = {"published", "definitions", "topics", "left_out", "not_recorded", "after_tare", "in_contact",
          "gain_fit_out_of_sample", "tare_offset"}


def undefined_keys(summary, definitions):
    """Dotted paths of ``summary`` with no definition (sensor-name levels skipped)."""
    missing = []

    def defined(path):
        parts = path.split(".")
        return any(".".join(parts[i:]) in definitions for i in range(len(parts)))

    def walk(node, path):
        for k, v in node.items():
            full = f"{path}.{k}" if path else k
            if not defined(full):
                missing.append(full)
            if k == "sensors" and isinstance(v, dict):
                for entry in v.values():
                    walk(entry, full)
            elif isinstance(v, dict) and k not in OPAQUE:
                walk(v, full)
    walk(summary, "")
    return missing


def test_the_rule_finds_an_undefined_key_and_accepts_dotted_tails():
    defs = {"a": "", "b.c": "", "x": ""}
    assert undefined_keys({"a": 1, "b": {"c": 2}, "sensors": {"s1": {"x": 1, "y": 2}}}, defs) == \
        ["b", "sensors", "sensors.y"]


def test_every_key_of_a_demo_summary_is_defined(tmp_path):
    """The four-step pad session of test_demo_analysis, built by hand, through build_summary."""
    import torch
    from rclpy.serialization import serialize_message

    from test.demo.test_analysis import _wrench
    from vsf_sensor_ros.demo.demo import build_parser
    from vsf_sensor_ros.demo.config import resolve_config
    from vsf_sensor_ros.demo.session import SessionResult
    from vsf_sensor_ros.demo.tare import TareResult
    from vsf_sensor_ros.demo.recorder import TopicLog
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    from vsf_sensor_ros.sensor import ContactState
    cfg = resolve_config(build_parser().parse_args(["--world", "embedded", "--out", str(tmp_path)]))
    touch = {("punyo", "object"): ContactState(torch.zeros(1, 3, dtype=torch.float64),
                                               torch.tensor([[0.0, 0.0, -6.0]], dtype=torch.float64))}
    contacts = TopicLog("/contacts", "sensor_msgs/msg/PointCloud2")
    pred = TopicLog("/punyo_pad/predicted", "geometry_msgs/msg/WrenchStamped")
    meas = TopicLog("/punyo_pad/measured", "geometry_msgs/msg/WrenchStamped")
    for k in range(4):
        t = float(k + 1)
        contacts.data.append(serialize_message(contacts_to_pointcloud2(touch if k >= 2 else {},
                                                                       cfg.contact_body_names, t)))
        contacts.recv_ns.append(k * 100)
        pred.data.append(serialize_message(_wrench(t, (0.0, 0.0, -1.0 * k))))
        pred.recv_ns.append(k * 100 + 20)
        pred.sent_ns.append(k * 100 + 10)
        meas.data.append(serialize_message(_wrench(t, (0.1, 0.0, -1.0 * k))))
        meas.recv_ns.append(k * 100 + 5)
    session = SessionResult({"/contacts": contacts, pred.topic: pred, meas.topic: meas}, {},
                            TareResult(success=True, request_ns=30, response_ns=50), 1.0)
    series = {s.name: demo_summary.series_for(session, s) for s in cfg.sensors}
    summary = demo_summary.build_summary(cfg, session, series, {"path": "run.mcap", "counts": {}})
    summary["sensors"]["punyo_pad"].update({"tare_status": "tared"})
    assert summary["pad_vs_klampt_native"] is not None          # its keys are walked too
    assert undefined_keys(summary, summary["definitions"]) == []
    # one meaning per name: the simulator's mode and a stream's source are two keys
    assert summary["measured_source_mode"] == "independent"
    assert summary["sensors"]["punyo_pad"]["measured_source"] == "klampt-native-contact-sensor"
    # the pad: contact-free before the tare = step 1 (residual x 0.1); after it, step 2 is next to
    # the contact of step 3, so no step is contact-free; in contact: steps 3 and 4
    pad = summary["sensors"]["punyo_pad"]
    assert pad["residual_rms_contact_free_before_tare"] == pytest.approx(np.sqrt(0.01 / 3))
    assert pad["residual_rms_contact_free_after_tare"] is None
    assert pad["residual_rms_in_contact_after_tare"] == pytest.approx(np.sqrt(0.01 / 3))


def test_the_replay_definitions_name_every_key_analyse_writes():
    """The keys of analyse()'s summary, as main() completes it (the full run checks a real one)."""
    p = {"frames_contact": 1, "correlation": 1.0, "predicted_over_measured_dp": 1.0,
         "residual_rms_contact_after_tare_pa": 1.0, "residual_rms_contact_after_gain_in_sample_pa": 1.0,
         "lag_s": 0.0, "lag_fitted_in_sample": True, "frames_compared": 1,
         "gain_fit_in_sample": {"sensor_gain": 1.0, "contact_samples": 1, "relative_std_error": 0.0},
         "base_area_m2": 1.0, "effective_base_area_in_sample_m2": 1.0, "gain_fit_out_of_sample": {},
         "library_vs_node_max_abs_pa": 0.0, "peak_measured_dp_pa": 1.0, "peak_predicted_dp_pa": 1.0}
    summary = {"recording": {"frames": 1, "duration_s": 1.0},
               "tare": {"frame": 0, "success": True, "offset_pa": 1.0, "answer": ""},
               "published": {"a": 1}, "pressure": p, "definitions": {}, "wall_s": 1.0,
               "bag": {"path": "", "topics": 1}}
    assert undefined_keys(summary, replay_analysis.DEFINITIONS) == []
    # in-sample fits say so in their keys; the tare-only slope and the sensor gain are two names
    assert all("in_sample" in k for k in p if "gain" in k and "out_of_sample" not in k)
    assert p.get("gain") is None
