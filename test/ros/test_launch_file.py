"""The launch files in launch/ declare the arguments they promise and name only things that exist.

Everywhere they are parsed (ast): every executable of this package they start must be a console
script of ``setup.py`` with its function, every other package must be an ``exec_depend`` of
``package.xml``, every ``LaunchConfiguration`` they read must be declared, and every package file
they name must exist (and be installed by ``setup.py``).  Where ``launch_ros`` is importable and
the package is in an ament index (a colcon install), each file is loaded, its description
generated, and its processes built from the default arguments.
"""
import ast
import importlib.util
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_DIR = ROOT / "launch"
FIXTURES = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"

# file -> the launch arguments it must declare (issue: config, assets_dir, namespace, use_sim_time)
EXPECTED_ARGUMENTS = {
    "sensor_node.launch.py": {"config", "node_name", "assets_dir", "namespace", "use_sim_time"},
    "real_punyo.launch.py": {"config", "assets_dir", "namespace", "use_sim_time", "node_name", "urdf",
                             "joint_states_topic", "robot_state_publisher", "rviz", "rviz_config"},
    "sim_sensor_node.launch.py": {"world", "config", "assets_dir", "namespace", "use_sim_time", "node_name",
                                  "duration_s", "rate_hz", "robot_state_publisher", "rviz", "rviz_config"},
}
# file -> the executables it can start, as (package, executable)
EXPECTED_NODES = {
    "sensor_node.launch.py": {("vsf_sensor_ros", "sensor_node")},
    "real_punyo.launch.py": {("vsf_sensor_ros", "sensor_node"),
                             ("robot_state_publisher", "robot_state_publisher"), ("rviz2", "rviz2")},
    "sim_sensor_node.launch.py": {("vsf_sensor_ros", "contact_sim_node")},
}


def _tree(name: str) -> ast.AST:
    return ast.parse((LAUNCH_DIR / name).read_text())


def _console_scripts():
    tree = ast.parse((ROOT / "setup.py").read_text())
    scripts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = re.fullmatch(r"\s*([\w-]+)\s*=\s*([\w.]+):(\w+)\s*", node.value)
            if m:
                scripts[m.group(1)] = (m.group(2), m.group(3))
    return scripts


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]


def _first_str_args(tree, name):
    return {c.args[0].value for c in _calls(tree, name)
            if c.args and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)}


def _read_arguments(tree):
    """Names read with LaunchConfiguration("x") or from the ``for k in (...)`` perform loops."""
    names = _first_str_args(tree, "LaunchConfiguration")
    for comp in ast.walk(tree):
        if isinstance(comp, ast.DictComp) and _calls(comp, "LaunchConfiguration"):
            for gen in comp.generators:
                if isinstance(gen.iter, ast.Tuple):
                    names |= {e.value for e in gen.iter.elts if isinstance(e, ast.Constant)}
    return names


def test_there_are_the_three_launch_files():
    assert sorted(p.name for p in LAUNCH_DIR.glob("*.launch.py")) == sorted(EXPECTED_ARGUMENTS)


@pytest.mark.parametrize("name", sorted(EXPECTED_ARGUMENTS))
def test_launch_file_declares_its_arguments_and_reads_only_declared_ones(name):
    tree = _tree(name)
    declared = _first_str_args(tree, "DeclareLaunchArgument")
    assert declared == EXPECTED_ARGUMENTS[name]
    read = _read_arguments(tree)
    assert read, f"{name} reads no launch argument"
    assert read <= declared, f"{name} reads undeclared arguments {sorted(read - declared)}"
    assert declared <= read, f"{name} declares arguments it never reads {sorted(declared - read)}"


@pytest.mark.parametrize("name", sorted(EXPECTED_ARGUMENTS))
def test_launch_file_executables_exist(name):
    calls = _calls(_tree(name), "Node")
    assert calls, f"{name} starts no Node"
    scripts = _console_scripts()
    depends = {e.text for e in ET.parse(ROOT / "package.xml").getroot() if e.tag == "exec_depend"}
    started = set()
    for call in calls:
        kw = {k.arg: k.value for k in call.keywords}
        package, exe = kw["package"].value, kw["executable"].value
        started.add((package, exe))
        if package != "vsf_sensor_ros":
            assert package in depends, f"{name} starts {package}, not an exec_depend of package.xml"
            continue
        assert exe in scripts, f"executable {exe!r} is not a console script in setup.py"
        module, func = scripts[exe]
        spec = importlib.util.find_spec(module)
        assert spec is not None, module
        src = Path(spec.origin).read_text()
        assert re.search(rf"^def {func}\(", src, re.M), f"{module} has no {func}()"
    assert started == EXPECTED_NODES[name]


@pytest.mark.parametrize("name", sorted(EXPECTED_ARGUMENTS))
def test_package_files_named_by_launch_files_exist_and_are_installed(name):
    text = (LAUNCH_DIR / name).read_text()
    named = re.findall(r'_share\("(config|launch)", "([\w.]+)"\)', text)
    named += [("config", n) for n in re.findall(r'"config", "([\w.]+)"\)', text)
              if ("config", n) not in named]
    for folder, fname in named:
        assert (ROOT / folder / fname).is_file(), f"{name} names {folder}/{fname}, which does not exist"
    setup = (ROOT / "setup.py").read_text()
    assert 'glob("config/*")' in setup and 'glob("launch/*.py")' in setup
    # the file names a simulator world's config through launch_support; those exist too
    if "sim_world_config" in text:
        from vsf_sensor_ros.rig.launch_support import SIM_WORLD_CONFIGS
        for fname in SIM_WORLD_CONFIGS.values():
            assert (ROOT / "config" / fname).is_file()


def test_launch_defaults_name_the_shipped_files():
    assert re.findall(r'"([\w.]+\.yaml)"', (LAUNCH_DIR / "sensor_node.launch.py").read_text()) == \
        ["sensor_node.yaml"]
    real = (LAUNCH_DIR / "real_punyo.launch.py").read_text()
    shared = set(re.findall(r'_share\("config", "([^"]+)"\)', real))
    assert {"kinova_punyo_real.yaml", "kinova_punyo_real.rviz"} <= shared


# --------------------------------------------------------------------------- with launch installed
def _installed():
    # launch_ros first: without a ROS install, `import launch` finds this repository's launch/
    # folder as a namespace package (a real `launch` package wins over it where installed)
    pytest.importorskip("launch_ros")
    if not hasattr(pytest.importorskip("launch"), "LaunchDescription"):
        pytest.skip("the launch package is not installed (only the repository's launch/ folder)")
    pytest.importorskip("ament_index_python")
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    try:
        get_package_share_directory("vsf_sensor_ros")
    except PackageNotFoundError:
        pytest.skip("vsf_sensor_ros is not installed in an ament index (colcon build)")


def _load(name):
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), LAUNCH_DIR / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _processes(ld, arguments):
    """Run the description's argument declarations and OpaqueFunctions; the Node actions built."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
    from launch_ros.actions import Node
    context = LaunchContext()
    context.launch_configurations.update(arguments)
    nodes, todo = [], list(ld.entities)
    while todo:
        e = todo.pop(0)
        if isinstance(e, DeclareLaunchArgument):
            if e.name not in context.launch_configurations:
                context.launch_configurations[e.name] = "".join(
                    s.perform(context) for s in e.default_value)
        elif isinstance(e, OpaqueFunction):
            todo = list(e.execute(context) or []) + todo
        elif isinstance(e, IncludeLaunchDescription):
            for k, v in e.launch_arguments:
                context.launch_configurations["".join(s.perform(context) for s in k)] = \
                    "".join(s.perform(context) for s in v)
            todo = list(e.launch_description_source.get_launch_description(context).entities) + todo
        elif isinstance(e, Node):
            nodes.append(e)
    return nodes


@pytest.mark.parametrize("name", sorted(EXPECTED_ARGUMENTS))
def test_launch_description_generates_where_launch_ros_is_installed(name):
    _installed()
    from launch.actions import DeclareLaunchArgument
    ld = _load(name).generate_launch_description()
    assert {e.name for e in ld.entities if isinstance(e, DeclareLaunchArgument)} == EXPECTED_ARGUMENTS[name]


def test_real_punyo_launch_builds_node_state_publisher_and_rviz_where_launch_ros_is_installed():
    _installed()
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    ld = _load("real_punyo.launch.py").generate_launch_description()
    nodes = _processes(ld, {"assets_dir": str(FIXTURES.resolve()), "namespace": "robot1"})
    assert sorted(n.node_package for n in nodes) == ["robot_state_publisher", "rviz2", "vsf_sensor_ros"]
    nodes = _processes(ld, {"assets_dir": str(FIXTURES.resolve()), "rviz": "false",
                            "robot_state_publisher": "false"})
    assert [n.node_package for n in nodes] == ["vsf_sensor_ros"]
