#!/usr/bin/env bash
# The training-speed checks that need a GPU, in one script (about 7 minutes on one H200
# with 16 cores; FULL=1 adds quad-hover at the task's default 512 x 32, the 2-8 thread
# rows, the CPU-learner rows, the PPO update benchmark, and bench/native_motor.py and the
# overlapped task layer with native motors (actuation=native) at 1024 simulations, about 10
# more): the
# training-throughput table of g1-pull on 16 threads with the learner on the GPU, its
# simulations stepped at once or in 2 or 4 overlapping groups acting group by group
# (train.env_groups), at 1024 and at 2048 simulations; the CUDA paths of the tests;
# g1-force's task layer against raw physics at 1024 simulations, stepped at once and in 2
# overlapping groups (the task-layer goal of 80 % on 16 threads); quad-hover to a return
# of 474 (2048 simulations x 8 steps per iteration). Every step writes its output under
# OUT and goes on if one fails, so a partial run still reports what it measured
# (OUT/log.txt and the JSON files of the tables).
#
#     OUT=results/bench/gpu bash bench/gpu_checks.sh
#
# Run it from the repository root of an installed checkout (pip install -e .) on a machine
# where `torch.cuda.is_available()`.
set -uo pipefail
OUT=${OUT:-results/bench/gpu}
mkdir -p "$OUT"
export MUJOCO_GL=${MUJOCO_GL:-egl} PYOPENGL_PLATFORM=${PYOPENGL_PLATFORM:-egl} PYTHONUNBUFFERED=1
export CYCLONEDDS_URI=${CYCLONEDDS_URI:-file://$PWD/dds/loopback.xml}
py=${PYTHON:-python3}

step() {  # step NAME COMMAND...: run, append its output to OUT/log.txt, note its exit status
  local name=$1
  shift
  echo "== $name: $* ($(date -u +%T))" | tee -a "$OUT/log.txt"
  "$@" 2>&1 | tee -a "$OUT/log.txt"
  echo "== $name: exit ${PIPESTATUS[0]} ($(date -u +%T))" | tee -a "$OUT/log.txt"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  echo "cpus: $(nproc)"
  $py -c "import torch, mujoco; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'mujoco', mujoco.__version__)"
} 2>&1 | tee "$OUT/log.txt"

step scale_g1_pull_cuda $py bench/scale.py --training --task g1-pull --device cuda \
  --threads 16 --groups 1 2 4 --envs-per-thread 64 --iterations 3 \
  --json "$OUT/scale_g1_pull_cuda.json"
step scale_g1_pull_cuda_2048 $py bench/scale.py --training --task g1-pull --device cuda \
  --threads 16 --groups 1 2 --envs-per-thread 128 --iterations 3 \
  --json "$OUT/scale_g1_pull_cuda_2048.json"
step tests $py -m pytest -q -p no:cacheprovider tests/tasks/test_overlap.py \
  tests/policies/test_policies.py tests/policies/test_ppo_update.py tests/policies/test_runner.py \
  tests/policies/test_distributed.py -k "device or stack or placement or gpu or overlap or groups or chains"
step engine_overhead_g1_force $py bench/engine_overhead.py --task g1-force --envs 1024 \
  --steps 100 --rounds 3
step engine_overhead_g1_force_groups2 $py bench/engine_overhead.py --task g1-force \
  --envs 1024 --steps 100 --rounds 3 --groups 2
step quad_hover_cuda $py bench/quad_hover_training.py --seeds 0 1 2 --minutes 1 \
  --out /tmp/qh --json "$OUT/quad_hover_cuda.json" --device cuda --envs 2048 \
  --set train.ppo.num_steps_per_env=8
if [ "${FULL:-0}" = 1 ]; then
  step quad_hover_cuda_default $py bench/quad_hover_training.py --seeds 0 1 2 --minutes 1 \
    --out /tmp/qh-default --json "$OUT/quad_hover_cuda_default.json" --device cuda
  step scale_g1_pull_cuda_threads $py bench/scale.py --training --task g1-pull --device cuda \
    --threads 2 4 8 --groups 1 --envs-per-thread 64 --iterations 3 \
    --json "$OUT/scale_g1_pull_cuda_threads.json"
  step scale_g1_pull_cpu $py bench/scale.py --training --task g1-pull --device cpu \
    --threads 2 16 --envs-per-thread 64 --iterations 3 --json "$OUT/scale_g1_pull_cpu.json"
  step decoupled_update_131k $py bench/decoupled_update.py --device cuda --samples 131072 --threads 16
  step native_motor_1024 $py bench/native_motor.py --envs 1024 --steps 20 --rounds 3 \
    --json "$OUT/native_motor_g1_pull_1024.json"
  step engine_overhead_g1_force_groups2_native $py bench/engine_overhead.py --task g1-force \
    --envs 1024 --steps 100 --rounds 3 --groups 2 --set actuation=native
fi
