# kraft-operator targets (included by the Makefile).

.PHONY: crds crds-check test-operator

crds: ## regenerate crds/kraftquorum.yaml from the operator's types
	$(CARGO) run --quiet -p kraft-operator -- crd > crds/kraftquorum.yaml.tmp
	mv crds/kraftquorum.yaml.tmp crds/kraftquorum.yaml

crds-check: ## fail when crds/ differs from what the code generates
	$(CARGO) test -p kraft-operator --test crd_drift

test-operator: ## the operator's unit, planner, reconcile and CRD drift tests
	$(CARGO) test -p kraft-operator --no-fail-fast
