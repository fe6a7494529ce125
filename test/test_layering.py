"""The package's layers import one way.

sensor -> world (transforms, urdf, mesh_io, world) -> rig -> ros -> contact_sources -> demo.

Inside ``ros``, ``ros.messages`` (the message formats) is below the rest: it imports no other ``ros`` module.
"""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "vsf_sensor_ros"

# A layer may import only itself and the layers listed before it.
LAYERS = ["sensor", "transforms", "urdf", "mesh_io", "world", "embedded_world", "rig", "ros",
          "contact_sources", "demo"]


def _layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "vsf_sensor_ros" or len(parts) < 2:
        return ""
    return parts[1]


def _imports(path: Path) -> list:
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                found.append(".".join(base + ([node.module] if node.module else [])))
            else:
                found.append(node.module or "")
    return found


def test_sensor_package_imports_without_rclpy_or_klampt():
    code = ("import sys, vsf_sensor_ros.sensor; "
            "bad = [m for m in ('rclpy', 'klampt') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_higher_layer(path):
    rel = path.relative_to(PKG)
    own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
    if own not in LAYERS:
        return
    rank = LAYERS.index(own)
    for mod in _imports(path):
        layer = _layer_of(mod)
        if layer in LAYERS:
            assert LAYERS.index(layer) <= rank, f"{rel} ({own}) imports higher layer {mod}"


@pytest.mark.parametrize("path", sorted((PKG / "ros" / "messages").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_messages_import_no_other_ros_module(path):
    rel = path.relative_to(PKG)
    for mod in _imports(path):
        if mod.startswith("vsf_sensor_ros.ros.") or mod == "vsf_sensor_ros.ros":
            assert mod.startswith("vsf_sensor_ros.ros.messages"), f"{rel} imports {mod} (above ros.messages)"


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_has_a_layer(path):
    rel = path.relative_to(PKG)
    own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
    if own == "__init__":
        return
    assert own in LAYERS, f"{rel} is in no layer: add it to LAYERS"


def test_rig_imports_without_rclpy():
    code = ("import sys, vsf_sensor_ros.rig, vsf_sensor_ros.rig.rig, vsf_sensor_ros.rig.calibration, "
            "vsf_sensor_ros.rig.calibration_file, vsf_sensor_ros.rig.input_health, "
            "vsf_sensor_ros.rig.pairing; "
            "bad = [m for m in sys.modules if m.startswith(('rclpy', 'vsf_sensor_ros.ros'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("path", sorted(p for p in PKG.rglob("*.py") if p.name != "__init__.py"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_layout_lists_every_module(path):
    text = (ROOT / "docs" / "layout.md").read_text()
    rel = path.relative_to(PKG)
    # top-level modules by their full path, the others by their file name under their folder's heading
    shown = f"vsf_sensor_ros/{rel}" if len(rel.parts) == 1 else f" {path.name} "
    assert shown in text, f"docs/layout.md does not list {rel}"
