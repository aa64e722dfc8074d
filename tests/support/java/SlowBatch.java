import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Seed 003's control: the Java consumer (classic protocol) polls one batch, "processes" it for
 * PROCESS_MS — longer than max.poll.interval.ms — and then commits synchronously. Prints
 * "polled N" after the first batch, then "committed" or "CommitFailedException: MESSAGE".
 *
 * Usage: java -cp "KAFKA_JARS/*" SlowBatch.java BOOTSTRAP TOPIC GROUP MAX_POLL_INTERVAL_MS PROCESS_MS
 */
public class SlowBatch {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: SlowBatch BOOTSTRAP TOPIC GROUP MAX_POLL_INTERVAL_MS PROCESS_MS");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("group.protocol", "classic");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("session.timeout.ms", "6000");
        props.put("heartbeat.interval.ms", "1000");
        props.put("max.poll.interval.ms", args[3]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[1]));
            ConsumerRecords<byte[], byte[]> records = ConsumerRecords.empty();
            long deadline = System.currentTimeMillis() + 60_000;
            while (records.isEmpty() && System.currentTimeMillis() < deadline) {
                records = consumer.poll(Duration.ofMillis(500));
            }
            System.out.println("polled " + records.count());
            System.out.flush();
            Thread.sleep(Long.parseLong(args[4]));
            try {
                consumer.commitSync();
                System.out.println("committed");
            } catch (CommitFailedException e) {
                System.out.println("CommitFailedException: " + e.getMessage().replace('\n', ' '));
            }
        }
    }
}
