import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Transactions from the real Java producer, for kwire's read_committed tests. On one partition:
 * ABORTED records in a transaction that is aborted, then COMMITTED records in one that is
 * committed, then OPEN records in a transaction left open until stdin closes (then aborted).
 * Prints one line per record, "aborted|committed|open OFFSET VALUE", then "ready" once the open
 * transaction's records are written (skipped when OPEN is 0), and "done" at the end.
 *
 * Usage: java -cp "KAFKA_JARS/*" AbortedTxn.java BOOTSTRAP TOPIC PARTITION ABORTED COMMITTED OPEN
 */
public class AbortedTxn {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: AbortedTxn BOOTSTRAP TOPIC PARTITION ABORTED COMMITTED OPEN");
            System.exit(2);
        }
        String topic = args[1];
        int partition = Integer.parseInt(args[2]);
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("transactional.id", "kwire-test-" + topic + "-" + System.nanoTime());
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            producer.beginTransaction();
            write(producer, topic, partition, "aborted", Integer.parseInt(args[3]));
            producer.abortTransaction();
            producer.beginTransaction();
            write(producer, topic, partition, "committed", Integer.parseInt(args[4]));
            producer.commitTransaction();
            int open = Integer.parseInt(args[5]);
            if (open > 0) {
                producer.beginTransaction();
                write(producer, topic, partition, "open", open);
                System.out.println("ready");
                System.out.flush();
                InputStream in = System.in;
                while (in.read() != -1) {
                    // Wait for the test to close stdin.
                }
                producer.abortTransaction();
            }
        }
        System.out.println("done");
    }

    private static void write(KafkaProducer<byte[], byte[]> producer, String topic, int partition, String kind, int n)
            throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] key = (kind + "-key-" + i).getBytes(StandardCharsets.UTF_8);
            byte[] value = (kind + "-" + i).getBytes(StandardCharsets.UTF_8);
            sent.add(producer.send(new ProducerRecord<>(topic, partition, key, value)));
        }
        producer.flush();
        for (int i = 0; i < n; i++) {
            System.out.println(kind + " " + sent.get(i).get().offset() + " " + kind + "-" + i);
        }
        System.out.flush();
    }
}
