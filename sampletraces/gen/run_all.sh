#!/usr/bin/env bash
# Runs tp_decode.py in its three variants on a machine with 2 NVIDIA GPUs and
# packs the results: OUTDIR/log.txt (versions, topology, NCCL transport log,
# run output) and OUTDIR/traces.tar (eager/, cudagraph/, p2p_disabled/).
#
# usage: bash sampletraces/gen/run_all.sh OUTDIR
set -x
out=${1:?usage: run_all.sh OUTDIR}
gen=$(cd "$(dirname "$0")" && pwd)
work=${KTS_WORK:-/tmp/kinetoscope-traces}
nproc=${KTS_NPROC:-2}

# NVLink multicast stays off (the lent machines require it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO
unset NCCL_P2P_DISABLE

rm -rf "$work" && mkdir -p "$work" "$out"
{
	python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
	nvidia-smi
	nvidia-smi topo -m
	df -h /dev/shm
	for v in eager cudagraph p2p_disabled; do
		extra=()
		if [ "$v" = p2p_disabled ]; then extra=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0); fi
		env "${extra[@]}" timeout 240 python3 -m torch.distributed.run --standalone \
			--nproc-per-node "$nproc" "$gen/tp_decode.py" --variant "$v" --out "$work/$v"
		echo "variant $v exit $?"
	done
	ls -laR "$work"
} 2>&1 | tee "$out/log.txt"
tar -C "$work" -cf "$out/traces.tar" .
