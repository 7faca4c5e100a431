import java.util.*;
// Oracle for the partition order kafka-dump-log prints: TransactionMetadata puts partitions in a
// Scala 2.13 mutable.HashSet via `topicPartitions ++= ids.map(new TopicPartition(topic, _)).toSet`.
public class Order {
    static final class TP {
        final String topic; final int partition;
        TP(String t, int p) { topic = t; partition = p; }
        @Override public int hashCode() { final int prime = 31; int result = 1; result = prime * result + partition; result = prime * result + Objects.hashCode(topic); return result; }
        @Override public boolean equals(Object o) { if (!(o instanceof TP)) return false; TP x = (TP) o; return partition == x.partition && topic.equals(x.topic); }
        @Override public String toString() { return topic + "-" + partition; }
    }
    public static void main(String[] args) {
        // args: "topicA:0,1,2" "topicB:5" ...
        scala.collection.mutable.HashSet<TP> set = new scala.collection.mutable.HashSet<>();
        for (String g : args) {
            String[] parts = g.split(":");
            List<TP> list = new ArrayList<>();
            for (String p : parts[1].split(",")) list.add(new TP(parts[0], Integer.parseInt(p)));
            set.addAll(scala.jdk.javaapi.CollectionConverters.asScala(list).toSet());
        }
        StringBuilder sb = new StringBuilder("[");
        scala.collection.Iterator<TP> it = set.iterator();
        boolean first = true;
        while (it.hasNext()) { if (!first) sb.append(","); first = false; sb.append(it.next()); }
        System.out.println(sb.append("]"));
    }
}
