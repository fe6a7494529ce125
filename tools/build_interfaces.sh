#!/usr/bin/env bash
# Build the interface packages in interfaces/ (tf2_msgs, ros_gz_interfaces) into a
# Python virtual environment, for the ROS 2 pip path, which has no wheel of them.
#
#   tools/build_interfaces.sh VENV BUILD_REQUIREMENTS
#
# A package is built only when the venv's Python cannot import it (a sourced ROS 2
# install keeps its own), or when it was built here from definitions that have
# changed since.  The build toolchain (ament_cmake, the rosidl generators) comes
# from BUILD_REQUIREMENTS, installed with pip only when rclpy itself comes from the
# venv's wheels.  Everything is installed into the venv, so nothing has to be set
# at run time.  Needs gcc, g++ and cmake (>= 3.21); without them it stops with one
# line naming what is missing.  The venv's own tools come first (a cmake installed
# with the venv's pip is used even when the venv is not activated).
set -euo pipefail

venv=$(cd "${1:?usage: $0 VENV BUILD_REQUIREMENTS}" && pwd)
reqs=${2:?usage: $0 VENV BUILD_REQUIREMENTS}
root=$(cd "$(dirname "$0")/.." && pwd)
py=$venv/bin/python
export PATH="$venv/bin:$PATH"
packages=(tf2_msgs ros_gz_interfaces)

probe() {   # a type the node uses from each package
  case $1 in
    tf2_msgs) echo "from tf2_msgs.msg import TFMessage" ;;
    ros_gz_interfaces) echo "from ros_gz_interfaces.msg import Contacts, Contact, Entity, JointWrench" ;;
  esac
}

digest() {  # hash of a package's definition files and of this build's recipe
  (cd "$root" && find "interfaces/$1" -type f -print0 | sort -z | xargs -0 sha256sum
   sha256sum tools/build_interfaces.sh tools/local_python.cmake) | sha256sum | cut -d' ' -f1
}

todo=()
for pkg in "${packages[@]}"; do
  stamp=$venv/share/$pkg/vsf_interfaces.sha256
  if "$py" -c "$(probe "$pkg")" 2>/dev/null; then
    # importable: keep it unless it is ours and its definitions changed
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$(digest "$pkg")" ]; then todo+=("$pkg"); fi
  else
    todo+=("$pkg")
  fi
done
if [ ${#todo[@]} -eq 0 ]; then
  echo "interfaces: ${packages[*]} importable, nothing to build"
  exit 0
fi

lacking=()
for tool in gcc g++ cmake; do command -v "$tool" >/dev/null 2>&1 || lacking+=("$tool"); done
if [ ${#lacking[@]} -gt 0 ]; then
  echo "error: building ${todo[*]} (ROS 2 interface packages without a wheel) needs ${lacking[*]}: install them (Debian/Ubuntu: apt-get install g++ cmake; cmake also with $venv/bin/pip install cmake) and run make again" >&2
  exit 1
fi
cmake_path=$(command -v cmake)
# a broken cmake (e.g. a missing shared library) would otherwise end the script here silently (set -e)
status=0
cmake_out=$(cmake --version 2>&1) || status=$?
if [ "$status" -ne 0 ]; then
  echo "error: building ${todo[*]} needs a working cmake, but '$cmake_path --version' failed (exit $status): $(printf '%s' "$cmake_out" | head -n 1): reinstall it ($venv/bin/pip install cmake, or your distribution's package) and run make again" >&2
  exit 1
fi
# ament_cmake of the wheels needs cmake 3.21 or newer; an older one fails deep in its own output.
cmake_version=$(printf '%s\n' "$cmake_out" | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
if ! printf '3.21\n%s\n' "$cmake_version" | sort -V -C; then
  echo "error: building ${todo[*]} needs cmake >= 3.21, found ${cmake_version:-an unknown version} ($cmake_path): install a newer one ($venv/bin/pip install cmake, or your distribution's backports) and run make again" >&2
  exit 1
fi

prefix_path=$venv
if ! rclpy_file=$("$py" -c 'import rclpy; print(rclpy.__file__)' 2>/dev/null); then
  echo "error: rclpy is not importable with $py: run make venv" >&2
  exit 1
fi
case $rclpy_file in
  "$venv"/*)   # the wheels' rclpy: the toolchain comes as wheels as well
    t0=$(date +%s)
    "$py" -m pip install --quiet -r "$reqs"
    echo "interfaces: build toolchain ($reqs) installed in $(( $(date +%s) - t0 )) s" ;;
  *)           # a sourced ROS 2: its ament_cmake and generators, its message packages
    prefix_path="$venv;${AMENT_PREFIX_PATH//:/;}" ;;
esac

build_root=$venv/.interfaces-build
for pkg in "${todo[@]}"; do
  t0=$(date +%s)
  bdir=$build_root/$pkg
  log=$build_root/$pkg.log
  rm -rf "$bdir"
  mkdir -p "$bdir"
  if ! {
    cmake -S "$root/interfaces/$pkg" -B "$bdir" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix_path" \
      -DCMAKE_INSTALL_PREFIX="$venv" \
      -DCMAKE_INSTALL_RPATH="$venv/lib" \
      -DPython3_EXECUTABLE="$py" \
      -DPython3_FIND_VIRTUALENV=ONLY \
      -DBUILD_TESTING=OFF \
      -DCMAKE_PROJECT_INCLUDE="$root/tools/local_python.cmake" &&
    cmake --build "$bdir" --parallel "${VSF_BUILD_JOBS:-2}" &&
    cmake --install "$bdir"
  } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "error: building $pkg failed; full log: $log" >&2
    exit 1
  fi
  if ! "$py" -c "$(probe "$pkg")" 2>>"$log"; then
    tail -n 5 "$log" >&2
    echo "error: $pkg was built and installed into $venv but does not import; log: $log" >&2
    exit 1
  fi
  digest "$pkg" >"$venv/share/$pkg/vsf_interfaces.sha256"
  rm -rf "$bdir" "$log"
  echo "interfaces: built $pkg into $venv in $(( $(date +%s) - t0 )) s"
done
rmdir "$build_root" 2>/dev/null || true
