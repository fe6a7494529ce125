# vsf_sensor_ros — developer entry points.  Every target creates or reuses .venv
# and installs what the package needs; nothing else has to be done first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.vsf_sensor_ros-installed
# ROS tests and tools stay on this host (DESIGN §4).
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export ROS_LOCALHOST_ONLY ?= 1

.PHONY: venv test fuzz demo demo-kinova bench lint clean

venv: $(STAMP)

$(STAMP): setup.py setup.cfg requirements-ros.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	@# The ROS 2 Python runtime comes from wheels only when no ROS install is sourced.
	@$(PY) -c 'import rclpy' 2>/dev/null && echo "rclpy found: using the sourced ROS 2" || \
	  $(PIP) install --quiet -r requirements-ros.txt
	@# CPU build of torch, pinned (a bare 'torch' would pull a CUDA build).
	@$(PY) -c 'import torch' 2>/dev/null || $(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[test,demo]'
	@touch $(STAMP)

test: venv
	$(PY) -m pytest -q test

# The fuzz targets of test/fuzz at full size (>= 10^5 examples in all; `make test` runs a CI-sized profile).
fuzz: venv
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -q test/fuzz

demo: venv
	$(PY) -m vsf_sensor_ros.apps.demo --world embedded --out demo_out/embedded

demo-kinova: venv
	$(PY) -m vsf_sensor_ros.apps.demo --world kinova --out demo_out/kinova

bench: venv
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build install log *.egg-info demo_out .hypothesis
