"""Tare, tare-all, gain and save: the node's measured streams and what it calibrates from them.

:class:`Measurements` holds what the node does with a ``<s>/measured`` message
and with the calibration services, on the node's own handles and live settings
(the node creates every subscription and service and forwards their callbacks
here):

* a measured message is decoded (unit x ``measured_scale`` = SI), stamped (its
  header stamp, or for a header-less type its receive time on the node's clock
  plus ``measured_delay``), checked for a plausible pressure (warned once) and
  paired with the prediction of the same instant (:mod:`.pairing`); a
  measurement stamp that goes back (the source restarted) clears the measured
  buffers and tare pairs; a stamp of 0 (a driver that never sets it; a receive time
  while the node clock reads 0 under ``use_sim_time``) pairs with nothing: the message is
  rejected, counted per topic and logged (throttled) with a hint;
* a pair publishes ``<s>/residual`` (measured - predicted, stamped with the
  contacts stamp) and ``<s>/measured_si`` (the measured vector in SI, same stamp),
  is kept for tares and gain fits, and triggers ``tare_on_start`` once per sensor;
* ``<s>/tare``, ``tare`` (every sensor with a measured stream, all or nothing),
  ``<s>/calibrate_gain`` (below) and ``save_calibration``
  (:mod:`.calibration_file`).

Tare
----
The node pairs every measured message with the prediction of the same stamp
(:mod:`vsf_sensor_ros.ros.sensor_node`).  A tare then needs a simulator for
``TareCalibrator.calibrate(sensor, sim, commands, observations)``; here the
"simulator" is :class:`ReplaySimulator`, which replays the recorded
``SimState`` of each paired sample: ``step(command)`` selects sample
``command`` (an index), ``state()`` returns its ``SimState`` and
``measurements()`` the sensor's prediction for it.  The calibrator does the
arithmetic (average observation, average contact-free simulation); this
module only chooses the samples and formats the answer.

Which samples: the **most recent run of consecutive contact-free pairs**
(``not sensor.in_contact(state)`` for the paired ``SimState``: nothing
touches what the sensor senses -- its body, or its Klampt patch / Isaac
radius, so a load sensor on a box resting on a table is contact-free while
nothing presses its top), its last ``N``
samples (``N`` = ``tare_samples``), oldest first.  "Most recent" because a
tare is asked for *now*: an operator lifts the gripper off the object and
calls ``tare``, and readings from before a contact may belong to another
temperature or membrane inflation.  Fewer than ``N`` samples in that run are
used as they are, and the answer says how many.

Gain
----
A tare removes a constant offset; a real sensor can also show a different
*change* under load than the model predicts (a Punyo bubble's membrane carries
part of the load: the pressure rise is smaller than ``F·n / A_base``).  The
library's :class:`~vsf_sensor_ros.sensor.GainCalibrator` fits that gain by
least squares through the origin, on top of the tare offset, from pairs of
measured and predicted samples that have contact.

In the node, every measured message paired with the prediction of the same
stamp is buffered (:class:`~vsf_sensor_ros.ros.sensor_handle.PairedSample`: the
measured vector in SI -- the message's unit times ``measured_scale`` -- and the
step's ``SimState``).  Samples with contact on what the sensor senses (the
same test a tare uses to reject a sample) also go into a second bounded
buffer (:func:`record`), so a long contact-free stretch after a poke does not
push them out; it holds the most recent :func:`~.sensor_handle.contact_buffer_size` of them
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

from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
from rclpy.clock import Clock
from std_srvs.srv import Trigger

from ..sensor import GainCalibrator, TareCalibrator
from ..sensor.base_sensor import BaseSensor, SimState
from . import calibration_file as cal_store
from .calibration_file import TARE_KEY, effective_offset, format_offset
from .input_health import pressure_unit_problem
from .messages import readings as enc
from .messages.stamps import stamp_to_ns
from .pairing import Pair
from .parameters import LiveSettings
from .sensor_handle import PairedSample, Prediction, SensorHandle

GAIN_KEY = "gain"


MIN_SAMPLES = 10
"""Fewest contact samples a fit uses (the calibrator refuses below)."""


MAX_RELATIVE_ERROR = 0.2
"""Largest relative standard error of the fitted gain (the calibrator refuses above: ill-conditioned)."""


class Measurements:
    """Measured messages, residuals, tares, gain fits and ``save_calibration`` of a node's sensors.

    Args:
        handles: the node's sensors by name (the node's own dict: sensors added or removed
            live are seen at once).
        calibration: the calibration file fixed at start.
        live: returns the node's current live settings (``tare_samples``, ``tare_on_start``).
        reject: the node's ``_reject(reason, detail, handle)``: counts and logs a rejection.
        logger: the node's logger.
        clock: the node's clock (receive times of header-less measured types; ROS time under
            ``use_sim_time``).
    """

    def __init__(self, handles: Dict[str, SensorHandle], calibration: cal_store.CalibrationStore,
                 live: Callable[[], LiveSettings], reject: Callable[..., None], logger: Any,
                 clock: Clock) -> None:
        self._handles = handles
        self._calibration = calibration
        self._live = live
        self._reject = reject
        self._log = logger
        self._zero_loggers: Dict[str, Any] = {}
        self._clock = clock
        # what the node says is missing for a sensor (topics, types); set by the node
        self.missing_inputs: Callable[[SensorHandle], str] = lambda h: ""
        # the sensor's measured stream and contacts, when stopped (the two every pair needs); set by the node
        self.stopped_inputs: Callable[[SensorHandle], str] = lambda h: ""
        # the pairing's clock-offset sentence, or None (the node's: none while a stream is stopped)
        self.clock_hint: Callable[[SensorHandle], Optional[str]] = lambda h: h.pairer.offset_hint()

    # ------------------------------------------------------------------ measured, residual
    def on_measured(self, name: str, msg: Any) -> None:
        """One ``<s>/measured`` message of sensor ``name``: decode, stamp, pair (see the module)."""
        h = self._handles.get(name)
        if h is None:
            return
        h.stats.measured_received += 1
        try:
            vec = enc.decode_measured(h.layout, msg, float(h.config.values["measured_scale"]))
        except enc.MeasuredDecodeError as exc:
            return self._reject(exc.reason, f"{name}/measured: {exc}", h)
        h.measured_accepted += 1
        if h.headerless:   # no header: stamped with its receive time (node clock) + measured_delay
            recv_ns = self._clock.now().nanoseconds
            # a node clock at 0 (use_sim_time, no /clock yet) is no time either: stamp 0, refused
            stamp_ns = recv_ns + h.measured_delay_ns() if recv_ns else 0
        else:
            stamp_ns = stamp_to_ns(msg.header.stamp)
        self._check_plausible(h, vec)
        if h.pairer.measurement_went_back(stamp_ns):
            # the measured source restarted: unmatched measurements and tare pairs are stale
            h.stats.measured_stamp_jumps += 1
            h.pairer.clear_measurements()
            h.pairs.clear()
            h.contact_pairs.clear()
        zero = h.pairer.zero_stamps["measured"]
        pair = h.pairer.add_measurement(stamp_ns, vec)
        if h.pairer.zero_stamps["measured"] > zero:
            self._zero_stamp(h)
        elif pair is not None:
            self.paired(h, pair)

    def _zero_stamp(self, h: SensorHandle) -> None:
        """A measured message of ``h`` refused by the pairer for its stamp 0: counted under its
        topic (``zero_stamps.<topic>`` on ``/diagnostics``, with the hint) and logged (throttled per
        sensor), naming the topic."""
        sub = h.endpoints.measured if h.endpoints is not None else None
        topic = sub.topic_name if sub is not None else h.config.measured_topic()
        h.stats.zero_stamps[topic] += 1
        if h.headerless:
            what = "received while the node clock reads 0"
            h.stats.zero_stamp_hint = "use_sim_time and no /clock yet: pairs once /clock arrives"
        else:
            what = "stamped 0"
            h.stats.zero_stamp_hint = ("set its driver's header stamps, or use a header-less measured_type "
                                       "(pairs by receive time)")
        # a logger per sensor, kept (rclpy throttles per logger object): one sensor's warnings do
        # not hide another's
        log = self._zero_loggers.get(h.name)
        if log is None:
            log = self._zero_loggers[h.name] = self._log.get_child(f"zero_stamp.{h.name}")
        log.warning(
            f"{topic}: measured message {what} rejected ({h.stats.zero_stamps[topic]} so far; no time to "
            f"pair it with a prediction): {h.stats.zero_stamp_hint}", throttle_duration_sec=5.0)

    def _check_plausible(self, h: SensorHandle, vec: np.ndarray) -> None:
        """Keep ``h.unit_warning`` while the latest measured value is outside its kind's plausible
        range (the absolute pressure of :class:`~.kinds.punyo_pressure.PressureCodec`; other kinds have
        none) and log it once per scale; a tare is refused while it holds."""
        plausible = h.layout.codec.plausible
        if plausible is None:
            return
        scale = float(h.config.values["measured_scale"])
        pa = float(vec[h.layout.slots[0]])
        if not np.isfinite(pa):   # an entry the message does not carry
            return
        h.unit_warning = pressure_unit_problem(pa / scale, scale, *plausible)
        if h.unit_warning is None or h.plausibility_warned:
            return
        h.plausibility_warned = True
        self._log.warning(f"sensor {h.name!r}: {h.unit_warning}; residuals use it as it is, tares are "
                          "refused while it lasts")

    def paired(self, h: SensorHandle, pair: "Pair[Prediction, np.ndarray]") -> None:
        """A measured vector met its prediction: publish the residual and the measured value in SI
        (both stamped with the prediction's contacts stamp), keep the pair for tares."""
        (predicted, state, contact_free, stamp_ns), measured = pair.prediction, pair.measurement
        residual = h.residual(measured, predicted)
        if residual is None:
            self._reject("residual_out_of_range", f"{h.name}: measured - predicted overflows its message", h)
        elif h.endpoints.publish_residual(h.layout, residual, stamp_ns):   # the contacts stamp
            h.stats.residuals_published += 1
        h.endpoints.publish_measured_si(h.layout, measured, stamp_ns)
        h.pairs.append(PairedSample(stamp_ns, measured, state, contact_free))
        record(h.contact_pairs, h.pairs[-1])
        live = self._live()
        n = live.tare_samples
        if live.tare_on_start and not h.tared_on_start:
            samples, _ = select_samples(list(h.pairs), n)
            if len(samples) >= n:
                ok, text = tare(h, n)
                h.tared_on_start = True     # one attempt per sensor, successful or not
                (self._log.info if ok else self._log.warning)(f"tare_on_start: {text}")

    # ------------------------------------------------------------------ services
    def on_tare(self, name: str, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``<s>/tare`` of sensor ``name``."""
        return self._answer(name, response, self._tare)

    def on_calibrate_gain(self, name: str, request: Trigger.Request,
                          response: Trigger.Response) -> Trigger.Response:
        """``<s>/calibrate_gain`` of sensor ``name`` (:func:`calibrate_gain`)."""
        return self._answer(name, response, self._calibrate_gain)

    def _calibrate_gain(self, h: SensorHandle) -> Tuple[bool, str]:
        """:func:`calibrate_gain`; a refusal with too few samples names the inputs missing now."""
        if h.unit_warning is not None:
            return False, f"{h.name}: cannot calibrate gain: {h.unit_warning}"
        ok, text = calibrate_gain(h)
        hint = "" if ok or len(h.contact_pairs) >= MIN_SAMPLES else self.missing_inputs(h)
        return ok, (f"{text} ({hint})" if hint else text)

    def _answer(self, name: str, response: Trigger.Response,
                action: Callable[[SensorHandle], Tuple[bool, str]]) -> Trigger.Response:
        """``response`` filled by ``action(handle of name)``, or a refusal when there is no such sensor."""
        h = self._handles.get(name)
        response.success, response.message = (False, f"no sensor {name!r}") if h is None else action(h)
        return response

    def _tare(self, h: SensorHandle) -> Tuple[bool, str]:
        """Tare one sensor; a failure with nothing paired names a clock offset when there is one.

        A tare that succeeds while the sensor's measured stream or the contacts have stopped (the
        two every pair needs) says so: its samples are the newest paired ones, from before the
        stop, not what the sensor reads now."""
        if h.unit_warning is not None:
            return False, f"{h.name}: cannot tare: {h.unit_warning}"
        ok, text = tare(h, self._live().tare_samples)
        if ok:
            stopped = self.stopped_inputs(h)
            return ok, (f"{text}; note: {stopped}: these samples are from before that" if stopped else text)
        hint = None if h.pairs else (self.clock_hint(h) or self.missing_inputs(h))
        return ok, (f"{text} ({hint})" if hint else text)

    def on_tare_all(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``tare``: every sensor with a measured stream, all or nothing; the others listed as skipped."""
        if not self._handles:
            response.success, response.message = False, "no sensors configured"
            return response
        # Sensors with no measured stream are skipped and listed; the others tare all or nothing:
        # when one fails, every calibration is put back as it was.
        # (a stream = at least one accepted measured message: rejected ones do not count)
        skipped = [h.name for h in self._handles.values() if h.measured_accepted == 0]
        handles = [h for h in self._handles.values() if h.measured_accepted > 0]
        if not handles:
            response.success = False
            missing = "; ".join(f"{h.name}: {m}" for h in self._handles.values()
                                for m in [self.missing_inputs(h)] if m)
            response.message = (f"no sensor has a measured stream yet (skipped: {', '.join(skipped)})"
                                + (f"; missing: {missing}" if missing else ""))
            return response
        before = [(h, h.sensor.get_calibration(), h.stats.calibration, h.tare_samples_used) for h in handles]
        results = [self._tare(h) for h in handles]
        response.success = all(ok for ok, _ in results)
        lines = [text for _, text in results]
        if not response.success:   # say plainly that no line's tare took effect
            lines = [f"not applied: {text}" for text in lines]
            for h, cal, text, used in before:
                h.sensor.set_calibration(cal)
                h.stats.calibration, h.tare_samples_used = text, used
            lines.append("no offset changed: a tare of the sensors with a measured stream is all or nothing")
        if skipped:
            lines.append(f"skipped (no measured stream): {', '.join(skipped)}")
        response.message = "\n".join(lines)
        return response

    def on_save_calibration(self, request: Trigger.Request,
                            response: Trigger.Response) -> Trigger.Response:
        """``save_calibration``: every sensor's calibration to the file fixed at start."""
        entries = {h.name: e for h in self._handles.values()
                   if (e := cal_store.calibration_entry(h)) is not None}
        try:
            response.message = self._calibration.save(entries)
            response.success = True
        except cal_store.SaveRefused as exc:
            response.success, response.message = False, str(exc)
            if self._calibration.path is not None and entries:
                self._log.warning(f"save_calibration: {exc}")
        return response


# -- tare --------------------------------------------------------------------------------
class ReplaySimulator:
    """The minimal simulator ``TareCalibrator`` drives, replaying recorded states.

    Args:
        sensor: the sensor being calibrated (its ``predict`` gives ``measurements()``).
        states: recorded ``SimState`` per sample.
    """

    def __init__(self, sensor: BaseSensor, states: Sequence[SimState]) -> None:
        self._sensor = sensor
        self._states = list(states)
        self._i = 0

    def step(self, command: Any, dt: float = 0.1) -> None:
        """Advance to sample ``command`` (an int index, or a dict with key ``'sample'``)."""
        idx = command["sample"] if isinstance(command, dict) else command
        self._i = int(idx)

    def state(self) -> SimState:
        """The recorded ``SimState`` of the current sample (all its contacts).

        The node tares with ``TareCalibrator(contact_scope='sensor')``, which
        asks ``sensor.in_contact(state)`` -- the same test the node used to
        choose the samples -- instead of stopping at any contact in the world.
        """
        return self._states[self._i]

    def measurements(self) -> Dict[str, np.ndarray]:
        """``{sensor.name: prediction}`` for the current sample (float64 numpy)."""
        y = self._sensor.predict(self._states[self._i])
        return {self._sensor.name: y.detach().cpu().numpy().astype(np.float64)}


def select_samples(pairs: Sequence[PairedSample], n: int) -> Tuple[List[PairedSample], Optional[str]]:
    """The last ``n`` samples of the most recent contact-free run (oldest first).

    Returns:
        ``(samples, None)`` or ``([], reason)`` when there is nothing to use.
    """
    if not pairs:
        return [], "no measured sample paired with a prediction yet"
    end = len(pairs)
    while end > 0 and not pairs[end - 1].contact_free:
        end -= 1
    if end == 0:
        return [], f"all {len(pairs)} buffered samples have contact on what the sensor senses"
    start = end
    while start > 0 and pairs[start - 1].contact_free and end - start < n:
        start -= 1
    return list(pairs[start:end]), None


def tare_sensor(sensor: BaseSensor, samples: Sequence[PairedSample], calibrator: Any) -> int:
    """Run ``calibrator`` (a ``TareCalibrator``) over ``samples`` and apply its result.

    The previous calibration is cleared first (its ``'gain'``, fitted by
    ``<s>/calibrate_gain``, kept: a tare moves the offset, not the gain), so
    the replayed predictions are the raw (untared) model and a second tare
    does not stack on the first; on any error the previous calibration is
    restored.  Entries a
    measured message does not carry (NaN) are replaced by the sample's raw
    prediction, so the tare leaves them at zero offset.

    Returns:
        The number of samples the calibrator used.

    Raises:
        ValueError / RuntimeError: from the calibrator or the sensor
            (calibration restored).
    """
    before = sensor.get_calibration()
    sensor.set_calibration({k: before[k] for k in ("gain",) if k in before})
    try:
        return _calibrate(sensor, samples, calibrator)
    except Exception:
        sensor.set_calibration(before)
        raise


def _calibrate(sensor: BaseSensor, samples: Sequence[PairedSample], calibrator: Any) -> int:
    sim = ReplaySimulator(sensor, [s.state for s in samples])
    observations = []
    for i, s in enumerate(samples):
        obs = s.measured
        if np.isnan(obs).any():
            sim.step(i)
            pred = sim.measurements()[sensor.name]
            obs = np.where(np.isnan(obs), pred, obs)
        observations.append({sensor.name: obs})
    commands = list(range(len(samples)))
    return int(calibrator.calibrate(sensor, sim, commands, observations))


def tare(h: "SensorHandle", n: int) -> Tuple[bool, str]:
    """Tare one sensor from its buffered pairs; ``(success, answer text)``.

    Uses the last ``n`` samples of the most recent contact-free run
    (:func:`select_samples`) through the library's
    ``TareCalibrator``; on success the sensor's calibration, its
    ``stats.calibration`` text and ``tare_samples_used`` are updated.
    """
    if type(h.sensor).set_calibration is BaseSensor.set_calibration:
        # every shipped model has a tare offset; a model that keeps no calibration cannot be tared
        return False, f"{h.name}: cannot tare: the {h.config.type} model has no tare offset"
    samples, why = select_samples(list(h.pairs), n)
    if why is not None:
        return False, f"{h.name}: cannot tare: {why}"
    # contact-free = nothing touches what this sensor senses, as the samples were chosen
    calibrator = TareCalibrator(num_samples=n, output_key=TARE_KEY, contact_scope="sensor")
    if hasattr(calibrator, "compatible") and not calibrator.compatible(h.sensor):
        return False, f"{h.name}: cannot tare: {h.config.type} has no tare calibration"
    try:
        used = tare_sensor(h.sensor, samples, calibrator)
    except (ValueError, RuntimeError) as exc:
        return False, f"{h.name}: cannot tare: {exc}"
    cal = h.sensor.get_calibration()
    if TARE_KEY not in cal:
        return False, f"{h.name}: cannot tare: the {h.config.type} model kept no '{TARE_KEY}' entry"
    unit = h.layout.codec.unit
    # report the physical entries (the indicator entries of pad/load sensors carry no offset)
    slots = [int(i) for i in h.layout.slots if i >= 0]
    eff = effective_offset(cal, TARE_KEY)
    offset = format_offset({TARE_KEY: eff[slots]}, TARE_KEY, unit, [h.layout.names[i] for i in slots])
    stamp_s = samples[-1].stamp_ns * 1e-9
    h.stats.calibration = f"tared with {used} samples up to stamp {stamp_s:.9f} s: {offset}"
    h.tare_samples_used = used
    return True, f"{h.name}: tared with {used} of {n} samples (most recent contact-free run); offset {offset}"


# -- gain --------------------------------------------------------------------------------
def supports_gain(sensor: BaseSensor) -> bool:
    """True when ``GainCalibrator`` can fit this sensor (it applies a ``'gain'`` calibration entry)."""
    return GainCalibrator().compatible(sensor)


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
    unit = h.layout.codec.unit
    tare_text = str(h.stats.calibration).split("; gain ")[0]     # a new gain replaces the last one
    gain_text = f"gain {k} from {used} contact samples"
    uncalibrated = tare_text in ("", "uncalibrated") or tare_text.startswith("gain ")
    h.stats.calibration = gain_text if uncalibrated else f"{tare_text}; {gain_text}"
    return True, (f"{h.name}: gain {k} from {used} contact samples (relative standard error "
                  f"{float(np.nanmax(rel)):.3g}); RMS of measured - predicted change "
                  f"{fit.rms_before:.6g} -> {fit.rms_after:.6g} {unit}")


__all__ = ["GAIN_KEY", "MAX_RELATIVE_ERROR", "MIN_SAMPLES", "Measurements", "ReplaySimulator",
           "calibrate_gain", "record", "select_samples", "supports_gain", "tare", "tare_sensor"]
