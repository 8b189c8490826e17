#!/usr/bin/env bash
# The fuzz runs of `make test-fuzz` and `make soak` (mk/fuzz.mk).
#
#   dev/fuzz.sh build             build every target of fuzz/ with ASan
#   dev/fuzz.sh run SECONDS T...  build, then run each target T for SECONDS
#                                 from fuzz/seeds/T (and fuzz/corpus/T)
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

build() {
	nice cargo "$toolchain" fuzz build
}

run() {
	local seconds=$1 failed=() line runs
	shift
	build
	printf '%-26s %12s %s\n' target runs result
	for target in "$@"; do
		mkdir -p "corpus/$target" "artifacts/$target"
		local log="artifacts/$target/last-run.log"
		if nice "$FUZZ_TARGET_DIR/$triple/release/$target" "corpus/$target" "seeds/$target" \
			-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
			-artifact_prefix="artifacts/$target/" -print_final_stats=1 >"$log" 2>&1; then
			result=ok
		else
			result=CRASH
			failed+=("$target")
		fi
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		printf '%-26s %12s %s\n' "$target" "${runs:-?}" "$result"
		if [[ $result != ok ]]; then
			grep -E '^(==[0-9]+==|thread |SUMMARY|panicked|.*panicked at)' "$log" | head -20 || true
			for artifact in artifacts/"$target"/{crash,leak,timeout,oom}-*; do
				[[ -f $artifact ]] || continue
				echo "input $artifact: $(od -An -v -tx1 "$artifact" | tr -d ' \n' | head -c 4000)"
			done
		fi
	done
	if ((${#failed[@]})); then
		echo "fuzz targets that failed: ${failed[*]} (logs in fuzz/artifacts/<target>/last-run.log)"
		return 1
	fi
}

case ${1:-} in
build) build ;;
run) shift; run "$@" ;;
*) echo "usage: $0 build | run SECONDS TARGET..." >&2; exit 2 ;;
esac
