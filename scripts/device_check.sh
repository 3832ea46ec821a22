#!/bin/bash
# The prepared device check: benchmarks/gpu_check.py, then scripts/difftest.py --cuda (random
# programs as PTX on the GPU against the interpreter) in parallel processes.
#
#   scripts/device_check.sh prepare     # here: .devcarry/ = tirc and lark wheels, llvmlite
#   device run, carry [".devcarry"]:    DT_N=500 DT_S=200 bash scripts/device_check.sh
#   the CPU builds (-O0..-O3, -fbounds-check, megakernels, GPU interpreter) on the device's
#   cores instead:                       GPU_CHECK=0 DT_CUDA= DT_START=110000 bash ...
#
# The device machine is offline and its python3 lacks lark; llvmlite travels as the .venv's
# (ctypes-loaded, so any CPython runs it) to match what CI tests. Results go to $OUT.
set -u
CARRY=.devcarry
if [ "${1:-}" = prepare ]; then
  rm -rf $CARRY && mkdir -p $CARRY || exit 1
  .venv/bin/pip wheel -q --no-deps --no-build-isolation -w $CARRY . || exit 1
  .venv/bin/pip download -q --no-deps -d $CARRY "lark==$(.venv/bin/python -c \
    'import lark; print(lark.__version__)')" || exit 1
  site=$(.venv/bin/python -c "import llvmlite, os; print(os.path.dirname(os.path.dirname(llvmlite.__file__)))")
  tar -C "$site" -cJf $CARRY/llvmlite.tar.xz llvmlite || exit 1
  rm -rf build
  ls -la $CARRY
  exit 0
fi
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/device_out}; mkdir -p "$OUT"
nvidia-smi -L
rm -rf /tmp/site /tmp/ll
python3 -m pip install -q --no-index --no-deps --target /tmp/site $CARRY/*.whl || exit 3
mkdir -p /tmp/ll && tar -C /tmp/ll -xJf $CARRY/llvmlite.tar.xz || exit 4
export PYTHONPATH=/tmp/ll:/tmp/site
python3 -c "import llvmlite, numpy, tirc.driver; print('llvmlite', llvmlite.__version__, 'numpy', numpy.__version__)" || exit 5
t0=$(date +%s)
if [ "${GPU_CHECK:-1}" = 1 ]; then
  timeout "${GPU_CHECK_S:-170}" python3 benchmarks/gpu_check.py > "$OUT/gpu_check.txt" 2>&1
  echo "gpu_check rc=$? $(( $(date +%s) - t0 )) s"
fi
cuda=${DT_CUDA-sm_90}
t1=$(date +%s)
for k in $(seq 0 $(( ${DT_JOBS:-14} - 1 ))); do
  timeout "${DT_S:-180}" python3 scripts/difftest.py ${cuda:+--cuda "$cuda"} --count "${DT_N:-200}" \
    --start $(( ${DT_START:-300000} + k * 1000 )) > "/tmp/dt_$k.txt" 2>&1 &
done
wait
echo "difftest $(( $(date +%s) - t1 )) s"
cat /tmp/dt_*.txt > "$OUT/difftest.txt"
grep -h "programs, seeds" /tmp/dt_*.txt
grep -h "^loop seed\|^graph seed" /tmp/dt_*.txt | head -40
