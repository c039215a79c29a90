#!/usr/bin/env bash
# The action's first step: makes a `skill-factory` command available and writes its path as the
# step's output `path` (and its folder to $GITHUB_PATH, for the job's later steps). One of:
#   SF_BINARY   an existing executable (a build of your own): used as it is
#   SF_WHEEL    a wheel's path or URL: pip-installed into a venv under $RUNNER_TEMP
#   otherwise   the release SF_VERSION of SF_REPOSITORY for this runner's OS and architecture,
#               downloaded and checked against the release's SHA-256 before it is unpacked
# Runs outside GitHub as well: the variables GitHub sets are read with defaults where a local
# run can do without them.
set -euo pipefail

fail() {
  echo "::error title=skill-factory install::$1" >&2
  exit 1
}

temp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
exe=skill-factory
if [[ "${RUNNER_OS:-}" == Windows ]]; then exe=skill-factory.exe; fi

if [[ -n "${SF_BINARY:-}" ]]; then
  [[ -f "$SF_BINARY" && -x "$SF_BINARY" ]] ||
    fail "binary: '$SF_BINARY' is not an executable file (give the path of a skill-factory build, or leave binary empty to install one)"
  path="$SF_BINARY"
elif [[ -n "${SF_WHEEL:-}" ]]; then
  python=python3
  command -v "$python" >/dev/null 2>&1 || python=python
  command -v "$python" >/dev/null 2>&1 ||
    fail "wheel: no python3 on this runner to install '$SF_WHEEL' with (add actions/setup-python before this step)"
  venv="$(mktemp -d "$temp/skill-factory-venv.XXXXXX")"
  "$python" -m venv "$venv" || fail "wheel: '$python -m venv' failed"
  bin="$venv/bin"
  if [[ "${RUNNER_OS:-}" == Windows ]]; then bin="$venv/Scripts"; fi
  "$bin/python" -m pip install --quiet --disable-pip-version-check "$SF_WHEEL" ||
    fail "wheel: pip could not install '$SF_WHEEL'"
  path="$bin/$exe"
else
  version="${SF_VERSION#v}"
  [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] ||
    fail "version: '${SF_VERSION:-}' is not a release version such as 0.1.0"
  repository="${SF_REPOSITORY:-}"
  [[ -n "$repository" ]] || fail "no repository to download the release from (SF_REPOSITORY is empty)"
  # The targets the release workflow builds; a runner outside them gets no binary.
  case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
  Linux/X64) target=x86_64-unknown-linux-gnu ;;
  Linux/ARM64) target=aarch64-unknown-linux-gnu ;;
  macOS/X64) target=x86_64-apple-darwin ;;
  macOS/ARM64) target=aarch64-apple-darwin ;;
  Windows/X64) target=x86_64-pc-windows-msvc ;;
  *)
    fail "no release binary for runner OS '${RUNNER_OS:-}' and architecture '${RUNNER_ARCH:-}' (there are Linux X64 and ARM64, macOS X64 and ARM64, Windows X64): set binary or wheel instead"
    ;;
  esac
  name="skill-factory-$version-$target"
  archive="$name.tar.gz"
  if [[ "$target" == *windows* ]]; then archive="$name.zip"; fi
  url="https://github.com/$repository/releases/download/v$version/$archive"
  work="$(mktemp -d "$temp/skill-factory-$version.XXXXXX")"
  curl -fsSL --retry 3 -o "$work/$archive" "$url" || fail "could not download $url"
  curl -fsSL --retry 3 -o "$work/$archive.sha256" "$url.sha256" || fail "could not download $url.sha256"
  # Checked before anything of the archive is unpacked or run.
  expected="$(cut -d ' ' -f 1 <"$work/$archive.sha256" | tr 'A-F' 'a-f')"
  if command -v sha256sum >/dev/null 2>&1; then
    actual="$(sha256sum "$work/$archive" | cut -d ' ' -f 1)"
  else
    actual="$(shasum -a 256 "$work/$archive" | cut -d ' ' -f 1)"
  fi
  [[ "$expected" =~ ^[0-9a-f]{64}$ ]] || fail "$url.sha256 holds no SHA-256"
  [[ "$actual" == "$expected" ]] ||
    fail "$archive has SHA-256 $actual, but the release says $expected: not installed"
  if [[ "$archive" == *.zip ]]; then
    if command -v unzip >/dev/null 2>&1; then
      unzip -q "$work/$archive" -d "$work"
    else
      7z x -y "-o$work" "$work/$archive" >/dev/null
    fi
  else
    tar -xzf "$work/$archive" -C "$work"
  fi
  path="$work/$name/$exe"
  [[ -x "$path" ]] || fail "$archive holds no $name/$exe"
fi

# Later steps may run in another folder.
case "$path" in
/* | [A-Za-z]:*) ;;
*) path="$PWD/$path" ;;
esac
"$path" --version >&2 || fail "'$path --version' failed: the binary does not run on this runner"
if [[ -n "${GITHUB_PATH:-}" ]]; then dirname "$path" >>"$GITHUB_PATH"; fi
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then echo "path=$path" >>"$GITHUB_OUTPUT"; fi
echo "$path"
