"""The demo's configuration: the world's parameter file, its sensors, and its pairing with the simulator."""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from vsf_sensor_ros.demo.processes import PACKAGE_ROOT
from vsf_sensor_ros.rig.launch_support import SIM_WORLD_CONFIGS

DEFAULT_OUT = Path("demo_out")        # parent of the per-world output folders


class DemoError(RuntimeError):
    """A demo failure: a ``reason`` word (``'unreadable'``, ``'no_sensors'``, ``'timeout'`` ...), the ``path``
    at fault and the offending ``value``, each None when there is none."""

    def __init__(self, message: str, reason: str, path: Any = None, value: Any = None) -> None:
        super().__init__(message)
        self.reason, self.path, self.value = reason, path, value


@dataclass
class SensorInfo:
    """A sensor of the parameter file: ``name``, ``type_name``, reading ``kind``, ``measured_scale`` (to SI),
    ``attachment`` and the simulator's ``measured_source`` label (None: not measured)."""

    name: str
    type_name: str
    kind: str
    measured_scale: float = 1.0
    attachment: str = ""
    measured_source: Optional[str] = None

    @property
    def codec(self) -> Any:
        """The ``ReadingCodec`` of :attr:`kind` (KeyError: not a reading kind)."""
        from vsf_sensor_ros.ros.kinds import reading_codecs
        return reading_codecs()[self.kind]


@dataclass
class DemoConfig:
    """Everything a run needs, resolved from the command line."""

    world: str
    params_file: Path
    assets: Optional[Path]
    out: Path
    duration_s: float
    rate_hz: float
    seed: int
    timeout_s: float
    sensors: List[SensorInfo]
    tare_samples: int
    node_name: str = "sensor_node"
    base_params: Dict[str, Any] = field(default_factory=dict)
    contact_body_names: List[str] = field(default_factory=list)
    measured_source: str = "independent"    # the simulator's: independent | model (all synthetic)
    backend: str = "klampt"                 # klampt (contact_sim_node) | mujoco (mujoco_contact_node)


def config_dir() -> Path:
    """The ``config/`` directory: the checkout's, else the installed share's (DemoError: neither)."""
    local = PACKAGE_ROOT / "config"
    if local.is_dir():
        return local
    try:
        from ament_index_python.packages import get_package_share_directory
        share = Path(get_package_share_directory("vsf_sensor_ros")) / "config"
        if share.is_dir():
            return share
    except (ImportError, LookupError, ValueError):
        pass
    raise DemoError(f"no config directory found (looked in {local} and the ament index)", "no_config_dir",
                    local)


def _flatten(prefix: str, value: Any, out: Dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def read_params_file(path: Path) -> Tuple[str, Dict[str, Any]]:
    """``(node key, {dotted name: value})`` of a parameter file's first node entry.  Raises DemoError:
    unreadable, or no ``ros__parameters``."""
    import yaml
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DemoError(f"cannot read parameter file {path}: {exc}", "unreadable", path) from exc
    for key, val in (doc or {}).items():
        # a node entry, or a namespace of them: /ns: {node: {ros__parameters: ...}}
        entries = [(key, val)] + (list(val.items()) if isinstance(val, dict) else [])
        for k, v in entries:
            if isinstance(v, dict) and "ros__parameters" in v:
                flat: Dict[str, Any] = {}
                _flatten("", v["ros__parameters"], flat)
                return str(k), flat
    raise DemoError(f"parameter file {path} has no 'ros__parameters' entry", "no_parameters", path)


def sensors_from_params(params: Dict[str, Any], path: Path) -> List[SensorInfo]:
    """The ``sensors`` of a parameter set.  Raises DemoError: none, or a type without a ROS encoding."""
    from vsf_sensor_ros.ros.kinds import sensor_kinds
    kinds = sensor_kinds()
    names = params.get("sensors") or []
    if not names:
        raise DemoError(f"parameter file {path} lists no sensors", "no_sensors", path)
    out = []
    for name in names:
        type_name = params.get(f"{name}.type")
        if type_name not in kinds:
            raise DemoError(f"sensor {name!r} in {path} has type {type_name!r}; "
                            f"known types: {sorted(kinds)}", "unknown_type", path, type_name)
        out.append(SensorInfo(name, type_name, kinds[type_name].codec.kind,
                              float(params.get(f"{name}.measured_scale", 1.0)),
                              str(params.get(f"{name}.attachment", ""))))
    return out


def resolve_config(args: argparse.Namespace) -> DemoConfig:
    """Check the arguments, find their files.  Raises ValueError: an argument out of range (named);
    DemoError: missing parameter file or assets."""
    timeout = args.timeout if args.timeout is not None else args.duration + 150.0
    for flag, value, ok, rule in (("duration", args.duration, 0 < args.duration < math.inf,
                                   "a positive number of seconds"),
                                  ("rate", args.rate, 0 < args.rate <= 1000, "in (0, 1000] Hz"),
                                  ("seed", args.seed, args.seed >= 0, ">= 0"),
                                  ("timeout", args.timeout, 0 < timeout < math.inf, "positive")):
        if not ok:
            raise ValueError(f"--{flag} must be {rule}, got {value}")
    params_file = args.params_file or config_dir() / SIM_WORLD_CONFIGS[args.world]
    if not Path(params_file).is_file():
        raise DemoError(f"sensor node parameter file {params_file} not found", "params_missing", params_file)
    node_key, params = read_params_file(params_file)
    sensors = sensors_from_params(params, params_file)
    from vsf_sensor_ros.embedded_world import default_assets_dir   # heavy imports: only when run
    assets = args.assets if args.assets is not None else default_assets_dir()
    if args.world == "kinova" and (assets is None or not Path(assets).is_dir()):
        raise DemoError("the kinova world needs its assets: pass --assets DIR (the folder with "
                        f"kinova_gen3.urdf and punyo_mesh_*.ply) or set VSF_ASSETS; got {assets}",
                        "assets_missing", assets)
    assets = Path(assets).resolve() if args.world == "kinova" else None    # the embedded world needs none
    node_name = node_key.strip("/") if node_key not in ("/**", "**") else "sensor_node"
    from vsf_sensor_ros.contact_sources.sim_sensors import DEMO_SENSORS, measured_source_label
    mode, backend = str(args.measured_source), str(args.backend)    # argparse checked the choices
    if backend == "mujoco" and args.world != "embedded":
        raise ValueError(f"the mujoco backend simulates the embedded world only, got --world {args.world}")
    bodies = [str(b) for b in (params.get("contact_body_names") or [])]
    for s in sensors:
        if s.name in DEMO_SENSORS:
            s.measured_source = measured_source_label(s.type_name, s.attachment, mode, bodies, backend)
    out = Path(args.out) if args.out is not None else DEFAULT_OUT / (
        "mujoco" if backend == "mujoco" else args.world)
    return DemoConfig(world=args.world, params_file=Path(params_file).resolve(), assets=assets,
                      out=out, duration_s=float(args.duration), rate_hz=float(args.rate),
                      seed=int(args.seed), timeout_s=float(timeout), sensors=sensors,
                      tare_samples=int(params.get("tare_samples", 10)), node_name=node_name or "sensor_node",
                      base_params=params, contact_body_names=bodies, measured_source=mode, backend=backend)


def _same(a: Any, b: Any) -> bool:
    """Parameter values equal (numbers and number lists to 1e-9 relative, others exactly)."""
    try:
        if isinstance(a, str) or isinstance(b, str):
            raise TypeError
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return a == b
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-9, atol=0.0))


def check_pairing(cfg: DemoConfig) -> List[str]:
    """A warning line per parameter differing from the sensors the simulator measures (empty: it pairs).
    Raises DemoError: no ``contact_body_names``, or the world's assets cannot be loaded."""
    from vsf_sensor_ros.contact_sources.sim_sensors import demo_sensor_specs
    from vsf_sensor_ros.contact_sources.sim_world import load_assets
    if not cfg.contact_body_names:
        raise DemoError(f"{cfg.params_file} sets no contact_body_names: the demo passes the node's body "
                        "table to the simulator, e.g. contact_body_names: [punyo, object, table]",
                        "no_contact_bodies", cfg.params_file)
    try:
        assets = load_assets(cfg.world, None if cfg.assets is None else str(cfg.assets))
    except (OSError, ValueError) as exc:
        raise DemoError(f"cannot load the {cfg.world} world's assets: {exc}", "assets_unloadable", cfg.assets,
                        cfg.world) from exc
    params = cfg.base_params
    problems: List[str] = []
    for spec in demo_sensor_specs(assets).values():
        name = spec.name
        if name not in (params.get("sensors") or []):
            problems.append(f"the simulator measures {name!r} but {cfg.params_file.name} has no such sensor")
            continue
        for key, want in ((f"{name}.{k}", v) for k, v in spec.config.items() if k != "name"):
            if not _same(params.get(key), want):
                problems.append(f"{key} is {params.get(key)!r} in {cfg.params_file.name}; the simulator "
                                f"measures with {want!r}")
        scale = params.get(f"{name}.measured_scale", 1.0)
        if not _same(scale, 1.0):
            problems.append(f"{name}.measured_scale is {scale!r}; the simulator publishes SI (1.0)")
    return problems


def press_body_indices(cfg: DemoConfig) -> List[int]:
    """Indices in ``contact_body_names`` of the Punyo sensors' bodies (what "contact" means; empty: any)."""
    watched = {s.attachment for s in cfg.sensors if s.codec.membrane_reading}
    return [i for i, b in enumerate(cfg.contact_body_names) if b in watched]
