"""``sensor_node``'s own command line, outside the ROS arguments.

Only ``-h`` / ``--help`` (:func:`usage`) is the node's; everything else goes through ``--ros-args``
(:func:`user_args` finds what is outside those blocks).  A parameter file rcl cannot parse fails in
``rclpy.init``; :func:`parameter_file_error` turns rcl's error into the one ``configuration error``
line the node prints.
"""
from __future__ import annotations

import argparse
from typing import List


def usage() -> argparse.ArgumentParser:
    """The command line: only ``-h`` / ``--help``; everything else goes through ``--ros-args``."""
    return argparse.ArgumentParser(
        prog="sensor_node", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Predicted tactile readings (and their force Jacobians) of the configured sensors, "
                    "live over ROS 2: contacts + joint_states in, <s>/predicted, <s>/residual, "
                    "<s>/jacobian, <s>/markers and /diagnostics out; services tare, <s>/tare, "
                    "save_calibration.",
        epilog="examples:\n"
               "  ros2 run vsf_sensor_ros sensor_node --ros-args --params-file config/sensor_node.yaml\n"
               "  ros2 run vsf_sensor_ros sensor_node --ros-args -p use_sim_time:=true "
               "--params-file config/kinova_punyo_real.yaml\n"
               "Parameters: ros2 param describe /sensor_node <name>, README.md and docs/interface.md.\n"
               "Environment: VSF_ASSETS (base of relative paths, over assets_dir); VSF_TRIMESH_EXTRAS=1\n"
               "  (load trimesh's optional dependencies, which the node leaves out to save memory:\n"
               "  for a mesh format whose loader reports 'import of <module> halted').")


def user_args(argv: List[str]) -> List[str]:
    """The arguments outside ``--ros-args ... [--]`` blocks (program name dropped).

    Split by hand: rclpy's ``remove_ros_args`` parses the parameter files too, and a file rcl
    cannot read must reach ``rclpy.init`` to be reported as a configuration error.
    """
    out: List[str] = []
    in_ros = False
    for a in argv[1:]:
        if a == "--ros-args":
            in_ros = True
        elif in_ros and a == "--":
            in_ros = False
        elif not in_ros:
            out.append(a)
    return out


def parameter_file_error(exc: Exception) -> str:
    """The ``[FATAL]`` line of rcl's error for a parameter file it cannot parse, with a hint when known."""
    text = " ".join(str(exc).split())
    hint = ""
    # rcl reports every parse failure as one RCLError; this hint only adds to its text
    if "same type" in text:
        hint = " (ROS 2 parameter files need one element type per list: write 0.0 not 0)"
    return f"[FATAL] [sensor_node]: configuration error: {text}{hint}"
