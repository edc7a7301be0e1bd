#!/bin/sh
# Runs async-lab from this bundle (made by `cargo xtask bundle`) with the kernels' PTX beside it.
# Usage: ./run.sh [async-lab arguments...]
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)

# async-lab links the NVIDIA driver library; without one the program cannot even start.
# The loader finds it through ld.so's cache or LD_LIBRARY_PATH; container images often put it in a directory
# that is in neither, so look there too and add the one we find.
has_driver() {
    if command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
        return 0
    fi
    old_ifs=$IFS
    IFS=:
    set -f # the folders are split on ':' only, never expanded as file patterns
    for dir in ${LD_LIBRARY_PATH:-}; do
        if [ -n "$dir" ] && [ -e "$dir/libcuda.so.1" ]; then
            IFS=$old_ifs
            set +f
            return 0
        fi
    done
    set +f
    IFS=$old_ifs
    for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 \
        /usr/lib/aarch64-linux-gnu /usr/lib/wsl/lib /usr/local/cuda/compat; do
        if [ -e "$dir/libcuda.so.1" ]; then
            LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            export LD_LIBRARY_PATH
            return 0
        fi
    done
    return 1
}

if ! has_driver; then
    # No driver here: start async-lab on the bundle's stand-in library, so that everything that needs no GPU
    # (replay, report, compare, explain --replay, list) works; GPU commands then say "no NVIDIA driver", exit 3.
    echo "run.sh: no NVIDIA driver library (libcuda.so.1) in ld.so's cache, LD_LIBRARY_PATH or the usual folders; starting on the bundle's stand-in (commands that need no GPU work; if this machine has a driver, add its folder to LD_LIBRARY_PATH)" >&2
    LD_LIBRARY_PATH="$here/no-driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
fi

# The kernels' PTX beside this script, through the environment: an option would have to go before or after
# the caller's arguments, and either place breaks some command line (`help`, `--`).
ASYNC_LAB_KERNELS_PTX="$here/async_lab_kernels.ptx"
export ASYNC_LAB_KERNELS_PTX
# Relative paths in the arguments keep meaning what they meant in the caller's directory.
exec "$here/async-lab" "$@"
