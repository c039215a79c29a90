#!/usr/bin/env bash
# Installs the build tools of the embedded model engine (the `local` provider, which compiles
# llama.cpp through the llama-cpp-sys-2 crate) into the project's own, git-ignored `.tools/`:
#
#   .tools/bin/cmake        cmake, from PyPI's `cmake` wheel (llama.cpp is built with CMake)
#   .tools/lib/libclang.so  libclang, from PyPI's `libclang` wheel (bindgen reads llama.h with it)
#   .tools/bin/clang        a stand-in that tells bindgen the C compiler's header search path
#
# `.cargo/config.toml` points cargo at these two paths (CMAKE, LIBCLANG_PATH, CLANG_PATH), so no root, no
# system package and no virtualenv is needed: only python3 with pip. pip's own configuration
# (index, proxy, certificates) is respected. Run it again at any time: it returns at once when
# the pinned versions are already in place.
#
# Already have cmake and libclang? Variables set in your environment win over the config file:
# `CMAKE=$(command -v cmake) LIBCLANG_PATH=/usr/lib/llvm-16/lib cargo build` works without this.
set -euo pipefail

CMAKE_VERSION=4.4.5
LIBCLANG_VERSION=18.1.1

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"
stamp="$tools/versions"
wanted="cmake==$CMAKE_VERSION libclang==$LIBCLANG_VERSION clang-stand-in"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -x "$tools/bin/cmake" && -x "$tools/bin/clang" && -e "$tools/lib/libclang.so" ]]; then
    echo "build tools ready in .tools/ ($wanted)"
    exit 0
fi

python="${PYTHON:-python3}"
if ! "$python" -m pip --version >/dev/null 2>&1; then
    echo "error: '$python -m pip' does not work; install Python 3 with pip (Debian: apt-get install python3-pip)" >&2
    exit 2
fi

echo "installing $wanted into .tools/ with pip"
rm -rf "${tools:?}/py" "${tools:?}/bin" "${tools:?}/lib" "$stamp"
mkdir -p "$tools/bin" "$tools/lib"
# --target installs beside the project, not into the interpreter, so it needs no root and no
# virtualenv, and Debian's externally-managed-environment guard does not apply.
"$python" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$tools/py" "cmake==$CMAKE_VERSION" "libclang==$LIBCLANG_VERSION"

ln -s ../py/cmake/data/bin/cmake "$tools/bin/cmake"
ln -s ../py/clang/native/libclang.so "$tools/lib/libclang.so"

# bindgen parses llama.h with libclang, which needs the compiler's own headers (stddef.h,
# stdbool.h); the wheel ships none and looks for them relative to the working directory. bindgen
# asks a `clang` executable (CLANG_PATH) for the header search path: this stand-in answers with
# the system C compiler's path, in the same format (`cc -E -v` prints it as clang does).
cat >"$tools/bin/clang" <<'SH'
#!/bin/sh
# Stand-in for clang, written by scripts/setup-tools.sh: bindgen runs it only to learn the C
# header search path, which the system C compiler prints in the same format.
exec "${CC:-cc}" -E -x c - -v </dev/null
SH
chmod +x "$tools/bin/clang"
if [[ "$("$tools/bin/clang" 2>&1)" != *"search starts here"* ]]; then
    echo "error: the C compiler (${CC:-cc}) did not print its header search path; install gcc (Debian: apt-get install build-essential)" >&2
    exit 2
fi

"$tools/bin/cmake" --version | head -n 1
echo "$wanted" >"$stamp"
echo "build tools ready in .tools/"
