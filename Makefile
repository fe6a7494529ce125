# vsf_sensor_ros — developer entry points.  Every target creates or reuses the venv
# and installs what the package needs; nothing else has to be done first.
#
# ROS_DISTRO chooses the ROS 2 Python runtime of the pip path, each in its own venv
# so two distributions never mix:  `make test` = Kilted wheels in .venv (default),
# `make test ROS_DISTRO=jazzy` = Jazzy wheels in .venv-jazzy.  A sourced ROS 2
# install sets ROS_DISTRO itself; its rclpy is then used and no wheels are installed.
PYTHON ?= python3
ROS_DISTRO ?= kilted
ifeq ($(ROS_DISTRO),kilted)
VENV ?= .venv
ROS_REQUIREMENTS ?= requirements-ros.txt
ROS_BUILD_REQUIREMENTS ?= requirements-ros-build.txt
else
VENV ?= .venv-$(ROS_DISTRO)
ROS_REQUIREMENTS ?= requirements-ros-$(ROS_DISTRO).txt
ROS_BUILD_REQUIREMENTS ?= requirements-ros-$(ROS_DISTRO)-build.txt
endif
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.vsf_sensor_ros-installed
export ROS_DISTRO
# ROS tests and tools stay on this host, with the one variable the distribution
# reads: Humble knows only ROS_LOCALHOST_ONLY; Iron and newer read the discovery
# range and print deprecation warnings when ROS_LOCALHOST_ONLY is set as well.
ifeq ($(ROS_DISTRO),humble)
export ROS_LOCALHOST_ONLY ?= 1
else
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
endif

.PHONY: venv test test-durations fuzz demo demo-kinova demo-mujoco demo-real bench lint clean

venv: $(STAMP)

INTERFACE_SOURCES := $(wildcard interfaces/*/* interfaces/*/*/*) tools/build_interfaces.sh tools/local_python.cmake

$(STAMP): setup.py setup.cfg $(wildcard $(ROS_REQUIREMENTS) $(ROS_BUILD_REQUIREMENTS)) $(INTERFACE_SOURCES)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	@# The ROS 2 Python runtime comes from wheels only when no ROS install is sourced.
	@$(PY) -c 'import rclpy' 2>/dev/null && echo "rclpy found: using the sourced ROS 2" || \
	  { test -f $(ROS_REQUIREMENTS) || \
	    { echo "no ROS 2 '$(ROS_DISTRO)' wheels ($(ROS_REQUIREMENTS) missing): source a ROS 2 install or use ROS_DISTRO=kilted or jazzy" >&2; exit 1; }; \
	    $(PIP) install --quiet -r $(ROS_REQUIREMENTS); }
	@# torch pinned, installed as pip resolves it and only when missing: a torch installed into the
	@# venv beforehand (e.g. the CPU build from PyTorch's CPU wheel index, see docs/install.md) is kept.
	@$(PY) -c 'import torch' 2>/dev/null || $(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[test,demo]'
	@# tf2_msgs and ros_gz_interfaces have no wheel: built from interfaces/ into the venv when
	@# they do not import (a sourced ROS 2 keeps its own); needs gcc, g++ and cmake.
	@tools/build_interfaces.sh $(VENV) $(ROS_BUILD_REQUIREMENTS)
	@touch $(STAMP)

# The suite as TEST_GROUPS pytest processes side by side (pytest-split, balanced by the per-test times
# in test/durations.json; each group leases its own ROS_DOMAIN_ID).  Most of a ROS test's time is a
# node process starting and DDS discovery, not CPU, so three groups on two cores take about half
# the serial time.  Each group's output appears when it ends.  TEST_GROUPS=1 runs the suite in one
# process; `make test-durations` (serial) refreshes the times after the suite changed a lot.
TEST_GROUPS ?= 3
ifneq ($(shell echo 'x$(TEST_GROUPS)' | grep -Ex 'x[1-9][0-9]?'),x$(TEST_GROUPS))
$(error TEST_GROUPS must be a whole number from 1 to 99, got '$(TEST_GROUPS)')
endif
PYTEST_SPLIT := -m pytest -q test --durations-path test/durations.json

test: venv
	@echo "pytest in $(TEST_GROUPS) groups side by side; each group's output appears when it ends"
	@$(MAKE) --no-print-directory -k -j$(TEST_GROUPS) --output-sync=target \
	  $(addprefix test-group-,$(shell seq $(TEST_GROUPS)))

test-group-%: venv
	$(PY) $(PYTEST_SPLIT) --splits $(TEST_GROUPS) --group $* --splitting-algorithm duration_based_chunks

test-durations: venv
	$(PY) $(PYTEST_SPLIT) --store-durations

# The fuzz targets of test/fuzz at full size (>= 10^5 examples in all; `make test` runs a CI-sized profile).
fuzz: venv
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q test/fuzz

demo: venv
	$(PY) -m vsf_sensor_ros.demo.demo --world embedded --out demo_out/embedded

demo-kinova: venv
	$(PY) -m vsf_sensor_ros.demo.demo --world kinova --out demo_out/kinova

# The same session with MuJoCo as the contact source (its force and touch sensors measure the pad and the load cell).
demo-mujoco: venv
	$(PY) -m vsf_sensor_ros.demo.demo --world embedded --backend mujoco --out demo_out/mujoco

# Half speed: the camera frames (0.6 MB each) beside the small messages stay within what DDS on a
# busy 2-core host delivers in time (at full speed late repairs paired frames with stale pressures).
# the recording's data.json (its camera/ folder beside it); `make demo-real RECORDING=/path/to/data.json`
RECORDING ?= ../shared/fixtures/punyo_poke_ur5e/data.json
demo-real: venv
	$(PY) -m vsf_sensor_ros.demo.replay --recording $(RECORDING) --out demo_out/real --speed 0.5

bench: venv
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build install log *.egg-info demo_out .hypothesis
