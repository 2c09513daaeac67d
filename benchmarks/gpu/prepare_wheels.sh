#!/usr/bin/env bash
# Fills .whl/ (ignored by git) with what the GPU machine lacks, for its Python 3.12 on x86-64:
# torchtop's own wheel, textual and the parts of its stack the image may hold too old or not at
# all, msgspec and py-spy. The image's own torch, numpy, psutil, nvidia-ml-py and
# prometheus-client are used there, never replaced. msgspec comes for 3.11 too, so that a
# Python 3.11 venv here can prove the install (`--check`). Total size printed at the end; the
# device tool carries at most 64 MiB with the working tree.
#
#   benchmarks/gpu/prepare_wheels.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
WHEELS=.whl
PURE=(textual==8.2.8 rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 mdit-py-plugins==0.7.0
      linkify-it-py==2.2.0 uc-micro-py platformdirs==4.14.8 pygments==2.21.0 py-spy==0.4.3)
COMPILED=(msgspec==0.22.0)
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
           --platform manylinux1_x86_64)

rm -rf "$WHEELS" && mkdir -p "$WHEELS"
download() {  # python version, then names
    local version=$1; shift
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version "$version" \
        --implementation cp "${PLATFORMS[@]}" -d "$WHEELS" "$@"
}
download 3.12 "${PURE[@]}" "${COMPILED[@]}" 2>&1 | grep -v "is ignored" || true
download 3.11 "${COMPILED[@]}" 2>&1 | grep -v "is ignored" || true
"$PYTHON" -m pip wheel -q --no-deps --no-build-isolation -w "$WHEELS" . 2>/dev/null \
    || "$PYTHON" -m pip wheel -q --no-deps -w "$WHEELS" .
ls -l "$WHEELS" | awk 'NR > 1 {printf "%8.1f KiB  %s\n", $5 / 1024, $9}'
du -sb "$WHEELS" | awk '{printf "total: %.1f MiB in .whl/\n", $1 / 1048576}'

if [[ "${1:-}" == "--check" ]]; then
    # A fresh Python 3.11 venv installs torchtop from .whl alone (its other needs from the
    # index, as the GPU image has them), then imports the dashboard and runs the CLI.
    venv=$(mktemp -d)/venv
    python3.11 -m venv "$venv"
    "$venv/bin/python" -m pip install -q numpy psutil nvidia-ml-py prometheus_client typing-extensions
    "$venv/bin/python" -m pip install -q --no-index --find-links "$WHEELS" torchtop textual msgspec py-spy
    "$venv/bin/python" -c "import torchtop, textual, msgspec; from torchtop.tui.app import Dashboard; print('import ok:', torchtop.__file__)"
    "$venv/bin/torchtop" --version
    "$venv/bin/py-spy" --version
    rm -rf "$(dirname "$venv")"
fi
