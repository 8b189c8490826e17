# Container images without a Docker daemon or an image registry (issue 24):
# buildah builds the Dockerfile's two final stages (Containerfile.prebuilt)
# from the release binaries on a FROM-scratch stand-in for distroless cc, plus
# the real node's pause and busybox images. OCI archives in
# $KRAFTWERK_CACHE/images/oci/, imported into the real node's containerd.
# See docs/local-cluster.md, "The real node".

.PHONY: images

images: ## build the kraft-controller and kraft-operator images with buildah (release binaries) and import them into the real node's containerd
	./dev/real-node/install.sh
	CARGO_INCREMENTAL=0 $(CARGO) build --release --locked -p kraft-controller -p kraft-operator
	./dev/real-node/images.sh
