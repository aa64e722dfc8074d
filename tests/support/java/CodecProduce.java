import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes the same COUNT records to partition 0 of TOPIC_PREFIX-CODEC for each CODEC (none,
 * gzip, snappy, lz4, zstd), with the Java producer's own batching and compression, so kwire's
 * record readers can be checked against what Kafka's client writes. Record i has:
 * key "key-i" (null when i % 7 == 3), value "value-i-" followed by 40 "abc"s (null when
 * i % 11 == 5), header "i" = "i" and, when i % 5 == 0, a header "null" with a null value.
 * Prints "CODEC done" after each codec.
 *
 * Usage: java -cp "KAFKA_JARS/*" CodecProduce.java BOOTSTRAP TOPIC_PREFIX COUNT CODEC...
 */
public class CodecProduce {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CodecProduce BOOTSTRAP TOPIC_PREFIX COUNT CODEC...");
            System.exit(2);
        }
        int count = Integer.parseInt(args[2]);
        for (int c = 3; c < args.length; c++) {
            String codec = args[c];
            Properties props = new Properties();
            props.put("bootstrap.servers", args[0]);
            props.put("key.serializer", ByteArraySerializer.class.getName());
            props.put("value.serializer", ByteArraySerializer.class.getName());
            props.put("acks", "all");
            props.put("compression.type", codec);
            props.put("linger.ms", "20");
            String topic = args[1] + "-" + codec;
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
                for (int i = 0; i < count; i++) {
                    byte[] key = i % 7 == 3 ? null : utf8("key-" + i);
                    byte[] value = i % 11 == 5 ? null : utf8("value-" + i + "-" + "abc".repeat(40));
                    RecordHeaders headers = new RecordHeaders();
                    headers.add("i", utf8(Integer.toString(i)));
                    if (i % 5 == 0) {
                        headers.add("null", null);
                    }
                    producer.send(new ProducerRecord<>(topic, 0, null, key, value, headers));
                }
                producer.flush();
            }
            System.out.println(codec + " done");
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
