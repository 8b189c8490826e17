# Apache Kafka's jars (for the interop tests and the benchmarks), resolved by
# Maven from Maven Central and cached in ~/.m2; one classpath file per version
# of the interop matrix lives in $(KRAFTWERK_CACHE).
#
# KAFKA_VERSION (the pom's default) is what the tools run by
# tests/kafka/kafka-run-class use unless KAFKA_VERSION is set in their
# environment; KAFKA_VERSIONS is the matrix the interop tests run (override
# it on the command line: `make test-interop KAFKA_VERSIONS=4.4.0`).

KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' tests/kafka/pom.xml)
KAFKA_VERSIONS := 4.1.2 4.4.0
KAFKA_CLASSPATH := $(KRAFTWERK_CACHE)/kafka-$(KAFKA_VERSION).classpath
KAFKA_CLASSPATHS := $(foreach v,$(KAFKA_VERSIONS),$(KRAFTWERK_CACHE)/kafka-$(v).classpath)

.PHONY: kafka-jars
kafka-jars: $(KAFKA_CLASSPATH) $(KAFKA_CLASSPATHS) ## resolve Apache Kafka's jars of every version of the matrix with Maven (cached)

$(KRAFTWERK_CACHE)/kafka-%.classpath: tests/kafka/pom.xml
	@command -v java >/dev/null || { echo "kafka-jars: no java on PATH (need a JDK 17)"; exit 1; }
	@command -v mvn >/dev/null || { echo "kafka-jars: installing maven"; apt-get update -qq && apt-get install -y -qq maven >/dev/null; }
	@mkdir -p $(KRAFTWERK_CACHE)
	@mvn -q -B -f tests/kafka/pom.xml -Dkafka.version=$* dependency:build-classpath -Dmdep.outputFile=$@.tmp \
	  || { echo "kafka-jars: Maven could not resolve Apache Kafka $*'s jars (see above); is $* a release on Maven Central?" >&2; exit 1; }
	@mv $@.tmp $@
