#!/usr/bin/env bash
# Builds the apache/kafka image roots, one directory per version, from which
# dev/real-node/images.sh (build_kafka, called by `make images`) makes the
# `docker.io/apache/kafka:<version>` images the local cluster runs:
#
#   $KRAFTWERK_CACHE/images/apache-kafka-<version>/
#     etc/kafka/docker/   run (the image's CMD) + the default server.properties,
#                         log4j2.yaml, tools-log4j2.yaml KafkaDockerWrapper reads
#     opt/kafka/bin/      kafka-run-class.sh, kafka-server-start.sh, kafka-storage.sh
#     opt/kafka/classpath Kafka's jars of that version, as Maven resolved them
#                         (images.sh copies them to the image's opt/kafka/libs/)
#     opt/kafka/config/   the same three defaults (writable by the image's user
#                         appuser 1000, images.sh; the wrapper rewrites it)
#     opt/kafka/logs/     empty (writable by appuser too: GC log)
#     mnt/shared/config/  empty: where a user may mount their own config files
#
# The scripts are ours (dev/kafka-image/), not the image's; the Java code is
# Kafka's own: kafka.docker.KafkaDockerWrapper and kafka.Kafka from the
# kafka_2.13 jar. Idempotent: a root whose stamp (the inputs' checksum) matches
# is kept; otherwise it is built in a temp directory and renamed into place.
#
#   dev/kafka-image.sh [VERSION...]   default: KAFKA_VERSIONS of mk/kafka.mk
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${KRAFTWERK_CACHE:-$HOME/.cache/kraftwerk}"
images="$cache/images"
src="$here/kafka-image"

log() { printf '[kafka-image] %s\n' "$*" >&2; }
die() { printf '[kafka-image] error: %s\n' "$*" >&2; exit 1; }

if [[ $# -gt 0 ]]; then
  versions=("$@")
else
  read -r -a versions <<<"$(sed -n 's/^KAFKA_VERSIONS := //p' "$repo/mk/kafka.mk")"
fi
[[ ${#versions[@]} -gt 0 ]] || die "no Kafka version given and none found in mk/kafka.mk"

missing=()
for v in "${versions[@]}"; do
  [[ -s "$cache/kafka-$v.classpath" ]] || missing+=("$cache/kafka-$v.classpath")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  log "resolving Kafka's jars: ${missing[*]}"
  make --no-print-directory -C "$repo" KRAFTWERK_CACHE="$cache" "${missing[@]}"
fi

mkdir -p "$images"
for v in "${versions[@]}"; do
  root="$images/apache-kafka-$v"
  stamp="$(cat "$0" "$src"/* "$cache/kafka-$v.classpath" | sha256sum | cut -d' ' -f1)"
  if [[ -f "$root/.stamp" && "$(cat "$root/.stamp")" == "$stamp" ]]; then
    continue
  fi
  log "building $root"
  tmp="$(mktemp -d "$images/.apache-kafka-$v.XXXXXX")"
  mkdir -p "$tmp/etc/kafka/docker" "$tmp/opt/kafka/bin" "$tmp/opt/kafka/config" \
    "$tmp/opt/kafka/logs" "$tmp/mnt/shared/config"
  install -m 0755 "$src/run" "$tmp/etc/kafka/docker/run"
  for f in kafka-run-class.sh kafka-server-start.sh kafka-storage.sh; do
    install -m 0755 "$src/$f" "$tmp/opt/kafka/bin/$f"
  done
  for f in server.properties log4j2.yaml tools-log4j2.yaml; do
    install -m 0644 "$src/$f" "$tmp/etc/kafka/docker/$f"
    install -m 0644 "$src/$f" "$tmp/opt/kafka/config/$f"
  done
  cp "$cache/kafka-$v.classpath" "$tmp/opt/kafka/classpath"
  echo "$stamp" >"$tmp/.stamp"
  chmod 0755 "$tmp"
  if [[ -e "$root" ]]; then
    old="$(mktemp -d "$images/.old-apache-kafka-$v.XXXXXX")"
    mv "$root" "$old/"
    mv "$tmp" "$root"
    rm -rf "$old"
  else
    mv "$tmp" "$root"
  fi
done
