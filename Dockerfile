# syntax=docker/dockerfile:1
#
# Images of the two binaries, from one multi-stage build:
#
#   docker build --target kraft-controller -t ghcr.io/kraftwerk/kraft-controller:0.1.0 .
#   docker build --target kraft-operator   -t ghcr.io/kraftwerk/kraft-operator:0.1.0 .
#
# Stage `builder` compiles both release binaries once (Cargo.lock pinned,
# --locked); each final stage is distroless `cc` (glibc and libgcc, no shell,
# no package manager: the binaries link nothing else, TLS is rustls) running
# as the non-root user 65532 with the binary as its entrypoint. The
# KraftQuorum's StatefulSet runs `kraft-controller` by name, so it lives on
# PATH (/usr/local/bin). See docs/operations.md, "Container images".

ARG RUST_VERSION=1.89
ARG DEBIAN_RELEASE=bookworm

FROM docker.io/library/rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS builder
# Extra Cargo features, if any: --build-arg CARGO_FEATURES=...
ARG CARGO_FEATURES=""
WORKDIR /src
COPY . .
# The cache mounts keep the registry and target/ between builds; the binaries
# are copied out of the cached target/ into the image layer. The C parts of
# the compression crates (lz4-sys, zstd-sys) build with the image's gcc.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kraft-controller -p kraft-operator \
      ${CARGO_FEATURES:+--features "$CARGO_FEATURES"} \
 && mkdir -p /out \
 && cp target/release/kraft-controller target/release/kraft-operator /out/

# --- kraft-controller ----------------------------------------------------------
FROM gcr.io/distroless/cc-debian12:nonroot AS kraft-controller
LABEL org.opencontainers.image.title="kraft-controller" \
      org.opencontainers.image.description="A KRaft controller (Apache Kafka's metadata quorum) in Rust" \
      org.opencontainers.image.source="https://github.com/kraftwerk/kraftwerk" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/kraft-controller /usr/local/bin/kraft-controller
# The metadata log volume is mounted here (metadata.log.dir); the pod's
# fsGroup makes it writable by this user.
WORKDIR /var/lib/kraft
USER 65532:65532
# 9093: controller listener (Raft and admin RPCs); 9100: /healthz, /readyz, /metrics
# (with kraftwerk.http.listener=0.0.0.0:9100, as the operator sets it; the
# controller's own default is 127.0.0.1 and a port the OS picks).
EXPOSE 9093 9100
ENTRYPOINT ["/usr/local/bin/kraft-controller"]

# --- kraft-operator ------------------------------------------------------------
FROM gcr.io/distroless/cc-debian12:nonroot AS kraft-operator
LABEL org.opencontainers.image.title="kraft-operator" \
      org.opencontainers.image.description="Kubernetes operator for KRaft controller quorums (KraftQuorum)" \
      org.opencontainers.image.source="https://github.com/kraftwerk/kraftwerk" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/kraft-operator /usr/local/bin/kraft-operator
USER 65532:65532
# 8080: /healthz, /readyz, /metrics (the chart's http.port).
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kraft-operator"]
