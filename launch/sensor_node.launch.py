"""Launch the sensor node with a parameter file (default: the package's config/sensor_node.yaml).

    ros2 launch vsf_sensor_ros sensor_node.launch.py
    ros2 launch vsf_sensor_ros sensor_node.launch.py config:=/path/to/kinova_punyo.yaml

Arguments:
    config: parameter YAML for the node.
    node_name: name of the node (default ``sensor_node``; the YAML's top-level key
        must match it, or be ``/**``).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description() -> LaunchDescription:
    """The node plus its two launch arguments."""
    default_config = os.path.join(get_package_share_directory("vsf_sensor_ros"), "config",
                                  "sensor_node.yaml")
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value=default_config,
                              description="parameter YAML for sensor_node"),
        DeclareLaunchArgument("node_name", default_value="sensor_node",
                              description="node name (matches the YAML's top-level key)"),
        Node(package="vsf_sensor_ros", executable="sensor_node", name=LaunchConfiguration("node_name"),
             parameters=[LaunchConfiguration("config")], output="screen", emulate_tty=True),
    ])
