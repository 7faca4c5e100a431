// Kafka's own RemoteLogMetadataCache (kafka-storage, the pinned release) fed the remote segment
// events of a file and asked which segment a read at (epoch, offset) is served from and which
// segments the clean-up lists per epoch: the oracle of tests/tier/test_tier_served.py for
// segtools.tier.lineage.EpochIndex. Run as a single-file source program over the broker
// classpath. The cache's methods are package-private: called by reflection.
//
// Input lines: "case", "start NAME START END E:O,E:O", "update NAME STATE" (1 FINISHED,
// 2 DELETE_STARTED, 3 DELETE_FINISHED), "lookup EPOCH OFFSET", "list EPOCH".
// Output: "lookup EPOCH OFFSET NAME|-" and "list EPOCH NAME,NAME|-" (names sorted).
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataCache;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;

public class EpochIndexOracle {
    static Method method(String name, Class<?>... types) throws Exception {
        Method m = RemoteLogMetadataCache.class.getDeclaredMethod(name, types);
        m.setAccessible(true);
        return m;
    }

    public static void main(String[] args) throws Exception {
        Method add = method("addCopyInProgressSegment", RemoteLogSegmentMetadata.class);
        Method update = method("updateRemoteLogSegmentMetadata", RemoteLogSegmentMetadataUpdate.class);
        Method lookup = method("remoteLogSegmentMetadata", int.class, long.class);
        Method list = method("listRemoteLogSegments", int.class);
        TopicIdPartition tip = new TopicIdPartition(new Uuid(1, 1), 0, "t");
        RemoteLogMetadataCache cache = null;
        Map<String, RemoteLogSegmentId> ids = new HashMap<>();
        Map<Uuid, String> names = new HashMap<>();
        StringBuilder out = new StringBuilder();
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "case" -> {
                    cache = new RemoteLogMetadataCache();
                    out.append("case\n");
                }
                case "start" -> {
                    RemoteLogSegmentId id = new RemoteLogSegmentId(tip, new Uuid(2, names.size() + 1));
                    ids.put(w[1], id);
                    names.put(id.id(), w[1]);
                    Map<Integer, Long> epochs = new HashMap<>();
                    for (String eo : w[4].split(",")) {
                        String[] p = eo.split(":");
                        epochs.put(Integer.parseInt(p[0]), Long.parseLong(p[1]));
                    }
                    add.invoke(cache, new RemoteLogSegmentMetadata(id, Long.parseLong(w[2]),
                            Long.parseLong(w[3]), 1L, 1, 1L, 100, epochs));
                }
                case "update" -> {
                    RemoteLogSegmentState state = RemoteLogSegmentState.forId(Byte.parseByte(w[2]));
                    update.invoke(cache, new RemoteLogSegmentMetadataUpdate(ids.get(w[1]), 2L,
                            Optional.empty(), state, 1));
                }
                case "lookup" -> {
                    Optional<?> got = (Optional<?>) lookup.invoke(cache, Integer.parseInt(w[1]),
                            Long.parseLong(w[2]));
                    String name = got.map(m -> names.get(((RemoteLogSegmentMetadata) m)
                            .remoteLogSegmentId().id())).orElse("-");
                    out.append("lookup ").append(w[1]).append(' ').append(w[2]).append(' ')
                            .append(name).append('\n');
                }
                case "list" -> {
                    List<String> listed = new ArrayList<>();
                    try {
                        Iterator<?> it = (Iterator<?>) list.invoke(cache, Integer.parseInt(w[1]));
                        while (it.hasNext()) {
                            listed.add(names.get(((RemoteLogSegmentMetadata) it.next())
                                    .remoteLogSegmentId().id()));
                        }
                    } catch (InvocationTargetException e) {
                        listed = List.of("!" + e.getCause().getClass().getSimpleName());
                    }
                    Collections.sort(listed);
                    out.append("list ").append(w[1]).append(' ')
                            .append(listed.isEmpty() ? "-" : String.join(",", listed)).append('\n');
                }
                default -> throw new IllegalArgumentException(line);
            }
        }
        System.out.print(out);
    }
}
