#!/usr/bin/env bash
# GPU verification on a machine with an NVIDIA GPU and DALI installed (see README, "GPU and CPU").
# Runs every gpu-marked test file and the GPU benchmark; writes logs to ${OUT:-gpu-out}/.
# The exit status is non-zero when the tests or the benchmark fail.
set -uo pipefail
out="${OUT:-gpu-out}"
mkdir -p "$out"
# a source checkout imports without installing (dali_gallery/__init__.py finds the folders)
export PYTHONPATH="${PYTHONPATH:-.}" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python -c "import nvidia.dali as d; print('DALI', d.__version__)" | tee -a "$out/gpu.txt"
mapfile -t files < <(grep -rl "mark.gpu" tests --include='test_*.py' | sort)
echo "gpu test files: ${files[*]}" | tee -a "$out/gpu.txt"
python -m pytest -m gpu "${files[@]}" -q -p no:cacheprovider -rA -s ${PYTEST_ARGS:-} \
  > "$out/gpu_tests.txt" 2>&1
tests=$?
echo "pytest -m gpu exit code: $tests" | tee -a "$out/gpu.txt"
tail -5 "$out/gpu_tests.txt"
python -m dali_gallery.gallery.cli bench --device gpu --json ${BENCH_ARGS:-} > "$out/bench_gpu.json" \
  2> "$out/bench_gpu.err"
bench=$?
echo "bench exit code: $bench" | tee -a "$out/gpu.txt"
tail -c 4000 "$out/bench_gpu.json"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
