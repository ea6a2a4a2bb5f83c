#!/bin/sh
# precision_speedups.sh - fp32 against the fp16, bf16 and int8 knobs on this
# CPU: per layer (knob_speedups.sh: every VGG16-CIFAR10 and ResNet-18-CIFAR10
# convolution through runConv, knobs 11 fp32, 12 fp16, 301 bf16, 311 int8)
# and per network (kernel_bench.sh --knobs: the knob on every convolution
# and dense layer, bf16 results chained as bf16, batches interleaved).
# Names the CPU and oneDNN's ISA first. Run it under the machine's heavy
# lock on a quiet machine.
# Usage: scripts/bench/precision_speedups.sh [--batch N] [--threads N]
#          [--reps N]  (defaults 64, OMP_NUM_THREADS or 2, 5)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
batch=64 threads=${OMP_NUM_THREADS:-2} reps=5
while [ $# -gt 0 ]; do
  case $1 in
  --batch) batch=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --reps) reps=$2; shift 2 ;;
  *) echo "precision_speedups.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
  "$(nproc) CPUs; flags:" \
  "$(grep -o -w -E 'amx_bf16|amx_int8|avx512_fp16|avx512_bf16|avx512_vnni' \
    /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-unset}"
echo
echo "== per layer (knob_speedups, batch $batch, $threads threads)"
OMP_NUM_THREADS=$threads sh "$root/scripts/bench/knob_speedups.sh" \
  --knobs 11,12,301,311 --batch "$batch" --reps "$reps" --threads "$threads"
echo
echo "== whole network (kernel_bench, batch $batch, $threads threads)"
for net in vgg16_cifar10 resnet18_cifar10 mobilenet_cifar10; do
  OMP_NUM_THREADS=$threads sh "$root/scripts/bench/kernel_bench.sh" \
    --net "$net" --batch "$batch" --threads "$threads" --repeat "$reps" \
    --knobs fp32,bf16,fp16,int8_dyn
done
