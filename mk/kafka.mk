# Apache Kafka's jars (for the interop tests and the benchmarks), resolved by
# Maven from Maven Central and cached in ~/.m2; the classpath file lives in
# $(KRAFTWERK_CACHE).

KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' tests/kafka/pom.xml)
KAFKA_CLASSPATH := $(KRAFTWERK_CACHE)/kafka-$(KAFKA_VERSION).classpath

.PHONY: kafka-jars
kafka-jars: $(KAFKA_CLASSPATH) ## resolve Apache Kafka's jars with Maven (cached)

$(KAFKA_CLASSPATH): tests/kafka/pom.xml
	@command -v java >/dev/null || { echo "kafka-jars: no java on PATH (need a JDK 17)"; exit 1; }
	@command -v mvn >/dev/null || { echo "kafka-jars: installing maven"; apt-get update -qq && apt-get install -y -qq maven >/dev/null; }
	@mkdir -p $(KRAFTWERK_CACHE)
	mvn -q -B -f tests/kafka/pom.xml dependency:build-classpath -Dmdep.outputFile=$@.tmp
	@mv $@.tmp $@
