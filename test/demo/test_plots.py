"""Demo figures are written as PNG images of the requested content and reject bad shapes."""
import numpy as np
import pytest
from matplotlib.image import imread

from vsf_sensor_ros.demo.plots import components_figure, plot_force_field, pressure_figure


def test_pressure_plot_is_a_png_with_drawn_content(tmp_path):
    t = np.linspace(0.0, 4.0, 200)
    meas = 300.0 + 50.0 * (t > 2.0)
    pred = 50.0 * (t > 2.0) + 300.0 * (t > 1.0)
    out = tmp_path / "pressure.png"
    pressure_figure(t, meas, t, pred, tare_t=1.0, contact_span=(2.0, 4.0),
                    measured_label="measured (synthetic: model + offset + noise)").savefig(out)
    img = imread(out)
    assert img.shape[0] > 400 and img.shape[1] > 600
    # Not a blank canvas: plenty of non-white pixels (lines, axes, text).
    assert (img[..., :3].min(axis=2) < 0.9).mean() > 0.02


def test_force_field_plot_accepts_matching_shapes_and_rejects_others(tmp_path):
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(50, 3)) * 0.05
    f = np.zeros((50, 3))
    f[:5, 2] = -1.0
    out = plot_force_field(pts, f, tmp_path / "ff.png", measured_forces=f * 1.1, frame="punyo",
                           measured_label="measured (synthetic)")
    assert imread(out).shape[1] > 800  # two panels side by side
    with pytest.raises(ValueError, match=r"\(50, 3\) and \(49, 3\)"):
        plot_force_field(pts, f[:49], tmp_path / "bad.png")
    with pytest.raises(ValueError):
        plot_force_field(pts, f, tmp_path / "bad.png", measured_forces=f[:, :2])


def test_component_plot_checks_label_count(tmp_path):
    t = np.arange(10) * 0.1
    pred = np.stack([t, -t, 2 * t, 0 * t], axis=1)
    out = tmp_path / "pad.png"
    components_figure(t, pred + 0.1, t, pred, ["contact", "fx", "fy", "fz"], tare_t=0.3, title="pad",
                      unit="N").savefig(out)
    assert out.exists()
    with pytest.raises(ValueError):
        components_figure(None, None, t, pred, ["a", "b", "c"])
