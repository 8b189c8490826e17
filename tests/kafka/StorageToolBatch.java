// Runs Kafka's kafka.tools.StorageTool once per line of the file named by the
// only argument (one command line a line, its arguments separated by tabs) in
// one JVM, so that a test formatting many directories starts one JVM, not one
// per directory (controller/tests/interop_kafka_format.rs). Run through
// kafka-run-class, which puts the jars of KAFKA_VERSION on the classpath:
//   kafka-run-class tests/kafka/StorageToolBatch.java commands.tsv
// Stops at the first command that fails, with its exit code.
import java.nio.file.Files;
import java.nio.file.Path;

public class StorageToolBatch {
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            if (line.isBlank()) {
                continue;
            }
            String[] command = line.split("\t");
            System.out.println("== StorageTool " + String.join(" ", command));
            int code = kafka.tools.StorageTool.execute(command, System.out);
            if (code != 0) {
                System.err.println("StorageTool exited with " + code + " for: " + line);
                System.exit(code);
            }
        }
    }
}
