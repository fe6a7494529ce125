"""Next to a real robot and a real Punyo: sensor_node, robot_state_publisher and rviz2.

    ros2 launch vsf_sensor_ros real_punyo.launch.py assets_dir:=/path/to/kinova_punyo
    ros2 launch vsf_sensor_ros real_punyo.launch.py assets_dir:=/path/to/kinova_punyo \
        namespace:=punyo use_sim_time:=true rviz:=false

Arguments:
    config: sensor_node parameter file (default: the package's config/kinova_punyo_real.yaml).
    assets_dir: directory of the robot files the config names relatively (URDF, Punyo mesh,
        mount transform, calibration file); overrides the file's assets_dir ($VSF_ASSETS wins
        over both, as in the node). Given to the node as an absolute path.
    namespace: namespace of sensor_node and robot_state_publisher ("" = none). The config is
        handed to the node keyed ``/**``, so its top-level node key need not name the namespace.
    use_sim_time: true when a simulator publishes /clock (every started node follows it).
    node_name: name of sensor_node (default ``sensor_node``).
    urdf: URDF file for both sensor_node and robot_state_publisher (default: the config's
        robot_description_path resolved against assets_dir, or the package's embedded arm).
    joint_states_topic: where the robot driver publishes sensor_msgs/JointState
        (default ``joint_states``, relative to the namespace; e.g. ``/joint_states``).
    robot_state_publisher: start robot_state_publisher with that URDF (default true). Its
        joints carry the driver's names when the config has a ``joint_name_map``.
    rviz: start rviz2 (default true) with rviz_config (default: config/kinova_punyo_real.rviz,
        the displays of the real configuration's sensors; its topics are moved into the namespace).

A problem found before starting (missing config, assets directory or URDF, a bad
joint_name_map entry) stops the launch with one message naming the argument or parameter.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from vsf_sensor_ros.rig import launch_support as ls


def _share(*parts: str) -> str:
    return os.path.join(get_package_share_directory("vsf_sensor_ros"), *parts)


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def _setup(context, *args, **kwargs):
    """Resolve the arguments and the parameter file, then build the processes."""
    arg = {k: LaunchConfiguration(k).perform(context) for k in (
        "config", "assets_dir", "namespace", "use_sim_time", "node_name", "urdf", "joint_states_topic",
        "robot_state_publisher", "rviz", "rviz_config")}
    sim_time = _truthy(arg["use_sim_time"])
    params = ls.load_node_parameters(arg["config"], arg["node_name"])
    assets = ls.effective_assets_dir(arg["assets_dir"], params)
    urdf = ls.robot_description_file(params, assets, arg["urdf"])
    if assets:
        params["assets_dir"] = assets
    if arg["urdf"].strip() or params.get("robot_description_path"):
        params["robot_description_path"] = str(urdf)
    params["use_sim_time"] = sim_time
    joints = [("joint_states", arg["joint_states_topic"])]
    actions = [Node(package="vsf_sensor_ros", executable="sensor_node", name=arg["node_name"],
                    namespace=arg["namespace"], parameters=[str(ls.write_node_parameters(params))],
                    remappings=joints, output="screen", emulate_tty=True)]
    if _truthy(arg["robot_state_publisher"]):
        name_map = ls.parse_joint_name_map(params.get("joint_name_map") or [])
        description = ls.urdf_for_state_publisher(str(urdf), name_map)
        actions.append(Node(package="robot_state_publisher", executable="robot_state_publisher",
                            namespace=arg["namespace"], output="screen", remappings=joints,
                            parameters=[{"robot_description": description, "use_sim_time": sim_time}]))
    if _truthy(arg["rviz"]):
        # rviz stays global (it reads /tf); its config's topics move into the namespace instead
        rviz_config = ls.rviz_config_in_namespace(arg["rviz_config"], arg["namespace"])
        actions.append(Node(package="rviz2", executable="rviz2", arguments=["-d", str(rviz_config)],
                            output="screen",
                            parameters=[{"use_sim_time": sim_time}]))
    return actions


def generate_launch_description() -> LaunchDescription:
    """The launch arguments and one OpaqueFunction building the processes from them."""
    return LaunchDescription([
        DeclareLaunchArgument("config", default_value=_share("config", "kinova_punyo_real.yaml"),
                              description="sensor_node parameter file"),
        DeclareLaunchArgument("assets_dir", default_value="",
                              description="directory of the robot files named relatively in the config"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the nodes"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="follow /clock (a simulator publishing it)"),
        DeclareLaunchArgument("node_name", default_value="sensor_node", description="sensor_node's name"),
        DeclareLaunchArgument("urdf", default_value="",
                              description="URDF for sensor_node and robot_state_publisher (default: "
                                          "the config's robot_description_path)"),
        DeclareLaunchArgument("joint_states_topic", default_value="joint_states",
                              description="JointState topic of the robot driver"),
        DeclareLaunchArgument("robot_state_publisher", default_value="true",
                              description="start robot_state_publisher with the same URDF"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2"),
        DeclareLaunchArgument("rviz_config", default_value=_share("config", "kinova_punyo_real.rviz"),
                              description="rviz2 configuration"),
        OpaqueFunction(function=_setup),
    ])
