#!/bin/bash
# kafka-server-start.sh server.properties [--override k=v ...]: a Kafka server
# (kafka.Kafka) in the foreground; heap 1 GiB unless KAFKA_HEAP_OPTS says
# otherwise, logging per config/log4j2.yaml unless KAFKA_LOG4J_OPTS says otherwise.
set -euo pipefail
base="$(cd "$(dirname "$0")/.." && pwd)"
if [[ $# -lt 1 ]]; then
  echo "usage: $0 server.properties [--override property=value]*" >&2
  exit 1
fi
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"
export KAFKA_LOG4J_OPTS="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$base/config/log4j2.yaml}"
exec "$base/bin/kafka-run-class.sh" -name kafkaServer -loggc kafka.Kafka "$@"
