// Writes random bodies with Apache Kafka's own per-version Schemas (kafka-clients), checks Kafka's
// generated *Data classes read them back, and prints "<Api> <request|response> <version> <hex>".
// With "names" as the first argument, prints every field name per API instead.
//
// Regenerates kafka-4.1.1-bodies.txt (read by ../kafka_fixtures.rs), with kafka-clients 4.1.1 and
// its dependencies (jackson not needed) on the class path:
//   javac -cp "$CP" -d /tmp KafkaOracle.java
//   java -cp "$CP:/tmp" KafkaOracle 2 20251129 > kafka-4.1.1-bodies.txt
// Versions Kafka 4 removed (ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1,
// DeleteTopics v0, OffsetForLeaderEpoch v0-1, Fetch v0-3, Produce v0-2) are absent from that jar; kafka-3.9.1-bodies.txt
// holds the same from kafka-clients 3.9.1 (with slf4j-api on the class path), seed 20251129.
import static java.nio.charset.StandardCharsets.UTF_8;

import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.*;

public class KafkaOracle {
    static final String[] APIS = {"ListOffsets", "FindCoordinator", "OffsetFetch", "OffsetCommit", "ListGroups",
        "DescribeGroups", "CreateTopics", "DeleteTopics", "CreatePartitions", "DeleteRecords", "OffsetForLeaderEpoch",
        "OffsetDelete", "SaslHandshake", "SaslAuthenticate", "ApiVersions", "Metadata", "Fetch", "Produce"};
    static Random rnd;

    static String str() {
        String[] pool = {"", "t", "topic-1", "é", "group.a"};
        return pool[rnd.nextInt(pool.length)];
    }

    /** The tagged fields a section knows (a private map before Kafka 4.0, so read reflectively). */
    @SuppressWarnings("unchecked")
    static Map<Integer, Field> known(TaggedFields tf) {
        try {
            java.lang.reflect.Field f = TaggedFields.class.getDeclaredField("fields");
            f.setAccessible(true);
            return (Map<Integer, Field>) f.get(tf);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static Object gen(Type t) {
        if (t instanceof Schema s) {
            Struct st = new Struct(s);
            for (BoundField f : s.fields()) st.set(f.def.name, gen(f.def.type));
            return st;
        }
        if (t instanceof TaggedFields tf) {
            TreeMap<Integer, Object> m = new TreeMap<>();
            for (Map.Entry<Integer, Field> e : known(tf).entrySet()) {
                if (!rnd.nextBoolean()) continue;
                Object v = gen(e.getValue().type);
                // Kafka's generated classes never write a tagged field holding its default (null
                // or empty), so such a body would not come back byte for byte from Kafka either.
                if (v != null && !(v instanceof Object[] a && a.length == 0)) m.put(e.getKey(), v);
            }
            return m;
        }
        if (t.isArray()) {
            if (t.isNullable() && rnd.nextInt(4) == 0) return null;
            Object[] a = new Object[rnd.nextInt(3)];
            for (int i = 0; i < a.length; i++) a[i] = gen(t.arrayElementType().get());
            return a;
        }
        if (t == Type.RECORDS || t == Type.COMPACT_RECORDS) return records();
        if (t == Type.BOOLEAN) return rnd.nextBoolean();
        if (t == Type.INT8) return (byte) rnd.nextInt();
        if (t == Type.INT16) return (short) rnd.nextInt();
        if (t == Type.INT32) return rnd.nextInt();
        if (t == Type.INT64) return rnd.nextLong();
        if (t == Type.UUID) return new Uuid(rnd.nextLong(), rnd.nextLong());
        if (t == Type.STRING || t == Type.COMPACT_STRING) return str();
        if (t == Type.NULLABLE_STRING || t == Type.COMPACT_NULLABLE_STRING) return rnd.nextInt(3) == 0 ? null : str();
        if (t == Type.BYTES || t == Type.COMPACT_BYTES || t == Type.NULLABLE_BYTES || t == Type.COMPACT_NULLABLE_BYTES) {
            byte[] b = new byte[rnd.nextInt(5)];
            rnd.nextBytes(b);
            return ByteBuffer.wrap(b);
        }
        throw new IllegalArgumentException("type " + t);
    }

    /** A records field: null, empty, a real batch, or bytes no reader of a body may look into. */
    static Object records() {
        switch (rnd.nextInt(4)) {
            case 0: return null;
            case 1: return MemoryRecords.EMPTY;
            case 2: {
                SimpleRecord[] rs = new SimpleRecord[1 + rnd.nextInt(2)];
                for (int i = 0; i < rs.length; i++)
                    rs[i] = new SimpleRecord(rnd.nextLong() >>> 24, str().getBytes(UTF_8), rnd.nextBoolean() ? null : str().getBytes(UTF_8));
                return MemoryRecords.withRecords(rnd.nextLong() >>> 8, Compression.NONE, rs);
            }
            default: {
                byte[] b = new byte[1 + rnd.nextInt(12)];
                rnd.nextBytes(b);
                return MemoryRecords.readableRecords(ByteBuffer.wrap(b));
            }
        }
    }

    static void names(Type t, String prefix, Set<String> out) {
        if (t instanceof Schema s) {
            for (BoundField f : s.fields()) {
                if (f.def.type instanceof TaggedFields tf) {
                    for (Field k : known(tf).values()) out.add(prefix + k.name);
                    continue;
                }
                out.add(prefix + f.def.name);
                names(f.def.type, prefix + f.def.name + ".", out);
            }
        } else if (t.isArray()) {
            names(t.arrayElementType().get(), prefix, out);
        }
    }

    public static void main(String[] args) throws Exception {
        boolean names = args.length > 0 && args[0].equals("names");
        int samples = names ? 0 : Integer.parseInt(args[0]);
        rnd = new Random(names ? 0 : Long.parseLong(args[1]));
        for (String api : APIS) {
            for (String dir : new String[] {"Request", "Response"}) {
                Class<?> data = Class.forName("org.apache.kafka.common.message." + api + dir + "Data");
                Schema[] schemas = (Schema[]) data.getField("SCHEMAS").get(null);
                Set<String> all = new TreeSet<>();
                for (short v = 0; v < schemas.length; v++) {
                    if (schemas[v] == null) continue;
                    if (names) { names(schemas[v], "", all); continue; }
                    for (int i = 0; i < samples; i++) {
                        Struct st = (Struct) gen(schemas[v]);
                        ByteBuffer buf = ByteBuffer.allocate(schemas[v].sizeOf(st));
                        schemas[v].write(buf, st);
                        buf.flip();
                        // Kafka's generated reader must accept exactly these bytes.
                        ByteBufferAccessor acc = new ByteBufferAccessor(buf.duplicate());
                        data.getConstructor(Readable.class, short.class).newInstance(acc, v);
                        if (acc.remaining() != 0) throw new IllegalStateException(api + dir + " v" + v + " trailing");
                        StringBuilder hex = new StringBuilder();
                        while (buf.hasRemaining()) hex.append(String.format("%02x", buf.get()));
                        System.out.println(api + " " + dir.toLowerCase() + " " + v + " " + hex);
                    }
                }
                if (names) System.out.println(api + " " + dir.toLowerCase() + " " + String.join(" ", all));
            }
        }
    }
}
