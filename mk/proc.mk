# Process tests (controller/tests/process_*.rs) run in `make test` through
# cargo test; this target only prints the failover figures of issue 4.

.PHONY: failover-figures
failover-figures: ## kill -9 (median of 5) and SIGTERM failover times of a local 3-node quorum
	$(CARGO) test -p kraft-controller --test process_failover -- --nocapture killing_the_leader
