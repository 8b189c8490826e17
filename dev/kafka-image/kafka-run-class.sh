#!/bin/bash
# kafka-run-class.sh [-name NAME] [-loggc] CLASS [ARGS...]: runs a class of Kafka's
# jars (the Maven classpath in ../classpath, see dev/kafka-image.sh) with the JVM
# options Kafka's launcher takes from the environment: KAFKA_HEAP_OPTS (default
# -Xmx256M), KAFKA_JVM_PERFORMANCE_OPTS (G1), KAFKA_GC_LOG_OPTS (with -loggc),
# KAFKA_JMX_OPTS, KAFKA_LOG4J_OPTS (default config/tools-log4j2.yaml), KAFKA_OPTS,
# LOG_DIR (default ../logs).
set -euo pipefail
base="$(cd "$(dirname "$0")/.." && pwd)"
log_dir="${LOG_DIR:-$base/logs}"
name="" loggc=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -name) name="$2"; shift 2 ;;
    -loggc) loggc=1; shift ;;
    *) break ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "usage: $0 [-name NAME] [-loggc] CLASS [ARGS...]" >&2
  exit 1
fi
mkdir -p "$log_dir"
heap="${KAFKA_HEAP_OPTS:--Xmx256M}"
perf="${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}"
gc=""
if [[ -n "$loggc" ]]; then
  gc="${KAFKA_GC_LOG_OPTS:--Xlog:gc*:file=$log_dir/${name:-kafka}-gc.log:time,tags:filecount=10,filesize=100M}"
fi
log4j="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$base/config/tools-log4j2.yaml}"
# Word splitting of the option variables is wanted: each holds several options.
# shellcheck disable=SC2086
exec java $heap $perf $gc ${KAFKA_JMX_OPTS:-} -Dkafka.logs.dir="$log_dir" $log4j \
  -cp "$(cat "$base/classpath")" ${KAFKA_OPTS:-} "$@"
