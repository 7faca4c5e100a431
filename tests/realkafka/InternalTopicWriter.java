/*
 * Writes a log segment of internal-topic records with Kafka's OWN serializers (Kafka 4.3.1 jars),
 * so that the decoder parity tests compare segtools with the real kafka-dump-log on records no
 * segtools code produced. Used where a real cluster cannot write a record type here (streams
 * groups need the Kafka Streams client, __remote_log_metadata needs a tiered-storage broker)
 * and for what no healthy cluster writes (tagged fields of a newer Kafka, unknown types).
 *
 * Usage: InternalTopicWriter <job file>. One record (one batch) per job line, TAB-separated;
 * a line "file <path>" starts the next segment (offsets restart at 0):
 *   group|share  <record type>  <key JSON>  <value version|->  <value JSON|->  [tag:hex,...]
 *       key/value built by the generated CoordinatorRecordJsonConverters from the JSON, then
 *       serialized by GroupCoordinatorRecordSerde / ShareCoordinatorRecordSerde ("-" = a
 *       tombstone); the optional last column adds unknown tagged fields to the value
 *   raw  <key hex|->  <value hex|->                    bytes as given (unknown record types)
 *   rlm  segment|update|delete|snapshot  <case number> RemoteLogMetadataSerde.serialize of a
 *       RemoteLogMetadata object built here (cases below)
 */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogSegmentMetadataSnapshot;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;

public final class InternalTopicWriter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] argv) throws Exception {
        List<String> jobs = Files.readAllLines(Path.of(argv[0]), StandardCharsets.UTF_8);
        long offset = 0;
        FileOutputStream out = null;
        try {
            for (String job : jobs) {
                if (job.isEmpty()) {
                    continue;
                }
                String[] f = job.split("\t", -1);
                if (f[0].equals("file")) {
                    if (out != null) {
                        out.close();
                    }
                    out = new FileOutputStream(f[1]);
                    offset = 0;
                    continue;
                }
                byte[][] kv = switch (f[0]) {
                    case "group" -> coordinator(f, new org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde(), true);
                    case "share" -> coordinator(f, new org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde(), false);
                    case "raw" -> new byte[][] {bytes(f[1]), bytes(f[2])};
                    case "rlm" -> new byte[][] {null, new RemoteLogMetadataSerde().serialize(remote(f[1], Integer.parseInt(f[2])))};
                    default -> throw new IllegalArgumentException("unknown job " + f[0]);
                };
                MemoryRecords records = MemoryRecords.withRecords(offset, Compression.NONE,
                        new SimpleRecord(1700000000000L + offset, kv[0], kv[1]));
                ByteBuffer buf = records.buffer();
                byte[] raw = new byte[buf.remaining()];
                buf.get(raw);
                out.write(raw);
                offset++;
            }
        } finally {
            if (out != null) {
                out.close();
            }
        }
    }

    private static byte[] bytes(String hex) {
        return hex.equals("-") ? null : HEX.parseHex(hex);
    }

    private static byte[][] coordinator(String[] f, CoordinatorRecordSerde serde, boolean group) throws Exception {
        short type = Short.parseShort(f[1]);
        JsonNode keyJson = JSON.readTree(f[2]);
        ApiMessage key = group
                ? org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters.readRecordKeyFromJson(keyJson, type)
                : org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.readRecordKeyFromJson(keyJson, type);
        CoordinatorRecord record;
        if (f[3].equals("-")) {
            record = CoordinatorRecord.tombstone(key);
        } else {
            short version = Short.parseShort(f[3]);
            JsonNode valueJson = JSON.readTree(f[4]);
            ApiMessage value = group
                    ? org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters.readRecordValueFromJson(valueJson, type, version)
                    : org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.readRecordValueFromJson(valueJson, type, version);
            if (f.length > 5 && !f[5].isEmpty()) {
                for (String tag : f[5].split(",")) {
                    String[] tv = tag.split(":", -1);
                    value.unknownTaggedFields().add(new RawTaggedField(Integer.parseInt(tv[0]), HEX.parseHex(tv[1])));
                }
            }
            record = CoordinatorRecord.record(key, new ApiMessageAndVersion(value, version));
        }
        return new byte[][] {serde.serializeKey(record), serde.serializeValue(record)};
    }

    private static RemoteLogMetadata remote(String kind, int n) {
        TopicIdPartition tip = new TopicIdPartition(Uuid.fromString("b6YXW2f9QvC4oGsxvuUF4A"), n, "tiered-" + n);
        RemoteLogSegmentId id = new RemoteLogSegmentId(tip, Uuid.fromString("DxcvA2HCQqKpjuyXxvnXEQ"));
        Map<Integer, Long> epochs = new TreeMap<>();
        epochs.put(0, 0L);
        if (n > 0) {
            epochs.put(3, 120L * n);
            epochs.put(1, 40L * n);
        }
        Optional<RemoteLogSegmentMetadata.CustomMetadata> custom = n % 2 == 1
                ? Optional.of(new RemoteLogSegmentMetadata.CustomMetadata(new byte[] {1, 2, 3, (byte) n}))
                : Optional.empty();
        RemoteLogSegmentState state = RemoteLogSegmentState.values()[n % RemoteLogSegmentState.values().length];
        return switch (kind) {
            case "segment" -> new RemoteLogSegmentMetadata(id, 100L * n, 100L * n + 99, 1700000000123L + n, n,
                    1700000000456L + n, 1048576 + n, custom, state, epochs, n % 2 == 0);
            case "update" -> new RemoteLogSegmentMetadataUpdate(id, 1700000000789L + n, custom, state, n);
            case "delete" -> new RemotePartitionDeleteMetadata(tip,
                    RemotePartitionDeleteState.values()[n % RemotePartitionDeleteState.values().length], 1700000000999L + n, n);
            case "snapshot" -> new RemoteLogSegmentMetadataSnapshot(id.id(), 100L * n, 100L * n + 99, 1700000000123L + n, n,
                    1700000000456L + n, 2048 + n, custom, state, epochs, n % 2 == 1);
            default -> throw new IllegalArgumentException("unknown remote log metadata kind " + kind);
        };
    }
}
