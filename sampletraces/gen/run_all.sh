#!/usr/bin/env bash
# Runs tp_decode.py in its variants and styles and packs the results:
# OUTDIR/log.txt (versions, topology, NCCL transport log, run output) and
# OUTDIR/traces.tar (one directory per variant or style run).
#
# usage: bash sampletraces/gen/run_all.sh OUTDIR [NAME...]
# NAME: a variant (eager cudagraph p2p_disabled nccl_simple; 2 GPUs, TP 2),
#       a style (see tp_decode.py --help; TP ${KTS_STYLE_NPROC:-1}), or
#       "styles" for every style. Default: the four variants.
# Styles run at TP 1 by default (KTS_STYLE_NPROC=2 on a 2-GPU machine: TP 2,
# in directories STYLE_tp2). The INT4 styles need `import marlin` to work.
# KTS_TIMEOUT: seconds for one run (default 240).
set -x
out=${1:?usage: run_all.sh OUTDIR [NAME...]}
shift
gen=$(cd "$(dirname "$0")" && pwd)
all_styles=(withstack_execute_model annotated_execute_model vllm_new_annotations profilerstep
	profilerstep_vllm bare_eager bare_cudagraph moe moe_sync)
names=()
for n in "$@"; do
	if [ "$n" = styles ]; then names+=("${all_styles[@]}"); else names+=("$n"); fi
done
if [ ${#names[@]} -eq 0 ]; then names=(eager cudagraph p2p_disabled nccl_simple); fi
work=${KTS_WORK:-/tmp/kinetoscope-traces}
nproc=${KTS_NPROC:-2}
style_nproc=${KTS_STYLE_NPROC:-1}

# NVLink multicast stays off (the lent machines require it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO
# NCCL's defaults everywhere except the variable a variant sets itself.
unset NCCL_P2P_DISABLE NCCL_PROTO NCCL_ALGO

rm -rf "$work" && mkdir -p "$work" "$out"
{
	python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
	python3 -c 'import marlin, marlin_cuda; print("marlin", marlin.__file__, marlin_cuda.__file__)' || echo "no marlin: the INT4 styles will stop"
	nvidia-smi
	nvidia-smi topo -m
	df -h /dev/shm
	for v in "${names[@]}"; do
		extra=()
		np=$nproc
		dir=$v
		case "$v" in
		p2p_disabled) extra=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0) ;;
		nccl_simple) extra=(NCCL_PROTO=Simple) ;;
		eager | cudagraph) ;;
		withstack_execute_model | annotated_execute_model | vllm_new_annotations | profilerstep | \
			profilerstep_vllm | bare_eager | bare_cudagraph | moe | pair_eager | pair_host_delay | host_sync_item | moe_sync)
			np=$style_nproc
			if [ "$np" != 1 ]; then dir=${v}_tp$np; fi
			;;
		*) echo "unknown variant or style $v"; continue ;;
		esac
		env "${extra[@]}" timeout "${KTS_TIMEOUT:-240}" python3 -m torch.distributed.run --standalone \
			--nproc-per-node "$np" "$gen/tp_decode.py" --variant "$v" --out "$work/$dir"
		echo "variant $v exit $?"
	done
	ls -laR "$work"
} 2>&1 | tee "$out/log.txt"
tar -C "$work" -cf "$out/traces.tar" .
