#!/usr/bin/env bash
# On the GPU machine: install the carried wheels (.whl/, made here by prepare_wheels.sh) beside
# the image's own torch, without touching it, then run the kit; its output lands under $OUT.
#
#   bash benchmarks/gpu/kit.sh [run_kit.py options: --budget-s S, --only STEPS, --dry-run]
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
SITE=${KIT_SITE:-/tmp/site}
OUT=${OUT:-benchmarks/out/gpu-kit}
mkdir -p "$OUT"
if ! ls .whl/*.whl >/dev/null 2>&1; then
    echo "kit.sh: no wheels in .whl/: run benchmarks/gpu/prepare_wheels.sh here and carry .whl"
    exit 1
fi
# One name per project: pip picks the wheel that fits this Python (msgspec comes for two).
names=$(ls .whl/*.whl | xargs -n1 basename | cut -d- -f1 | sort -u)
# shellcheck disable=SC2086
"$PYTHON" -m pip install -q --no-index --find-links .whl --no-deps --no-compile \
    --no-cache-dir --upgrade --target "$SITE" $names || { echo "kit.sh: the wheels did not install"; exit 1; }
export PYTHONPATH=$SITE PATH=$SITE/bin:$PATH PYTHONUNBUFFERED=1
"$PYTHON" -c "import torchtop, textual, msgspec, torch; print('kit.sh: torchtop', torchtop.__version__, 'from', torchtop.__file__, '| torch', torch.__version__)"
"$PYTHON" benchmarks/gpu/run_kit.py --out "$OUT" "$@" 2>&1 | tee "$OUT/kit-log.txt"
