"""The package's simulator (contact_sim_node) and sensor_node, paired, for a ROS 2 install.

    ros2 launch vsf_sensor_ros sim_sensor_node.launch.py
    ros2 launch vsf_sensor_ros sim_sensor_node.launch.py world:=kinova assets_dir:=/path/to/kinova_punyo \
        rviz:=true

The simulator publishes joint_states, object/pose, contacts and a stand-in <s>/measured per demo
sensor, all stamped with simulation time; the node predicts from them.  Its body table
(contact_body_names) is taken from the node's parameter file, so both index the same bodies.

Arguments:
    world: simulated world, ``embedded`` (the package's arm, default) or ``kinova`` (Kinova
        Gen3 + Punyo files from assets_dir).
    config: sensor_node parameter file (default: config/sensor_node.yaml for ``embedded``,
        config/kinova_punyo.yaml for ``kinova``).
    assets_dir, namespace, node_name, robot_state_publisher, rviz, rviz_config: as in
        real_punyo.launch.py (robot_state_publisher default true, rviz default false).
    use_sim_time: default false -- the simulator stamps its messages with simulation time but
        publishes no /clock; predictions carry the contacts stamps either way.
    duration_s: simulated seconds (default 12, one press); rate_hz: simulator steps per
        wall-clock second (default 100, real time).  The simulator exits when done; the node stays up.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from vsf_sensor_ros.rig import launch_support as ls


def _share(*parts: str) -> str:
    return os.path.join(get_package_share_directory("vsf_sensor_ros"), *parts)


def _setup(context, *args, **kwargs):
    """The simulator, configured from the node's parameter file, then real_punyo.launch.py for the rest."""
    arg = {k: LaunchConfiguration(k).perform(context) for k in (
        "world", "config", "assets_dir", "namespace", "use_sim_time", "node_name", "duration_s", "rate_hz",
        "robot_state_publisher", "rviz", "rviz_config")}
    config = arg["config"] or _share("config", ls.sim_world_config(arg["world"]))
    params = ls.load_node_parameters(config, arg["node_name"])
    assets = ls.effective_assets_dir(arg["assets_dir"], params)
    sim = {"world": arg["world"], "contact_body_names": list(params.get("contact_body_names") or []),
           "duration_s": float(arg["duration_s"]), "rate_hz": float(arg["rate_hz"]),
           "wait_for_subscribers": 1}
    if not sim["contact_body_names"]:
        raise ls.LaunchConfigError(f"config {config!r} sets no contact_body_names: the simulator needs the "
                                   "node's body table, e.g. [punyo, object, table]", "config", config,
                                   "no_contact_bodies")
    if assets:
        sim["assets_dir"] = assets
    node_args = {k: arg[k] for k in ("namespace", "use_sim_time", "node_name", "robot_state_publisher",
                                     "rviz", "rviz_config")}
    node_args.update(config=config, assets_dir=assets)
    return [
        Node(package="vsf_sensor_ros", executable="contact_sim_node", namespace=arg["namespace"],
             parameters=[sim], output="screen", emulate_tty=True),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(_share("launch", "real_punyo.launch.py")),
                                 launch_arguments=node_args.items()),
    ]


def generate_launch_description() -> LaunchDescription:
    """The launch arguments and one OpaqueFunction building the processes from them."""
    return LaunchDescription([
        DeclareLaunchArgument("world", default_value="embedded", description="embedded | kinova"),
        DeclareLaunchArgument("config", default_value="",
                              description="sensor_node parameter file (default: the world's shipped one)"),
        DeclareLaunchArgument("assets_dir", default_value="",
                              description="Kinova + Punyo files (world kinova)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the nodes"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="follow /clock (the package's simulator publishes none)"),
        DeclareLaunchArgument("node_name", default_value="sensor_node", description="sensor_node's name"),
        DeclareLaunchArgument("duration_s", default_value="12.0", description="simulated seconds"),
        DeclareLaunchArgument("rate_hz", default_value="100.0", description="simulator steps per second"),
        DeclareLaunchArgument("robot_state_publisher", default_value="true",
                              description="start robot_state_publisher with the node's URDF"),
        DeclareLaunchArgument("rviz", default_value="false", description="start rviz2"),
        DeclareLaunchArgument("rviz_config", default_value=_share("config", "sensor_node.rviz"),
                              description="rviz2 configuration"),
        OpaqueFunction(function=_setup),
    ])
