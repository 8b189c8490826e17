// Creates N topics of P partitions (replication factor R) through one broker
// with Kafka's own Admin client, waits until every partition has a leader,
// deletes them all and waits until they are gone; prints one JSON line of
// timings (ms). Run by bench/topics.py with Java's source launcher:
//   java -cp KAFKA_CLASSPATH bench/TopicsBench.java BOOTSTRAP N P R BATCH
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;

public class TopicsBench {
    static long now() {
        return System.nanoTime() / 1_000_000;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int count = Integer.parseInt(args[1]);
        int partitions = Integer.parseInt(args[2]);
        short rf = Short.parseShort(args[3]);
        int batch = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("request.timeout.ms", "60000");
        props.put("default.api.timeout.ms", "300000");
        List<String> names = new ArrayList<>();
        for (int i = 0; i < count; i++) names.add(String.format("bench-%05d", i));
        try (Admin admin = Admin.create(props)) {
            admin.describeCluster().nodes().get();
            long t0 = now();
            for (int i = 0; i < count; i += batch) {
                List<NewTopic> topics = new ArrayList<>();
                for (String n : names.subList(i, Math.min(count, i + batch)))
                    topics.add(new NewTopic(n, partitions, rf));
                admin.createTopics(topics).all().get();
            }
            long created = now();
            // Every partition of every topic has a leader in the broker's metadata.
            while (true) {
                int led = 0;
                for (int i = 0; i < count; i += batch) {
                    Map<String, TopicDescription> d;
                    try {
                        d = admin.describeTopics(names.subList(i, Math.min(count, i + batch)))
                            .allTopicNames().get();
                    } catch (java.util.concurrent.ExecutionException e) {
                        // The broker's metadata has not caught up with the
                        // controller yet (UNKNOWN_TOPIC_OR_PARTITION): look again.
                        break;
                    }
                    for (TopicDescription t : d.values())
                        for (var p : t.partitions()) if (p.leader() != null && !p.leader().isEmpty()) led++;
                }
                if (led == count * partitions) break;
                Thread.sleep(100);
            }
            long led = now();
            for (int i = 0; i < count; i += batch)
                admin.deleteTopics(names.subList(i, Math.min(count, i + batch))).all().get();
            long deleted = now();
            while (true) {
                Set<String> left = admin.listTopics().names().get();
                if (left.stream().noneMatch(n -> n.startsWith("bench-"))) break;
                Thread.sleep(100);
            }
            long gone = now();
            System.out.printf(
                "{\"create_ms\":%d,\"all_led_ms\":%d,\"delete_ms\":%d,\"all_gone_ms\":%d}%n",
                created - t0, led - t0, deleted - led, gone - led);
        }
    }
}
