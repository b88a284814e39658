#!/usr/bin/env bash
# Installs what building Grail needs beyond a Rust toolchain: cmake and libclang, for the
# embedded model's runtime (llama.cpp, built from source by the `llama-cpp-2` crate), and
# a C++ compiler. Does nothing when they are there. Uses apt-get (as root, or with sudo);
# elsewhere it says what to install.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
# bindgen loads libclang at build time, and needs clang's own headers (stddef.h): on
# Debian and Ubuntu, libclang-dev brings both; elsewhere, look for the library.
if [ -z "${LIBCLANG_PATH:-}" ]; then
    if command -v dpkg >/dev/null 2>&1; then
        dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
    elif ! ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so'; then
        missing+=(libclang-dev)
    fi
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v cargo >/dev/null 2>&1; then
    echo "note: no cargo on PATH; install Rust (stable, 1.88 or newer) first" >&2
fi
if command -v apt-get >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
            echo "error: installing ${missing[*]} needs root (apt-get); run this script as root" >&2
            exit 1
        fi
    fi
    echo "installing ${missing[*]} (needed to build llama.cpp, Grail's model runtime)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "error: please install ${missing[*]} (cmake, a C++ compiler and libclang: Grail builds llama.cpp from source)" >&2
    exit 1
fi
