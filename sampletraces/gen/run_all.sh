#!/usr/bin/env bash
# Runs tp_decode.py in its variants on a machine with 2 NVIDIA GPUs and packs
# the results: OUTDIR/log.txt (versions, topology, NCCL transport log, run
# output) and OUTDIR/traces.tar (one directory per variant run).
#
# usage: bash sampletraces/gen/run_all.sh OUTDIR [VARIANT...]
# VARIANT: eager cudagraph p2p_disabled nccl_simple (default: all four).
set -x
out=${1:?usage: run_all.sh OUTDIR [VARIANT...]}
shift
variants=("$@")
if [ ${#variants[@]} -eq 0 ]; then variants=(eager cudagraph p2p_disabled nccl_simple); fi
gen=$(cd "$(dirname "$0")" && pwd)
work=${KTS_WORK:-/tmp/kinetoscope-traces}
nproc=${KTS_NPROC:-2}

# NVLink multicast stays off (the lent machines require it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO
# NCCL's defaults everywhere except the variable a variant sets itself.
unset NCCL_P2P_DISABLE NCCL_PROTO NCCL_ALGO

rm -rf "$work" && mkdir -p "$work" "$out"
{
	python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
	nvidia-smi
	nvidia-smi topo -m
	df -h /dev/shm
	for v in "${variants[@]}"; do
		extra=()
		case "$v" in
		p2p_disabled) extra=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0) ;;
		nccl_simple) extra=(NCCL_PROTO=Simple) ;;
		eager | cudagraph) ;;
		*) echo "unknown variant $v"; continue ;;
		esac
		env "${extra[@]}" timeout 240 python3 -m torch.distributed.run --standalone \
			--nproc-per-node "$nproc" "$gen/tp_decode.py" --variant "$v" --out "$work/$v"
		echo "variant $v exit $?"
	done
	ls -laR "$work"
} 2>&1 | tee "$out/log.txt"
tar -C "$work" -cf "$out/traces.tar" .
