# Container images without a Docker daemon or an image registry (issue 24):
# buildah builds the Dockerfile's two final stages (Containerfile.prebuilt)
# from the release binaries on a FROM-scratch stand-in for distroless cc, plus
# the real node's pause and busybox images. OCI archives in
# $KRAFTWERK_CACHE/images/oci/, imported into the real node's containerd.
# See docs/local-cluster.md, "Images without a registry or a Docker daemon".
#
# IMAGES_PROFILE=debug builds the same two images (same Containerfile.prebuilt,
# same base) from target/debug, copies stripped of debug info, for the tests:
# no release build (about 12 min cold on 2 cores), and the debug binaries are
# built with the cluster tests' package selection (E2E_BINS, mk/e2e.mk), so
# cargo reuses the ones those tests build (same feature unification). Users'
# images stay release (the default).

.PHONY: images

IMAGES_PROFILE ?= release

images: ## build the kraft-controller and kraft-operator images with buildah (release binaries; IMAGES_PROFILE=debug: debug ones, stripped) and import them into the real node's containerd
	./dev/real-node/install.sh
ifeq ($(IMAGES_PROFILE),release)
	CARGO_INCREMENTAL=0 $(CARGO) build --release --locked -p kraft-controller -p kraft-operator
else ifeq ($(IMAGES_PROFILE),debug)
	$(CARGO) build --locked $(E2E_BINS)
else
	$(error IMAGES_PROFILE must be release or debug, not '$(IMAGES_PROFILE)')
endif
	KRAFTWERK_IMAGES_PROFILE=$(IMAGES_PROFILE) ./dev/real-node/images.sh
