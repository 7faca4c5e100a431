// Kafka's own Admin client answering ListOffsets for one partition, with the specs of
// KIP-1005 (EARLIEST_LOCAL, LATEST_TIERED) that confluent-kafka does not offer. Run by
// tests/tier/tiered_cluster.py as a single-file source program over the pinned jars.
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

public class ListOffsetsTiered {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        String[] names = {"earliest", "earliest_local", "latest_tiered", "latest"};
        OffsetSpec[] specs = {OffsetSpec.earliest(), OffsetSpec.earliestLocal(),
                              OffsetSpec.latestTiered(), OffsetSpec.latest()};
        try (Admin admin = Admin.create(props)) {
            for (int a = 1; a < args.length; a++) {   // topic:partition ...
                int colon = args[a].lastIndexOf(':');
                TopicPartition tp = new TopicPartition(args[a].substring(0, colon),
                                                       Integer.parseInt(args[a].substring(colon + 1)));
                StringBuilder out = new StringBuilder("OFFSETS " + args[a] + " {");
                for (int i = 0; i < specs.length; i++) {
                    long offset = admin.listOffsets(Map.of(tp, specs[i])).partitionResult(tp)
                            .get(30, TimeUnit.SECONDS).offset();
                    out.append(i == 0 ? "" : ", ").append('"').append(names[i]).append("\": ")
                            .append(offset);
                }
                System.out.println(out.append('}'));
            }
        }
    }
}
