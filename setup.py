"""ament_python / pip build of vsf_sensor_ros."""
from glob import glob

from setuptools import find_packages, setup

package_name = "vsf_sensor_ros"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks", "benchmarks.*"]),
    package_data={package_name: ["data/*", "data/*/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*")),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy",
        "scipy",
        "torch>=2.0",
        "trimesh",
        "pycollada>=0.9",
        "xacro>=2.0",
        "shapely>=2.0",
        "rtree",
        "klampt>=0.10",
        "pyyaml",
        "numba>=0.61",
        "meshio>=5.3",
        "opencv-python-headless>=4.8",
    ],
    extras_require={
        "test": ["pytest", "pytest-split>=0.9", "flake8", "mcap", "hypothesis>=6.100"],
        "demo": ["matplotlib", "rosbags>=0.10", "psutil", "mujoco>=3.3"],
    },
    zip_safe=True,
    maintainer="vsf_sensor_ros developers",
    maintainer_email="vsf-sensor-ros@users.noreply.github.com",
    description="Predicted tactile sensor readings (Punyo, Klampt ContactSensor, "
                "Isaac-style contact sensors) and their force Jacobians, served over ROS 2.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "sensor_node = vsf_sensor_ros.ros.sensor_node:run",
            "contact_sim_node = vsf_sensor_ros.contact_sources.contact_sim_node:main",
            "vsf_demo = vsf_sensor_ros.demo.demo:main",
            "wrench_contact_node = vsf_sensor_ros.contact_sources.wrench_contact_node:main",
            "vsf_replay = vsf_sensor_ros.demo.replay:main",
            "mujoco_contact_node = vsf_sensor_ros.contact_sources.mujoco_contact_node:main",
            "link_frames_node = vsf_sensor_ros.demo.link_frames_node:main",
            "membrane_force_node = vsf_sensor_ros.ros.membrane_force_node:run",
        ],
    },
)
