#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tools/vs_host_bench.sh LIB [--runtime S] [--jobs-max N]
#
# fio, unmodified, on ukern and on the host kernel in one run, same job:
# 4 KiB random reads and writes, iodepth 32, one job, time based.
#   ukern:        ioengine=libaio through LD_PRELOAD=LIB on /dev/ukern/nullb0
#                 (null_blk defaults, memory_backed=0)
#   host libaio:  ioengine=libaio on /dev/zero (read) and /dev/null (write)
#   host uring:   ioengine=io_uring on the same files
#   host nullb0:  both engines on /dev/nullb0 when it exists and is writable
# Host character devices refuse O_DIRECT, so every row runs without it
# (fio's buffers are page aligned: ukern takes no bounce buffer either).
# Then the scaling of the ukern path: randread with numjobs 1..N and 2N
# (N = nproc unless --jobs-max), IOPS summed over the jobs.
set -euo pipefail

lib=${1:?usage: vs_host_bench.sh LIB [--runtime S] [--jobs-max N]}
shift
runtime=5
jobs_max=$(nproc)
while [ $# -gt 0 ]; do
	case $1 in
	--runtime) runtime=$2; shift 2 ;;
	--jobs-max) jobs_max=$2; shift 2 ;;
	*) echo "vs_host_bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -e "$lib" ] || { echo "vs_host_bench.sh: no $lib (build ukern_aio_shared)" >&2; exit 1; }
lib=$(realpath "$lib")
command -v fio >/dev/null || { echo "vs_host_bench.sh: fio is not installed" >&2; exit 1; }

# fio_iops ENV-PREFIX... -- FIO-ARGS: total IOPS of the run (read + write).
fio_iops() {
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" fio --name=j --bs=4k --iodepth=32 --direct=0 --thread \
		--time_based --runtime="$runtime" --size=1g --group_reporting \
		--output-format=json "$@" 2>/dev/null |
		python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]
print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))'
}

UK_ENV=("UKERN_CMDLINE=null_blk.memory_backed=0" "LD_PRELOAD=$lib")

printf '%-10s %-32s %12s\n' rw target IOPS
for rw in randread randwrite; do
	hostdev=/dev/zero
	[ $rw = randwrite ] && hostdev=/dev/null
	uk=$(fio_iops "${UK_ENV[@]}" -- --ioengine=libaio --filename=/dev/ukern/nullb0 --rw=$rw)
	printf '%-10s %-32s %12s\n' $rw "ukern libaio nullb0" "$uk"
	for eng in libaio io_uring; do
		h=$(fio_iops -- --ioengine=$eng --filename=$hostdev --rw=$rw)
		printf '%-10s %-32s %12s   ukern/host %.2f\n' $rw "host $eng $hostdev" "$h" \
			"$(python3 -c "print($uk / max($h, 1))")"
	done
	if [ -w /dev/nullb0 ]; then
		for eng in libaio io_uring; do
			h=$(fio_iops -- --ioengine=$eng --filename=/dev/nullb0 --rw=$rw)
			printf '%-10s %-32s %12s   ukern/host %.2f\n' $rw "host $eng /dev/nullb0" "$h" \
				"$(python3 -c "print($uk / max($h, 1))")"
		done
	else
		printf '%-10s %-32s %12s\n' $rw "host /dev/nullb0" "skipped (no writable /dev/nullb0)"
	fi
done

echo
printf '%-8s %12s %14s\n' numjobs IOPS "IOPS per job"
counts=$(seq 1 "$jobs_max")
counts="$counts $((2 * jobs_max))"
for n in $counts; do
	uk=$(fio_iops "${UK_ENV[@]}" -- \
		--ioengine=libaio --filename=/dev/ukern/nullb0 --rw=randread --numjobs="$n")
	printf '%-8s %12s %14.0f\n' "$n" "$uk" "$(python3 -c "print($uk / $n)")"
done
