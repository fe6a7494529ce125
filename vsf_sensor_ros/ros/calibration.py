"""The node's measured streams: pairing, residuals, tares, gain fits and the calibration file.

:class:`Measurements` holds what the node does with a ``<s>/measured`` message
and with the calibration services, on the node's own handles and live settings
(the node creates every subscription and service and forwards their callbacks
here):

* a measured message is decoded (unit x ``measured_scale`` = SI), stamped (its
  header stamp, or for a header-less type its receive time on the node's clock
  plus ``measured_delay``), checked for a plausible pressure (warned once) and
  paired with the prediction of the same instant (:mod:`.pairing`); a
  measurement stamp that goes back (the source restarted) clears the measured
  buffers and tare pairs;
* a pair publishes ``<s>/residual`` (measured - predicted, stamped with the
  contacts stamp), is kept for tares and gain fits, and triggers
  ``tare_on_start`` once per sensor;
* ``<s>/tare``, ``tare`` (every sensor with a measured stream, all or nothing),
  ``<s>/calibrate_gain`` (:mod:`.gain_service`) and ``save_calibration``
  (:mod:`.calibration_store`);
* new live settings of a configured sensor (:meth:`Measurements.change_settings`):
  a new model keeps its calibration when it still fits; a new measured unit, type,
  delay or topic clears what would mix old and new samples and re-subscribes.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
from rclpy.clock import Clock
from std_srvs.srv import Trigger

from ..sensor.base_sensor import BaseSensor
from . import calibration_file as cal_store
from . import gain_service
from .messages import readings as enc
from .parameters import LiveSettings
from .pairing import Pair
from .parameter_table import SensorConfig
from .sensor_handle import Prediction, SensorHandle, measured_topic
from .messages.stamps import stamp_to_ns
from .step import residual_or_none
from .tare import PairedSample, select_samples

# Plausible absolute pressures (Pa) of a measured pressure: from high-altitude air (~2e4 Pa) to
# an inflated membrane well above any Punyo (1e6 Pa = 10 bar).  Outside: a unit mistake (hPa
# read as Pa gives ~1e3, Pa scaled by 100 gives ~1e7) or a gauge pressure; warned once.
PA_PLAUSIBLE_MIN = 2.0e4
PA_PLAUSIBLE_MAX = 1.0e6


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
        self._clock = clock

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
            stamp_ns = self._clock.now().nanoseconds + h.measured_delay_ns()
        else:
            stamp_ns = stamp_to_ns(msg.header.stamp)
        self._check_plausible(h, vec)
        if h.pairer.measurement_went_back(stamp_ns):
            # the measured source restarted: unmatched measurements and tare pairs are stale
            h.stats.measured_stamp_jumps += 1
            h.pairer.clear_measurements()
            h.pairs.clear()
            h.contact_pairs.clear()
        pair = h.pairer.add_measurement(stamp_ns, vec)
        if pair is not None:
            self.paired(h, pair)

    def _check_plausible(self, h: SensorHandle, vec: np.ndarray) -> None:
        """Warn once (per scale) when a pressure in Pa is outside [PA_PLAUSIBLE_MIN, PA_PLAUSIBLE_MAX]."""
        if h.layout.kind != "pressure" or h.plausibility_warned:
            return
        pa = float(vec[h.layout.slots[0]])
        if PA_PLAUSIBLE_MIN <= pa <= PA_PLAUSIBLE_MAX:
            return
        h.plausibility_warned = True
        scale = float(h.config.values["measured_scale"])
        hint = (" (hPa read as Pa? set measured_scale: 100.0)" if pa < PA_PLAUSIBLE_MIN and scale == 1.0
                else "")
        self._log.warning(
            f"sensor {h.name!r}: measured pressure {pa:.6g} Pa (reading x measured_scale {scale:g}) is "
            f"not a plausible absolute pressure ({PA_PLAUSIBLE_MIN:g}..{PA_PLAUSIBLE_MAX:g} Pa){hint}; "
            "residuals and tares use it as it is")

    def paired(self, h: SensorHandle, pair: "Pair[Prediction, np.ndarray]") -> None:
        """A measured vector met its prediction: publish the residual, keep the pair for tares."""
        (predicted, state, contact_free, stamp_ns), measured = pair.prediction, pair.measurement
        residual = residual_or_none(h.layout, measured, predicted)
        if residual is None:
            self._reject("residual_out_of_range", f"{h.name}: measured - predicted overflows its message", h)
        elif h.endpoints.publish_residual(h.layout, residual, stamp_ns):   # the contacts stamp
            h.stats.residuals_published += 1
        h.pairs.append(PairedSample(stamp_ns, measured, state, contact_free))
        gain_service.record(h.contact_pairs, h.pairs[-1])
        live = self._live()
        n = live.tare_samples
        if live.tare_on_start and not h.tared_on_start:
            samples, _ = select_samples(list(h.pairs), n)
            if len(samples) >= n:
                ok, text = cal_store.tare(h, n)
                h.tared_on_start = True     # one attempt per sensor, successful or not
                (self._log.info if ok else self._log.warning)(f"tare_on_start: {text}")

    # ------------------------------------------------------------------ services
    def on_tare(self, name: str, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``<s>/tare`` of sensor ``name``."""
        return self._answer(name, response, self._tare)

    def on_calibrate_gain(self, name: str, request: Trigger.Request,
                          response: Trigger.Response) -> Trigger.Response:
        """``<s>/calibrate_gain`` of sensor ``name`` (:func:`.gain_service.calibrate_gain`)."""
        return self._answer(name, response, gain_service.calibrate_gain)

    def _answer(self, name: str, response: Trigger.Response,
                action: Callable[[SensorHandle], Tuple[bool, str]]) -> Trigger.Response:
        """``response`` filled by ``action(handle of name)``, or a refusal when there is no such sensor."""
        h = self._handles.get(name)
        response.success, response.message = (False, f"no sensor {name!r}") if h is None else action(h)
        return response

    def _tare(self, h: SensorHandle) -> Tuple[bool, str]:
        """Tare one sensor; a failure with nothing paired names a clock offset when there is one."""
        ok, text = cal_store.tare(h, self._live().tare_samples)
        hint = None if ok or h.pairs else h.pairer.offset_hint()
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
            response.message = f"no sensor has a measured stream yet (skipped: {', '.join(skipped)})"
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

    # ------------------------------------------------------------------ live settings
    def change_settings(self, h: SensorHandle, cfg: SensorConfig, sensor: Optional[BaseSensor],
                        layout: Optional[enc.SensorLayout]) -> None:
        """New settings for a configured sensor; a new model keeps the calibration when it still fits.

        The caller refreshes what depends on the sensor's model (watched joints, dense vertex counts).
        """
        old_type, old_topic = h.config.measured_type(), measured_topic(h.config)
        old_scale = float(h.config.values["measured_scale"])
        old_delay = h.measured_delay_ns()
        h.config = cfg
        if sensor is not None and layout is not None:
            dropped = h.replace_model(sensor, layout)
            if dropped:
                self._log.warning(f"sensor {h.name!r}: calibration dropped ({dropped}); tare again")
        h.endpoints.set_optional(bool(cfg.values["publish_jacobian"]), bool(cfg.values["publish_markers"]))
        if cfg.measured_type() != old_type or float(cfg.values["measured_scale"]) != old_scale:
            # samples of the old unit or type must not be averaged with new ones by a tare
            h.clear_measured()
            headerless = cfg.measured_type() in enc.HEADERLESS_MEASURED_TYPES
            if headerless != h.headerless:   # the pairing key changes: stamps <-> receive times
                h.headerless = headerless
                h.clear_buffers()
            self._log.info(f"sensor {h.name!r}: measured type or scale changed; buffered measured "
                           "samples cleared")
        if h.headerless and h.measured_delay_ns() != old_delay:
            # the pairing key of the measured stream moved: what was paired or queued with the old
            # delay would mix frames (and a smaller delay is no restart of the source)
            h.clear_buffers()
            self._log.info(f"sensor {h.name!r}: measured_delay {h.measured_delay_ns() * 1e-9:g} s; "
                           "pairing buffers cleared")
        if cfg.measured_type() != old_type or measured_topic(cfg) != old_topic:
            try:
                h.endpoints.subscribe_measured(cfg.measured_type(), measured_topic(cfg))
            except Exception as exc:   # the plan checked name and graph; a race keeps the old subscription
                self._log.error(f"sensor {h.name!r}: cannot subscribe {measured_topic(cfg)!r} as "
                                f"{cfg.measured_type()} ({exc}); still reading {old_topic!r}")
        self._log.info(f"sensor {h.name!r} settings applied")
