"""The node's measured streams (decoded, stamped, paired by the rig; residual and measured_si
published) and calibration services; the arithmetic and file format are the rig's."""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
from rclpy.clock import Clock
from std_srvs.srv import Trigger

from ..rig import calibration_file as file_store
from ..rig.calibration import (MIN_SAMPLES, apply_entry, calibrate_gain, calibration_entry, select_samples,
                               tare)
from ..rig.calibration_file import SaveRefused
from ..rig.pairing import Pair
from ..rig.rig import Rig
from ..rig.sensors import Prediction
from ..rig.input_health import pressure_unit_problem
from .messages import readings as enc
from .messages.stamps import stamp_to_ns
from .parameter_table import ConfigError
from .parameters import LiveSettings
from .sensor_handle import SensorHandle


class CalibrationStore(file_store.CalibrationStore):
    """The rig's store; a file it cannot read: :class:`ConfigError` naming ``calibration_file``."""

    def load(self) -> Dict[str, Dict[str, Any]]:
        try:
            return super().load()
        except ValueError as exc:
            raise ConfigError("calibration_file", str(self.path), str(exc)) from None


def apply_file_entry(h: SensorHandle, entry: Dict[str, Any], file_param: str) -> Optional[str]:
    """The rig's ``apply_entry``; a model refusal: :class:`ConfigError` naming ``calibration_file``."""
    try:
        return apply_entry(h, entry)
    except ValueError as exc:
        raise ConfigError("calibration_file", file_param, str(exc)) from None


class Measurements:
    """Measured messages, residuals, tares, gain fits and ``save_calibration`` of a node's sensors
    (``live()``: the current live settings; ``reject(reason, detail, handle)``: the node's counter;
    ``clock``: receive times of header-less measured types)."""

    def __init__(self, rig: Rig, calibration: CalibrationStore,
                 live: Callable[[], LiveSettings], reject: Callable[..., None], logger: Any,
                 clock: Clock) -> None:
        self._rig, self._calibration, self._clock = rig, calibration, clock
        self._live, self._reject, self._log = live, reject, logger
        self._handles: Dict[str, SensorHandle] = rig.sensors   # type: ignore[assignment]
        self._child_log = functools.lru_cache(maxsize=None)(logger.get_child)   # kept: throttles live in them
        # the node's sentences: inputs missing, paired streams stopped, the clock offset
        self.missing_inputs: Callable[[SensorHandle], str] = lambda h: ""
        self.stopped_inputs: Callable[[SensorHandle], str] = lambda h: ""
        self.clock_hint: Callable[[SensorHandle], Optional[str]] = lambda h: h.pairer.offset_hint()

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
        if h.headerless:   # no header: stamped with its receive time (node clock) + measured_delay
            recv_ns = self._clock.now().nanoseconds
            # a node clock at 0 (use_sim_time, no /clock yet) is no time either: stamp 0, refused
            stamp_ns = recv_ns + h.measured_delay_ns() if recv_ns else 0
        else:
            stamp_ns = stamp_to_ns(msg.header.stamp)
        self._check_plausible(h, vec)
        zero = h.pairer.zero_stamps["measured"]
        pair = self._rig.pair_measured(name, stamp_ns, vec)   # a stamp gone back clears its buffers
        if h.pairer.zero_stamps["measured"] > zero:
            self._zero_stamp(h)
        elif pair is not None:
            self.paired(h, pair)

    def _zero_stamp(self, h: SensorHandle) -> None:
        """A measured message of ``h`` refused for its stamp 0: counted under its topic (with a hint)
        and logged, throttled per sensor."""
        sub = h.endpoints.measured if h.endpoints is not None else None
        topic = sub.topic_name if sub is not None else h.config.measured_topic()
        h.stats.zero_stamps[topic] += 1
        what, h.stats.zero_stamp_hint = (
            ("received while the node clock reads 0", "use_sim_time and no /clock yet: pairs once /clock "
                                                      "arrives") if h.headerless else
            ("stamped 0", "set its driver's header stamps, or use a header-less measured_type (pairs by "
                          "receive time)"))
        # a logger per sensor (rclpy throttles per logger): one sensor's warnings hide no other's
        self._child_log(f"zero_stamp.{h.name}").warning(
            f"{topic}: measured message {what} rejected ({h.stats.zero_stamps[topic]} so far; no time to "
            f"pair it with a prediction): {h.stats.zero_stamp_hint}", throttle_duration_sec=5.0)

    def _check_plausible(self, h: SensorHandle, vec: np.ndarray) -> None:
        """Keep ``h.unit_warning`` while the latest measured value is outside its kind's plausible
        range (logged once; a tare is refused while it holds)."""
        plausible = h.layout.codec.plausible
        pa = float(vec[h.layout.slots[0]]) if plausible is not None else np.nan
        if not np.isfinite(pa):   # no range to check, or an entry the message does not carry
            return
        scale = float(h.config.values["measured_scale"])
        h.unit_warning = pressure_unit_problem(pa / scale, scale, *plausible)
        if h.unit_warning is None or h.plausibility_warned:
            return
        h.plausibility_warned = True
        self._log.warning(f"sensor {h.name!r}: {h.unit_warning}; residuals use it as it is, tares are "
                          "refused while it lasts")

    def paired(self, h: SensorHandle, pair: "Pair[Prediction, np.ndarray]") -> None:
        """A measured vector met its prediction: publish residual and measured_si (the contacts
        stamp), keep the pair for tares."""
        residual, measured, stamp_ns = h.keep_pair(pair)
        if residual is None:
            self._reject("residual_out_of_range", f"{h.name}: measured - predicted overflows its message", h)
        elif enc.publish_vector(h.endpoints.residual, h.layout, residual, stamp_ns):   # the contacts stamp
            h.stats.residuals_published += 1
        enc.publish_vector(h.endpoints.measured_si, h.layout, measured, stamp_ns)
        live = self._live()
        n = live.tare_samples
        if live.tare_on_start and not h.tared_on_start:
            samples, _ = select_samples(list(h.pairs), n)
            if len(samples) >= n:
                ok, text = tare(h, n)
                h.tared_on_start = True     # one attempt per sensor, successful or not
                (self._log.info if ok else self._log.warning)(f"tare_on_start: {text}")

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
        """Tare one sensor; a failure with nothing paired names a clock offset or missing inputs,
        a success while its paired streams stopped says its samples are from before that."""
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
        # a stream = one accepted measured message; the sensors with one tare all or nothing
        skipped = [h.name for h in self._handles.values() if h.measured_accepted == 0]
        handles = [h for h in self._handles.values() if h.measured_accepted > 0]
        if not handles:
            missing = "; ".join(f"{h.name}: {m}" for h in self._handles.values()
                                for m in [self.missing_inputs(h)] if m)
            response.success, response.message = False, (
                "no sensors configured" if not skipped else
                f"no sensor has a measured stream yet (skipped: {', '.join(skipped)})"
                + (f"; missing: {missing}" if missing else ""))
            return response
        before = [(h, h.sensor.get_calibration(), h.calibration_text, h.tare_samples_used) for h in handles]
        results = [self._tare(h) for h in handles]
        response.success = all(ok for ok, _ in results)
        lines = [text for _, text in results]
        if not response.success:   # say plainly that no line's tare took effect
            lines = [f"not applied: {text}" for text in lines]
            for h, cal, text, used in before:
                h.sensor.set_calibration(cal)
                h.calibration_text, h.tare_samples_used = text, used
            lines.append("no offset changed: a tare of the sensors with a measured stream is all or nothing")
        if skipped:
            lines.append(f"skipped (no measured stream): {', '.join(skipped)}")
        response.message = "\n".join(lines)
        return response

    def on_save_calibration(self, request: Trigger.Request,
                            response: Trigger.Response) -> Trigger.Response:
        """``save_calibration``: every sensor's calibration to the file fixed at start."""
        entries = {h.name: e for h in self._handles.values()
                   if (e := calibration_entry(h, h.config.values["attachment"])) is not None}
        try:
            response.message, response.success = self._calibration.save(entries), True
        except SaveRefused as exc:
            response.success, response.message = False, str(exc)
            if self._calibration.path is not None and entries:
                self._log.warning(f"save_calibration: {exc}")
        return response
