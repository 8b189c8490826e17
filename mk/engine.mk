# Raft engine: the deterministic simulation with more seeds than CI runs.
# `make test` already runs the default 200 seeds through test-rust.

SIM_SEEDS ?= 2000

.PHONY: sim
sim: ## run the Raft simulation sweep over SIM_SEEDS seeds (SIM_SEED=n replays one)
	SIM_SEEDS=$(SIM_SEEDS) $(CARGO) test -p kraft-controller --test simulation -- --nocapture random_faults

.PHONY: sim-membership
sim-membership: ## run the KIP-853 membership simulation sweep over SIM_SEEDS seeds
	SIM_SEEDS=$(SIM_SEEDS) $(CARGO) test -p kraft-controller --test simulation_membership -- --nocapture random_voter
