"""Launch the sensor node alone with a parameter file (default: the package's config/sensor_node.yaml).

    ros2 launch vsf_sensor_ros sensor_node.launch.py
    ros2 launch vsf_sensor_ros sensor_node.launch.py config:=/path/to/kinova_punyo.yaml \
        assets_dir:=/path/to/kinova_punyo

Arguments:
    config: parameter YAML for the node.
    node_name: name of the node (default ``sensor_node``; the YAML's top-level key
        must match it, or be ``/**``).
    assets_dir: base of the relative file parameters ("" = the file's ``assets_dir``;
        $VSF_ASSETS wins over both, as in the node).  Given to the node as an absolute path.
    namespace: namespace of the node ("" = none); the file is handed to the node keyed ``/**``,
        so it applies in any namespace.
    use_sim_time: true when a simulator publishes /clock.

For robot_state_publisher and rviz2 beside the node, use real_punyo.launch.py; for the
package's simulator and the node, sim_sensor_node.launch.py.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from vsf_sensor_ros.rig import launch_support as ls


def _setup(context, *args, **kwargs):
    """The node, its parameter file re-keyed for any namespace, with assets_dir made absolute."""
    arg = {k: LaunchConfiguration(k).perform(context) for k in (
        "config", "node_name", "assets_dir", "namespace", "use_sim_time")}
    params = ls.load_node_parameters(arg["config"], arg["node_name"])
    assets = ls.effective_assets_dir(arg["assets_dir"], params)
    if assets:
        params["assets_dir"] = assets
    params["use_sim_time"] = arg["use_sim_time"].strip().lower() in ("1", "true", "yes", "on")
    return [Node(package="vsf_sensor_ros", executable="sensor_node", name=arg["node_name"],
                 namespace=arg["namespace"], parameters=[str(ls.write_node_parameters(params))],
                 output="screen", emulate_tty=True)]


def generate_launch_description() -> LaunchDescription:
    """The node and its launch arguments."""
    default_config = os.path.join(get_package_share_directory("vsf_sensor_ros"), "config",
                                  "sensor_node.yaml")
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value=default_config,
                              description="parameter YAML for sensor_node"),
        DeclareLaunchArgument("node_name", default_value="sensor_node",
                              description="node name (matches the YAML's top-level key)"),
        DeclareLaunchArgument("assets_dir", default_value="",
                              description="base of relative file parameters (default: the file's)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="follow /clock (a simulator publishing it)"),
        OpaqueFunction(function=_setup),
    ])
