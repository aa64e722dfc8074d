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
 * Produces one record per KEY (UTF-8, value = key) with the Java producer's default
 * partitioner, and prints "KEY PARTITION" for each: where Java puts that key, for comparing
 * with kwire's produce_by_key.
 *
 * Usage: java -cp "KAFKA_JARS/*" KeyedProduce.java BOOTSTRAP TOPIC KEY...
 */
public class KeyedProduce {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: KeyedProduce BOOTSTRAP TOPIC KEY...");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("acks", "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 2; i < args.length; i++) {
                byte[] key = args[i].getBytes(StandardCharsets.UTF_8);
                sent.add(producer.send(new ProducerRecord<>(args[1], key, key)));
            }
            producer.flush();
            for (int i = 2; i < args.length; i++) {
                System.out.println(args[i] + " " + sent.get(i - 2).get().partition());
            }
        }
    }
}
