#!/usr/bin/env bash
# Writes FILE.sha256 beside each FILE given, in the format `sha256sum -c` and `shasum -a 256 -c`
# read (the hash, two spaces, the file's name), for the release workflow's artefacts.
set -euo pipefail

for file in "$@"; do
    (
        cd "$(dirname "$file")"
        name=$(basename "$file")
        if command -v sha256sum >/dev/null 2>&1; then
            sha256sum "$name" >"$name.sha256"
        else
            shasum -a 256 "$name" >"$name.sha256"
        fi
        cat "$name.sha256"
    )
done
