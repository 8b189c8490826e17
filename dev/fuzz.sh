#!/usr/bin/env bash
# The fuzz runs of `make test-fuzz` and `make soak` (mk/fuzz.mk).
#
#   dev/fuzz.sh build             build every target of fuzz/ with ASan (then prune)
#   dev/fuzz.sh prune             remove the stale builds of the targets and
#                                 workspace crates from FUZZ_TARGET_DIR
#   dev/fuzz.sh run SECONDS T...  build, then run each target T for SECONDS
#                                 from fuzz/seeds/T (and fuzz/corpus/T),
#                                 FUZZ_JOBS targets at a time (default nproc)
#
# Needs FUZZ_TARGET_DIR (the cached ASan build) and CARGO_FUZZ_ROOT (where
# cargo-fuzz is installed). Prints one line per target with its runs count;
# exits non-zero if any target crashed, leaked, timed out or ran out of
# memory, after printing the input (hex) that did it. The input is kept in
# fuzz/artifacts/T/.
set -euo pipefail

cd "$(dirname "$0")/../fuzz"
: "${FUZZ_TARGET_DIR:?}" "${CARGO_FUZZ_ROOT:?}"
export PATH="$CARGO_FUZZ_ROOT/bin:$PATH" CARGO_TARGET_DIR="$FUZZ_TARGET_DIR"

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
	toolchain=+nightly
else
	echo "no nightly toolchain: using stable with RUSTC_BOOTSTRAP=1"
	toolchain=+stable
	export RUSTC_BOOTSTRAP=1
fi
triple=$(rustc -vV | sed -n 's/^host: //p')

# The build and the prune hold one lock of the shared FUZZ_TARGET_DIR, so a
# prune never removes what another checkout's build is linking.
build() {
	mkdir -p "$FUZZ_TARGET_DIR"
	(
		flock 9
		nice cargo "$toolchain" fuzz build
		prune
	) 9>"$FUZZ_TARGET_DIR/.kraftwerk-build.lock"
}

# The ASan build is cached across clones, and rebuilds of the workspace
# crates and targets leave the old files beside the new ones under new hashes
# (one day of clones left 24 sets, 17 GB, and helped fill CI's disk at stop
# 38). A target's binary in deps/ is hard-linked to release/<target>, so a
# stale one has one link and goes. Of each workspace library the three newest
# builds stay: cargo does not touch an rlib it reuses, so the one a checkout
# links may be older than another checkout's (keeping only the newest would
# make checkouts that alternate rebuild each other's every time).
prune() {
	local deps="$FUZZ_TARGET_DIR/$triple/release/deps" f lib
	[[ -d $deps ]] || return 0
	for f in fuzz_targets/*.rs; do
		f=$(basename "$f" .rs)
		find "$deps" -maxdepth 1 -type f -name "$f-*" ! -name '*.d' -links 1 -delete
	done
	for lib in kraft_controller kraft_common; do
		{ ls -t "$deps"/lib"$lib"-*.rlib 2>/dev/null || true; } | tail -n +4 | while read -r f; do
			f=${f%.rlib}
			rm -f "$f".rlib "$f".rmeta "$deps/${f##*/lib}".d
		done
	done
}

# run_one TARGET SECONDS: one target's run from its corpus and seeds, its
# output in artifacts/TARGET/last-run.log; fails when libFuzzer found anything.
run_one() {
	local target=$1 seconds=$2
	mkdir -p "corpus/$target" "artifacts/$target"
	nice "$FUZZ_TARGET_DIR/$triple/release/$target" "corpus/$target" "seeds/$target" \
		-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="artifacts/$target/" -print_final_stats=1 >"artifacts/$target/last-run.log" 2>&1
}

# report TARGET RESULT: the target's line, and for a failure what its log and
# artifacts say.
report() {
	local target=$1 result=$2 log="artifacts/$1/last-run.log" runs artifact
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	printf '%-26s %12s %s\n' "$target" "${runs:-?}" "$result"
	if [[ $result != ok ]]; then
		grep -E '^(==[0-9]+==|thread |SUMMARY|panicked|.*panicked at)' "$log" | head -20 || true
		for artifact in artifacts/"$target"/{crash,leak,timeout,oom}-*; do
			[[ -f $artifact ]] || continue
			echo "input $artifact: $(od -An -v -tx1 "$artifact" | tr -d ' \n' | head -c 4000)"
		done
	fi
}

# Targets run FUZZ_JOBS at a time (default: one per core), each on its own
# core for SECONDS; libFuzzer's own -jobs would split one target's time.
run() {
	local seconds=$1 jobs="${FUZZ_JOBS:-$(nproc)}" failed=() i k
	shift
	if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
		echo "FUZZ_JOBS must be a positive number of targets run at once, not '$jobs'" >&2
		return 2
	fi
	build
	printf '%-26s %12s %s\n' target runs result
	for ((i = 1; i <= $#; i += jobs)); do
		local batch=("${@:i:jobs}") pids=()
		for k in "${!batch[@]}"; do
			run_one "${batch[k]}" "$seconds" &
			pids[k]=$!
		done
		for k in "${!batch[@]}"; do
			if wait "${pids[k]}"; then
				report "${batch[k]}" ok
			else
				report "${batch[k]}" CRASH
				failed+=("${batch[k]}")
			fi
		done
	done
	if ((${#failed[@]})); then
		echo "fuzz targets that failed: ${failed[*]} (logs in fuzz/artifacts/<target>/last-run.log)"
		return 1
	fi
}

case ${1:-} in
build) build ;;
prune) prune ;;
run) shift; run "$@" ;;
*) echo "usage: $0 build | prune | run SECONDS TARGET..." >&2; exit 2 ;;
esac
