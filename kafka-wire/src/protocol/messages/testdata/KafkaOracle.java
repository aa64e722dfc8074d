// Apache Kafka as kwire's oracle (kafka-clients' own classes, compiled with javac against its jar).
//
// Modes:
//   <samples> <seed> [Api...]
//                     random bodies written with Kafka's per-version Schemas, each read back by
//                     Kafka's generated *Data class: "<Api> <request|response> <version> <hex>"
//                     (every API of APIS, or only those named)
//   names             every field name per API
//   check             stdin: body lines as above (written by kwire); stdout, one per line: "ok
//                     <json>" when the generated class reads the body and writes the same bytes
//                     back, "differs <kafka hex> <json>", "unsupported" (version not in this jar)
//                     or "error <why>"; the JSON is Kafka's *JsonConverter view, for diagnostics
//   records           record sets built by MemoryRecordsBuilder, each "set <name> <hex>" followed
//                     by Kafka's reading of it ("batch ..." / "record ..." lines)
//   check-records     stdin: "<name> <hex>" record sets (written by kwire); stdout: "set <name>"
//                     and Kafka's reading (after ensureValid() on every batch and record), or
//                     "error <name> <why>"
//   schema <samples> <seed>
//                     stdin: "<Name> <request|response|header> <version> [path...]" lines (any
//                     API, or RequestHeader / ResponseHeader; the paths are the version's
//                     nullable struct fields, which Kafka's Schema objects cannot express); stdout per sample: "<Name> <dir> <version>
//                     <hex> <json>", the bytes and JsonConverter document of a random message the
//                     generated *Data class read and wrote back, or "error <Name> <dir> <version>
//                     <why>" (kafka-wire/tests/schema_oracle.rs, the schema interpreter's oracle)
//   consumer-protocol <samples> <seed>
//                     random consumer-protocol messages (the bytes inside JoinGroup metadata and
//                     SyncGroup assignments), written with the Schemas of Kafka's generated
//                     ConsumerProtocolSubscription / ConsumerProtocolAssignment classes and read
//                     back by them: "<Name> <version> <hex>", the hex with its INT16 version
//                     prefix, as ConsumerProtocol writes it
//   check-consumer-protocol
//                     stdin: "<Name> <hex>" lines (version-prefixed, written by kwire); stdout, one
//                     per line: "<read-as version> <bytes left unread> <hex>", the message read the
//                     way ConsumerProtocol.deserialize* reads it (a version above the highest known
//                     is read as the highest; bytes after the last field are ignored) and written
//                     back at the version it was read as, or "error <why>"
// kafka-wire/tests/kafka_oracle.rs compiles this file and runs check, check-records and
// check-consumer-protocol itself.
//
// Regenerates kafka-4.1.1-bodies.txt (read by ../kafka_fixtures.rs), with kafka-clients 4.1.1 and
// its dependencies on the class path (CP="$(scripts/cluster fetch)/*"):
//   javac -cp "$CP" -d /tmp KafkaOracle.java
//   java -cp "$CP:/tmp" KafkaOracle 2 20251129 > kafka-4.1.1-bodies.txt
// and ../../records/testdata/kafka-4.1.1-records.txt (after its comment header) with
//   java -cp "$CP:/tmp" KafkaOracle records
// Versions Kafka 4 removed (ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1,
// DeleteTopics v0, OffsetForLeaderEpoch v0-1, Fetch v0-3, Produce v0-2) are absent from that jar;
// kafka-3.9.1-bodies.txt holds the same from kafka-clients 3.9.1 (the same class path with
// kafka-clients-3.9.1.jar in place of the kafka-* jars), seed 20251129.
// APIs typed later were appended to both files by runs naming only them, e.g. the group
// membership APIs with
//   java -cp "$CP:/tmp" KafkaOracle 2 20251129 JoinGroup SyncGroup Heartbeat LeaveGroup ConsumerGroupHeartbeat
// and their lines of kafka-*-json.txt by `check` on those lines ("ok " dropped, each prefixed
// with "<Api> <request|response> <version>").
// kafka-4.1.1-consumer-protocol.txt (read by ../../consumer_protocol.rs) is `KafkaOracle
// consumer-protocol 4 20251129` (3.9.1 writes the same bytes).
import static java.nio.charset.StandardCharsets.UTF_8;

import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;
import java.io.*;
import java.lang.reflect.InvocationTargetException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.*;

public class KafkaOracle {
    static final String[] APIS = {"ListOffsets", "FindCoordinator", "OffsetFetch", "OffsetCommit", "ListGroups",
        "DescribeGroups", "CreateTopics", "DeleteTopics", "CreatePartitions", "DeleteRecords", "OffsetForLeaderEpoch",
        "OffsetDelete", "SaslHandshake", "SaslAuthenticate", "ApiVersions", "Metadata", "Fetch", "Produce",
        "ConsumerGroupDescribe", "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
        "TxnOffsetCommit", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "ConsumerGroupHeartbeat"};
    /** The nullable struct fields of the APIs above (dotted snake_case paths; see rebuild). */
    static final Map<String, Set<String>> NULLABLE_STRUCTS = Map.of("ConsumerGroupHeartbeatResponse", Set.of("assignment"));
    static final String[] CONSUMER_PROTOCOL = {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment"};
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
        if (t instanceof NullableStruct n) return rnd.nextInt(3) == 0 ? null : gen(n.inner);
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
                // Kafka's generated classes never write a tagged field holding its default (null,
                // empty, or the schema's default such as false), so such a body would not come
                // back byte for byte from Kafka either.
                Field f = e.getValue();
                boolean isDefault = v == null || v instanceof Object[] a && a.length == 0
                    || (f.hasDefaultValue ? Objects.equals(v, f.defaultValue) : Boolean.FALSE.equals(v));
                if (!isDefault) m.put(e.getKey(), v);
            }
            return m;
        }
        if (t.isArray()) {
            if (t.isNullable() && rnd.nextInt(4) == 0) return null;
            Object[] a = new Object[rnd.nextInt(3)];
            for (int i = 0; i < a.length; i++) a[i] = gen(t.arrayElementType().get());
            return a;
        }
        if (t == Type.RECORDS || t == Type.COMPACT_RECORDS) return recordsField();
        if (t == Type.BOOLEAN) return rnd.nextBoolean();
        if (t == Type.INT8) return (byte) rnd.nextInt();
        if (t == Type.INT16) return (short) rnd.nextInt();
        if (t == Type.INT32) return rnd.nextInt();
        if (t == Type.INT64) return rnd.nextLong();
        if (t == Type.UINT16) return rnd.nextInt(65536);
        if (t == Type.FLOAT64) return rnd.nextInt(4) == 0 ? (double) rnd.nextInt(100) : rnd.nextDouble() * 1000;
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
    static Object recordsField() {
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
        String mode = args.length > 0 ? args[0] : "";
        switch (mode) {
            case "check" -> check();
            case "records" -> recordSets();
            case "check-records" -> checkRecords();
            case "schema" -> schema(Integer.parseInt(args[1]), Long.parseLong(args[2]));
            case "consumer-protocol" -> consumerProtocol(Integer.parseInt(args[1]), Long.parseLong(args[2]));
            case "check-consumer-protocol" -> checkConsumerProtocol();
            default -> bodies(args);
        }
    }

    static void bodies(String[] args) throws Exception {
        boolean names = args.length > 0 && args[0].equals("names");
        int samples = names ? 0 : Integer.parseInt(args[0]);
        rnd = new Random(names ? 0 : Long.parseLong(args[1]));
        String[] apis = !names && args.length > 2 ? Arrays.copyOfRange(args, 2, args.length) : APIS;
        for (String api : apis) {
            for (String dir : new String[] {"Request", "Response"}) {
                Class<?> data = Class.forName("org.apache.kafka.common.message." + api + dir + "Data");
                Schema[] schemas = (Schema[]) data.getField("SCHEMAS").get(null);
                Set<String> all = new TreeSet<>();
                for (short v = 0; v < schemas.length; v++) {
                    if (schemas[v] == null) continue;
                    if (names) { names(schemas[v], "", all); continue; }
                    // Nullable struct fields, which Kafka's Schema objects cannot express.
                    Set<String> nullable = NULLABLE_STRUCTS.getOrDefault(api + dir, Set.of());
                    Schema schema = nullable.isEmpty() ? schemas[v] : (Schema) rebuild(schemas[v], "", nullable);
                    for (int i = 0; i < samples; i++) {
                        Struct st = (Struct) gen(schema);
                        ByteBuffer buf = ByteBuffer.allocate(schema.sizeOf(st));
                        schema.write(buf, st);
                        buf.flip();
                        // Kafka's generated reader must accept exactly these bytes.
                        ByteBufferAccessor acc = new ByteBufferAccessor(buf.duplicate());
                        data.getConstructor(Readable.class, short.class).newInstance(acc, v);
                        if (acc.remaining() != 0) throw new IllegalStateException(api + dir + " v" + v + " trailing");
                        System.out.println(api + " " + dir.toLowerCase() + " " + v + " " + hex(buf));
                    }
                }
                if (names) System.out.println(api + " " + dir.toLowerCase() + " " + String.join(" ", all));
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    static String hex(ByteBuffer b) {
        StringBuilder sb = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get()));
        return sb.toString();
    }

    static String hex(byte[] b) {
        return b == null ? "null" : hex(ByteBuffer.wrap(b));
    }

    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static String oneLine(Throwable e) {
        return (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
    }

    static PrintStream stdout() {
        return new PrintStream(new FileOutputStream(FileDescriptor.out), false, UTF_8);
    }

    // ------------------------------------------------------------------ check: kwire's bodies

    /**
     * Reads "<Api> <request|response> <version> <hex>" lines and answers each with one line:
     * "ok <json>" when Kafka's generated class reads the body and writes the same bytes back,
     * "differs <kafka's hex> <json>" when it writes other bytes, "unsupported" when this
     * kafka-clients has no such API or version, "error <why>" when it cannot read the body. The JSON is
     * Kafka's own view of the message (its *JsonConverter), for diagnostics.
     */
    static void check() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, UTF_8));
        PrintStream out = stdout();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ", -1);
            out.println(f.length < 3 ? "error malformed line" : checkBody(f[0], f[1], Short.parseShort(f[2]), f.length > 3 ? f[3] : ""));
        }
        out.flush();
    }

    static String checkBody(String api, String dir, short v, String hex) {
        try {
            String cls = "org.apache.kafka.common.message." + api + (dir.equals("request") ? "Request" : "Response") + "Data";
            Class<?> data;
            try {
                data = Class.forName(cls);
            } catch (ClassNotFoundException e) {
                return "unsupported"; // an API newer than this kafka-clients (e.g. KIP-932's in 3.9)
            }
            Schema[] schemas = (Schema[]) data.getField("SCHEMAS").get(null);
            if (v < 0 || v >= schemas.length || schemas[v] == null) return "unsupported";
            ByteBufferAccessor acc = new ByteBufferAccessor(ByteBuffer.wrap(unhex(hex)));
            Message m = (Message) data.getConstructor(Readable.class, short.class).newInstance(acc, v);
            if (acc.remaining() != 0) return "error " + acc.remaining() + " bytes left after the message";
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer again = ByteBuffer.allocate(m.size(cache, v));
            m.write(new ByteBufferAccessor(again), cache, v);
            again.flip();
            String json = Class.forName(cls + "JsonConverter").getMethod("write", data, short.class).invoke(null, m, v).toString();
            String kafka = hex(again);
            return kafka.equals(hex.toLowerCase()) ? "ok " + json : "differs " + kafka + " " + json;
        } catch (InvocationTargetException e) {
            return "error " + oneLine(e.getCause());
        } catch (Exception e) {
            return "error " + oneLine(e);
        }
    }

    // ------------------------------------------------------------------ schema: any message

    /**
     * A nullable struct field as the generated *Data classes write it: an INT8 marker (-1 null,
     * 1 present) before the struct. Kafka's Schema objects cannot express it (they describe such
     * a field as a plain struct), so `schema` swaps this type in at the paths kwire names.
     */
    static final class NullableStruct extends Type {
        final Schema inner;
        NullableStruct(Schema inner) { this.inner = inner; }
        @Override public void write(ByteBuffer buf, Object o) {
            if (o == null) { buf.put((byte) -1); return; }
            buf.put((byte) 1);
            inner.write(buf, o);
        }
        @Override public Object read(ByteBuffer buf) { return buf.get() < 0 ? null : inner.read(buf); }
        @Override public Object validate(Object o) { return o == null ? null : inner.validate(o); }
        @Override public int sizeOf(Object o) { return o == null ? 1 : 1 + inner.sizeOf(o); }
        @Override public boolean isNullable() { return true; }
        @Override public String toString() { return "NULLABLE_" + inner; }
    }

    /** `t` with the struct fields at `nullable` (dotted snake_case paths) made NullableStruct. */
    static Type rebuild(Type t, String prefix, Set<String> nullable) {
        if (t instanceof Schema s) {
            BoundField[] fs = s.fields();
            Field[] out = new Field[fs.length];
            for (int i = 0; i < fs.length; i++) {
                Field def = fs[i].def;
                if (def.type instanceof TaggedFields) { out[i] = def; continue; }
                String path = prefix.isEmpty() ? def.name : prefix + "." + def.name;
                Type ft = rebuild(def.type, path, nullable);
                if (ft instanceof Schema inner && nullable.contains(path)) ft = new NullableStruct(inner);
                out[i] = new Field(def.name, ft, def.docString);
            }
            return new Schema(out);
        }
        if (t.isArray()) {
            Type element = t.arrayElementType().get();
            Type again = rebuild(element, prefix, nullable);
            if (again == element) return t;
            if (t instanceof CompactArrayOf) return t.isNullable() ? CompactArrayOf.nullable(again) : new CompactArrayOf(again);
            return t.isNullable() ? ArrayOf.nullable(again) : new ArrayOf(again);
        }
        return t;
    }

    /**
     * For each "<Name> <request|response|header> <version>" line on stdin, `samples` random
     * messages: generated with the version's Schema, read by the generated *Data class, written
     * back by it (those bytes are printed) and rendered by its *JsonConverter. A sample the Data
     * class refuses is drawn again (up to 50 tries) before the line is reported as an error.
     */
    static void schema(int samples, long seed) throws IOException {
        rnd = new Random(seed);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, UTF_8));
        PrintStream out = stdout();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ");
            String name = f[0], dir = f[1];
            short v = Short.parseShort(f[2]);
            Set<String> nullable = new HashSet<>(Arrays.asList(f).subList(3, f.length));
            String cls = "org.apache.kafka.common.message." + name
                + (dir.equals("request") ? "Request" : dir.equals("response") ? "Response" : "") + "Data";
            String why = "no sample";
            int made = 0;
            for (int tries = 0; made < samples && tries < 50; tries++) {
                try {
                    Class<?> data = Class.forName(cls);
                    Schema[] schemas = (Schema[]) data.getField("SCHEMAS").get(null);
                    if (v < 0 || v >= schemas.length || schemas[v] == null) { why = "unsupported"; break; }
                    Schema schema = nullable.isEmpty() ? schemas[v] : (Schema) rebuild(schemas[v], "", nullable);
                    Struct st = (Struct) gen(schema);
                    ByteBuffer buf = ByteBuffer.allocate(schema.sizeOf(st));
                    schema.write(buf, st);
                    buf.flip();
                    ByteBufferAccessor acc = new ByteBufferAccessor(buf);
                    Message m = (Message) data.getConstructor(Readable.class, short.class).newInstance(acc, v);
                    if (acc.remaining() != 0) throw new IllegalStateException(acc.remaining() + " bytes left");
                    ObjectSerializationCache cache = new ObjectSerializationCache();
                    ByteBuffer again = ByteBuffer.allocate(m.size(cache, v));
                    m.write(new ByteBufferAccessor(again), cache, v);
                    again.flip();
                    String json = Class.forName(cls + "JsonConverter").getMethod("write", data, short.class).invoke(null, m, v).toString();
                    out.println(name + " " + dir + " " + v + " " + hex(again) + " " + json);
                    made++;
                } catch (InvocationTargetException e) {
                    why = oneLine(e.getCause());
                } catch (Exception e) {
                    why = oneLine(e);
                }
            }
            if (made == 0) out.println("error " + name + " " + dir + " " + v + " " + why);
        }
        out.flush();
    }

    // ------------------------------------------------------------------ the consumer protocol

    static Class<?> consumerProtocolClass(String name) throws ClassNotFoundException {
        if (!Arrays.asList(CONSUMER_PROTOCOL).contains(name)) throw new IllegalArgumentException("not a consumer-protocol message: " + name);
        return Class.forName("org.apache.kafka.common.message." + name);
    }

    /** Random messages of both consumer-protocol schemas at every version, version-prefixed. */
    static void consumerProtocol(int samples, long seed) throws Exception {
        rnd = new Random(seed);
        PrintStream out = stdout();
        for (String name : CONSUMER_PROTOCOL) {
            Class<?> data = consumerProtocolClass(name);
            Schema[] schemas = (Schema[]) data.getField("SCHEMAS").get(null);
            for (short v = 0; v < schemas.length; v++) {
                if (schemas[v] == null) continue;
                for (int i = 0; i < samples; i++) {
                    Struct st = (Struct) gen(schemas[v]);
                    ByteBuffer buf = ByteBuffer.allocate(schemas[v].sizeOf(st));
                    schemas[v].write(buf, st);
                    buf.flip();
                    ByteBufferAccessor acc = new ByteBufferAccessor(buf);
                    Message m = (Message) data.getConstructor(Readable.class, short.class).newInstance(acc, v);
                    if (acc.remaining() != 0) throw new IllegalStateException(name + " v" + v + " trailing");
                    out.println(name + " " + v + " " + hex(org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedByteBuffer(v, m)));
                }
            }
        }
        out.flush();
    }

    /**
     * Reads "<Name> <hex>" lines as ConsumerProtocol.deserializeSubscription/Assignment do: the
     * INT16 version, refused below the lowest, read as the highest above it, the fields of that
     * version and nothing more. Answers "<read-as version> <bytes left> <hex written back at
     * that version>" or "error <why>".
     */
    static void checkConsumerProtocol() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, UTF_8));
        PrintStream out = stdout();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ", -1);
            try {
                Class<?> data = consumerProtocolClass(f[0]);
                short lowest = data.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
                short highest = data.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
                ByteBuffer buf = ByteBuffer.wrap(unhex(f.length > 1 ? f[1] : ""));
                short version = buf.getShort();
                if (version < lowest) throw new SchemaException("Unsupported version: " + version);
                short readAs = (short) Math.min(version, highest);
                ByteBufferAccessor acc = new ByteBufferAccessor(buf);
                Message m = (Message) data.getConstructor(Readable.class, short.class).newInstance(acc, readAs);
                out.println(readAs + " " + acc.remaining() + " " + hex(org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedByteBuffer(readAs, m)));
            } catch (InvocationTargetException e) {
                out.println("error " + oneLine(e.getCause()));
            } catch (Exception e) {
                out.println("error " + oneLine(e));
            }
        }
        out.flush();
    }

    // ------------------------------------------------------------------ record batches

    /**
     * One "batch ..." line per batch (legacy: per top-level message, a compressed wrapper's
     * inner messages being its records) and one "record ..." line per record, after Kafka's own
     * checks: ensureValid() (the CRC) on every batch and record, the batch's record count, and no
     * bytes after the last batch.
     */
    static List<String> describe(MemoryRecords recs) {
        List<String> out = new ArrayList<>();
        int covered = 0;
        for (RecordBatch b : recs.batches()) {
            b.ensureValid();
            covered += b.sizeInBytes();
            List<String> rs = new ArrayList<>();
            for (Record r : b) {
                r.ensureValid();
                StringBuilder hs = new StringBuilder();
                for (Header h : r.headers())
                    hs.append(hs.length() == 0 ? "" : ",").append(hex(h.key().getBytes(UTF_8))).append(':').append(hex(h.value()));
                rs.add(String.format("record offset=%d ts=%d key=%s value=%s headers=%s", r.offset(), r.timestamp(),
                    r.hasKey() ? hex(r.key()) : "null", r.hasValue() ? hex(r.value()) : "null", hs));
            }
            Integer count = b.countOrNull();
            if (count != null && count != rs.size())
                throw new IllegalStateException("batch at " + b.baseOffset() + " claims " + count + " records, has " + rs.size());
            out.add(String.format("batch magic=%d offsets=%d..%d epoch=%d codec=%s ts_type=%s max_ts=%d txn=%b control=%b producer=%d/%d/%d records=%d",
                b.magic(), b.baseOffset(), b.lastOffset(), b.partitionLeaderEpoch(), b.compressionType().name, b.timestampType(),
                b.maxTimestamp(), b.isTransactional(), b.isControlBatch(), b.producerId(), b.producerEpoch(), b.baseSequence(), rs.size()));
            out.addAll(rs);
        }
        if (covered != recs.sizeInBytes())
            throw new IllegalStateException((recs.sizeInBytes() - covered) + " bytes after the last complete batch");
        return out;
    }

    /**
     * Reads "<name> <hex>" lines (kwire's record sets) and answers each with "set <name>" and its
     * description, or "error <name> <why>".
     */
    static void checkRecords() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, UTF_8));
        PrintStream out = stdout();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ", -1);
            try {
                List<String> d = describe(MemoryRecords.readableRecords(ByteBuffer.wrap(unhex(f.length > 1 ? f[1] : ""))));
                out.println("set " + f[0]);
                d.forEach(out::println);
            } catch (Exception e) {
                out.println("error " + f[0] + " " + oneLine(e));
            }
        }
        out.flush();
    }

    static final long T0 = 1_700_000_000_000L;
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};

    /**
     * n records from firstOffset: keys, null keys, empty keys, values, null values (tombstones),
     * headers (magic 2 only) with null and empty parts and a non-ASCII key, timestamps that go
     * back as well as forward, and offset gaps as compaction leaves them.
     */
    static void append(MemoryRecordsBuilder b, byte magic, long firstOffset, int n) {
        long offset = firstOffset;
        for (int i = 0; i < n; i++) {
            byte[] key = i % 5 == 1 ? null : i % 7 == 3 ? new byte[0] : ("key-" + i).getBytes(UTF_8);
            byte[] value = i % 5 == 2 ? null : ("value-" + i + "-" + "x".repeat(i % 13)).getBytes(UTF_8);
            long ts = T0 + 1000L * i - (i % 4 == 3 ? 5000 : 0);
            Header[] headers = magic < RecordBatch.MAGIC_VALUE_V2 ? new Header[0] : switch (i % 4) {
                case 0 -> new Header[0];
                case 1 -> new Header[] {new RecordHeader("trace-id", ("t" + i).getBytes(UTF_8))};
                case 2 -> new Header[] {new RecordHeader("é", null), new RecordHeader("", new byte[0])};
                default -> new Header[] {new RecordHeader("a", new byte[] {0, (byte) 0xff}), new RecordHeader("a", "dup".getBytes(UTF_8))};
            };
            b.appendWithOffset(offset, ts, key, value, headers);
            offset += i % 6 == 5 ? 3 : 1;
        }
    }

    static MemoryRecords build(byte magic, String codec, TimestampType tt, long base, long logAppendTime, long pid,
            short epoch, int seq, boolean txn, int leaderEpoch, int n) {
        MemoryRecordsBuilder b = MemoryRecords.builder(ByteBuffer.allocate(1 << 16), magic, Compression.of(codec).build(), tt,
            base, logAppendTime, pid, epoch, seq, txn, false, leaderEpoch);
        append(b, magic, base, n);
        return b.build();
    }

    static MemoryRecords plain(byte magic, String codec, long base, int n) {
        TimestampType tt = magic == RecordBatch.MAGIC_VALUE_V0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME;
        return build(magic, codec, tt, base, RecordBatch.NO_TIMESTAMP, -1, (short) -1, -1, false, -1, n);
    }

    static MemoryRecords marker(ControlRecordType type, long offset, int coordinatorEpoch) {
        return MemoryRecords.withEndTransactionMarker(offset, T0 + 77, 12, 4242L, (short) 7,
            new EndTransactionMarker(type, coordinatorEpoch));
    }

    static MemoryRecords concat(MemoryRecords... parts) {
        int n = 0;
        for (MemoryRecords p : parts) n += p.sizeInBytes();
        ByteBuffer all = ByteBuffer.allocate(n);
        for (MemoryRecords p : parts) all.put(p.buffer().duplicate());
        all.flip();
        return MemoryRecords.readableRecords(all);
    }

    /** Record sets built by MemoryRecordsBuilder: "set <name> <hex>", then their description. */
    static void recordSets() {
        Map<String, MemoryRecords> sets = new LinkedHashMap<>();
        byte v0 = RecordBatch.MAGIC_VALUE_V0, v1 = RecordBatch.MAGIC_VALUE_V1, v2 = RecordBatch.MAGIC_VALUE_V2;
        for (String codec : CODECS) sets.put("v2-" + codec, plain(v2, codec, 0, 24));
        sets.put("v2-idempotent-zstd", build(v2, "zstd", TimestampType.CREATE_TIME, 1000, RecordBatch.NO_TIMESTAMP, 4242L, (short) 7, 100, false, 12, 5));
        sets.put("v2-transactional-snappy", build(v2, "snappy", TimestampType.CREATE_TIME, 2000, RecordBatch.NO_TIMESTAMP, 4242L, (short) 7, 0, true, 12, 3));
        sets.put("v2-log-append-time-lz4", build(v2, "lz4", TimestampType.LOG_APPEND_TIME, 3000, T0 + 99_999, -1, (short) -1, -1, false, 5, 4));
        sets.put("v2-log-append-time-none", build(v2, "none", TimestampType.LOG_APPEND_TIME, 3100, T0 + 99_999, -1, (short) -1, -1, false, 5, 2));
        sets.put("control-commit", marker(ControlRecordType.COMMIT, 2003, 3));
        sets.put("control-abort", marker(ControlRecordType.ABORT, 2004, 0));
        sets.put("v2-read-committed", concat(
            build(v2, "gzip", TimestampType.CREATE_TIME, 10, RecordBatch.NO_TIMESTAMP, 4242L, (short) 7, 0, true, 12, 3),
            marker(ControlRecordType.ABORT, 13, 3),
            plain(v2, "none", 14, 2),
            build(v2, "lz4", TimestampType.CREATE_TIME, 16, RecordBatch.NO_TIMESTAMP, 4243L, (short) 0, 0, true, 12, 2),
            marker(ControlRecordType.COMMIT, 18, 3)));
        for (byte magic : new byte[] {v0, v1})
            for (String codec : new String[] {"none", "gzip", "snappy", "lz4"})
                sets.put("v" + magic + "-" + codec, plain(magic, codec, 40, 6));
        sets.put("v1-log-append-time-none", build(v1, "none", TimestampType.LOG_APPEND_TIME, 50, T0 + 55_555, -1, (short) -1, -1, false, -1, 2));
        sets.put("v1-log-append-time-gzip", build(v1, "gzip", TimestampType.LOG_APPEND_TIME, 52, T0 + 55_555, -1, (short) -1, -1, false, -1, 3));
        sets.put("v0-gzip-then-v1-snappy-then-v2-zstd", concat(plain(v0, "gzip", 0, 2), plain(v1, "snappy", 2, 3), plain(v2, "zstd", 5, 3)));
        PrintStream out = stdout();
        sets.forEach((name, recs) -> {
            out.println("set " + name + " " + hex(recs.buffer()));
            describe(recs).forEach(out::println);
        });
        out.flush();
    }
}
