"""launch_testing: the node started by launch_ros answers a contacts cloud and exits cleanly.

Runs where ROS 2 is installed (``launch_test`` or pytest with the launch_testing plugin, after
``colcon build``); skipped where ``launch_testing`` is not installed (plain-wheel installs).
"""
import os
import time
import unittest

import pytest

launch_testing = pytest.importorskip("launch_testing")
launch_ros = pytest.importorskip("launch_ros")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from sensor_msgs.msg import FluidPressure, PointCloud2  # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "..", "config", "sensor_node.yaml")


@pytest.mark.launch_test
def generate_test_description():
    node = launch_ros.actions.Node(package="vsf_sensor_ros", executable="sensor_node",
                                   parameters=[os.path.abspath(CONFIG)], output="screen")
    return launch.LaunchDescription([node, launch_testing.actions.ReadyToTest()]), {"sensor_node": node}


class TestSensorNodeAnswers(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("launch_test_probe")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def test_empty_cloud_gives_a_pressure_prediction(self):
        from vsf_sensor_ros.embedded_world import embedded_world
        from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
        got = []
        self.node.create_subscription(FluidPressure, "/punyo_pressure/predicted", got.append, 10)
        pub = self.node.create_publisher(PointCloud2, "/contacts", 10)
        msg = contacts_to_pointcloud2({}, embedded_world().body_names, stamp=None, frame_id="world")
        end = time.monotonic() + 30.0
        while time.monotonic() < end and not got:
            if pub.get_subscription_count() > 0:
                pub.publish(msg)
            rclpy.spin_once(self.node, timeout_sec=0.2)
        self.assertTrue(got, "no /punyo_pressure/predicted")
        self.assertEqual(got[0].fluid_pressure, 0.0)


@launch_testing.post_shutdown_test()
class TestSensorNodeShutdown(unittest.TestCase):

    def test_exit_code_is_clean(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2])
