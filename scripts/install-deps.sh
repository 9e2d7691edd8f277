#!/usr/bin/env bash
# Install the Debian 12 packages needed to build and test ingot.
# Runs apt only when something is missing, so reruns are fast.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ gcc make binutils
  libonnx-dev libprotobuf-dev protobuf-compiler
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev
  python3 python3-numpy python3-onnx python3-torch python3-torchvision python3-sklearn
  python3-dev pybind11-dev python3-pybind11 python3-pytest pkg-config
  clang-14 libclang-rt-14-dev
  gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
  libvulkan-dev mesa-vulkan-drivers glslang-tools vulkan-validationlayers spirv-tools
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-deps: not root and sudo is not available" >&2
  exit 2
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${PACKAGES[@]}"
echo "install-deps: done"
