"""Every test folder's ROS session: real rclpy + DDS, confined to this host, on a domain no one else uses.

Before ``rclpy.init`` (this module is imported first): a free ``ROS_DOMAIN_ID``
is leased with a lock file under ``/tmp`` (``vsf_sensor_ros.demo.ros_env``)
and discovery is confined to loopback with the variable the installed
distribution reads (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` on Jazzy and
Kilted, ``ROS_LOCALHOST_ONLY=1`` on Humble), so parallel sessions never see
each other and nothing leaves the machine.  Child processes (the sensor node under test) inherit
the environment.
"""
from __future__ import annotations

import pytest

from vsf_sensor_ros.demo.ros_env import apply_localhost_env, free_domain_id, release_domain_id

DOMAIN_ID = free_domain_id()
apply_localhost_env(DOMAIN_ID)


def pytest_sessionfinish(session, exitstatus) -> None:
    """End the domain-id lease (the kernel would drop it at exit; this closes the lock file)."""
    release_domain_id(DOMAIN_ID)


@pytest.fixture(scope="session")
def ros_domain_id() -> int:
    """The leased ``ROS_DOMAIN_ID`` of this test session."""
    return DOMAIN_ID


@pytest.fixture(scope="session")
def rclpy_context():
    """``rclpy.init()`` once per session (after the environment above is set).

    A context someone else initialised first is left to its owner (the default context can be
    initialised only once).
    """
    import rclpy
    owner = not rclpy.ok()
    if owner:
        rclpy.init()
    yield
    if owner:
        rclpy.try_shutdown()


@pytest.fixture
def private_ros(monkeypatch):
    """A private rclpy context on its own leased domain (loopback discovery only), with an executor.

    Yields ``(context, executor, domain_id)``; for tests that start nodes in-process and must not
    share the session's domain with node processes of other tests.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    domain = free_domain_id()
    for key in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY"):
        monkeypatch.delenv(key, raising=False)
    apply_localhost_env(domain)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    executor = SingleThreadedExecutor(context=ctx)
    yield ctx, executor, domain
    executor.shutdown()
    rclpy.shutdown(context=ctx)
    release_domain_id(domain)


@pytest.fixture
def default_context_free():
    """For tests of a console script's ``main()``, which initialises and shuts down rclpy's default
    context itself (as ``ros2 run`` does): when :func:`rclpy_context` holds it for the session, it is
    shut down for the test and initialised again afterwards (no session-wide node lives in it)."""
    import rclpy
    held = rclpy.ok()
    if held:
        rclpy.shutdown()
    yield
    if held and not rclpy.ok():
        rclpy.init()
