#!/bin/bash
# kafka-storage.sh format|info|random-uuid ...: Kafka's StorageTool.
exec "$(dirname "$0")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
