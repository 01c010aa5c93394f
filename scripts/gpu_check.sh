#!/usr/bin/env bash
# GPU verification on a machine with an NVIDIA GPU and DALI installed (see README, "GPU").
# Runs the gpu-marked tests and the GPU benchmark; writes logs to ${OUT:-gpu-out}/.
set -uo pipefail
out="${OUT:-gpu-out}"
mkdir -p "$out"
export PYTHONPATH="${PYTHONPATH:-.}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python -c "import nvidia.dali as d; print('DALI', d.__version__)" | tee -a "$out/gpu.txt"
python -m pytest -m gpu tests/gpu -q -p no:cacheprovider -rA -s \
  ${PYTEST_ARGS:-} > "$out/gpu_tests.txt" 2>&1
echo "pytest -m gpu exit code: $?" | tee -a "$out/gpu.txt"
tail -5 "$out/gpu_tests.txt"
python -m gallery.cli bench --device gpu --json ${BENCH_ARGS:-} > "$out/bench_gpu.json" \
  2> "$out/bench_gpu.err"
echo "bench exit code: $?" | tee -a "$out/gpu.txt"
tail -c 3000 "$out/bench_gpu.json"
