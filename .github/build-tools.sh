#!/usr/bin/env bash
# Prints, as NAME=VALUE lines for $GITHUB_ENV, where the build of llama.cpp (the `local` engine)
# finds cmake and libclang on a macOS or Windows runner: the runner's own cmake and Xcode's or
# LLVM's libclang. They win over .cargo/config.toml's `.tools/` paths, which
# scripts/setup-tools.sh fills on Linux only. Installs cmake (Homebrew) or LLVM (Chocolatey)
# when the runner lacks them. Everything but the lines goes to stderr.
set -euo pipefail

case "$(uname -s)" in
    Darwin)
        command -v cmake >/dev/null 2>&1 || brew install cmake >&2
        echo "CMAKE=$(command -v cmake)"
        developer=$(xcode-select -p)
        for lib in "$developer/Toolchains/XcodeDefault.xctoolchain/usr/lib" "$developer/usr/lib"; do
            if [[ -e "$lib/libclang.dylib" ]]; then
                echo "LIBCLANG_PATH=$lib"
                break
            fi
        done
        echo "CLANG_PATH=$(xcrun -f clang)"
        ;;
    MINGW* | MSYS* | CYGWIN*)
        llvm="C:/Program Files/LLVM/bin"
        [[ -e "$llvm/libclang.dll" ]] || choco install llvm --yes --no-progress >&2
        echo "CMAKE=$(cygpath -w "$(command -v cmake)")"
        echo "LIBCLANG_PATH=$(cygpath -w "$llvm")"
        echo "CLANG_PATH=$(cygpath -w "$llvm/clang.exe")"
        ;;
    *)
        echo "error: for macOS and Windows runners; on Linux run scripts/setup-tools.sh" >&2
        exit 2
        ;;
esac
