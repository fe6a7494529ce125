"""``<s>/calibrate_gain``: fit a sensor's gain from buffered contact samples with ``GainCalibrator``.

A tare removes a constant offset; a real sensor can also show a different
*change* under load than the model predicts (a Punyo bubble's membrane carries
part of the load: the pressure rise is smaller than ``F·n / A_base``).  The
library's :class:`~vsf_sensor_ros.sensor.GainCalibrator` fits that gain by
least squares through the origin, on top of the tare offset, from pairs of
measured and predicted samples that have contact.

In the node, every measured message paired with the prediction of the same
stamp is buffered (:class:`~vsf_sensor_ros.ros.tare.PairedSample`: the
measured vector in SI -- the message's unit times ``measured_scale`` -- and the
step's ``SimState``).  Samples with contact on what the sensor senses (the
same test a tare uses to reject a sample) also go into a second bounded
buffer, :func:`record`, so a long contact-free stretch after a poke does not
push them out; it holds the most recent :func:`contact_buffer_size` of them
and is cleared with the pairing buffers (simulator reset, a measured source
that restarted).

The service (``std_srvs/Trigger``) exists only for sensors the calibrator is
:meth:`~vsf_sensor_ros.sensor.GainCalibrator.compatible` with (the Punyo
pressure sensor today).  It uses every buffered contact sample whose measured
vector is complete (a message that does not carry an entry cannot fit it) and
the calibrator's defaults: at least :data:`MIN_SAMPLES` contact samples, a
relative standard error of the gain of at most :data:`MAX_RELATIVE_ERROR`.
On a refusal the answer is ``success=false`` with the calibrator's reason and
nothing changes; on success the sensor's calibration gets ``'gain'`` (its
tare kept), the answer names the gain, the sample count and the relative
standard error, and ``save_calibration`` writes it with the tare.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Deque, Tuple

import numpy as np

from ..sensor import GainCalibrator
from ..sensor.base_sensor import BaseSensor
from .messages import readings as enc
from .tare import PairedSample

if TYPE_CHECKING:  # the handle type only, for annotations (no import cycle at run time)
    from .sensor_handle import SensorHandle

GAIN_KEY = "gain"
MIN_SAMPLES = 10
"""Fewest contact samples a fit uses (the calibrator refuses below)."""
MAX_RELATIVE_ERROR = 0.2
"""Largest relative standard error of the fitted gain (the calibrator refuses above: ill-conditioned)."""


def supports_gain(sensor: BaseSensor) -> bool:
    """True when ``GainCalibrator`` can fit this sensor (it applies a ``'gain'`` calibration entry)."""
    return GainCalibrator().compatible(sensor)


def contact_buffer_size(buffer_size: int) -> int:
    """Capacity of a sensor's contact-sample buffer: ``max(4 * alignment_buffer_size, 100)``, as the
    buffer of all paired samples."""
    return max(4 * int(buffer_size), 100)


def new_buffer(buffer_size: int) -> Deque[PairedSample]:
    """An empty contact-sample buffer for ``alignment_buffer_size`` = ``buffer_size``."""
    return deque(maxlen=contact_buffer_size(buffer_size))


def record(buffer: Deque[PairedSample], sample: PairedSample) -> None:
    """Keep ``sample`` in ``buffer`` when it has contact on what the sensor senses (oldest drop out)."""
    if not sample.contact_free:
        buffer.append(sample)


def calibrate_gain(h: "SensorHandle") -> Tuple[bool, str]:
    """Fit sensor ``h``'s gain from its buffered contact samples; ``(success, answer text)``.

    Success: ``"<s>: gain <k> from <n> contact samples (relative standard error <e>); RMS of
    measured - predicted change <before> -> <after> <unit>"``; the sensor's ``'gain'`` is set,
    its tare kept, ``stats.calibration`` updated.  Refusal: ``"<s>: cannot calibrate gain:
    <reason>"`` (too few contact samples, nothing excited, a non-positive gain, an ill-conditioned
    fit, a sensor type without a gain); the calibration is unchanged.
    """
    if not supports_gain(h.sensor):
        return False, f"{h.name}: cannot calibrate gain: the {h.config.type} model has no gain"
    samples = [s for s in getattr(h, "contact_pairs", ()) if np.isfinite(s.measured).all()]
    calibrator = GainCalibrator(min_samples=MIN_SAMPLES, max_relative_error=MAX_RELATIVE_ERROR)
    try:
        used = calibrator.fit(h.sensor, [s.state for s in samples], [s.measured for s in samples])
    except ValueError as exc:
        return False, f"{h.name}: cannot calibrate gain: {exc}"
    fit = calibrator.last_fit
    gain = fit.gain[fit.fitted]
    rel = fit.relative_std_error[fit.fitted]
    shared = np.allclose(gain, gain[0])
    k = f"{float(gain[0]):.9g}" if shared else f"{gain.size} entries, mean {gain.mean():.6g}"
    unit = enc.KIND_UNITS[h.layout.kind]
    tare_text = str(h.stats.calibration).split("; gain ")[0]     # a new gain replaces the last one
    gain_text = f"gain {k} from {used} contact samples"
    uncalibrated = tare_text in ("", "uncalibrated") or tare_text.startswith("gain ")
    h.stats.calibration = gain_text if uncalibrated else f"{tare_text}; {gain_text}"
    return True, (f"{h.name}: gain {k} from {used} contact samples (relative standard error "
                  f"{float(np.nanmax(rel)):.3g}); RMS of measured - predicted change "
                  f"{fit.rms_before:.6g} -> {fit.rms_after:.6g} {unit}")


__all__ = ["GAIN_KEY", "MAX_RELATIVE_ERROR", "MIN_SAMPLES", "calibrate_gain", "contact_buffer_size",
           "new_buffer", "record", "supports_gain"]
