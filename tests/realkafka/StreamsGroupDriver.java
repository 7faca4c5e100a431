// A Kafka Streams application in a KIP-1071 streams group (group.protocol=streams): its
// group coordinator writes the streams-group records (types 17-23) to __consumer_offsets.
// Usage: StreamsGroupDriver BOOTSTRAP APPLICATION_ID INPUT_TOPIC OUTPUT_TOPIC RECORDS
// Copies INPUT to OUTPUT (values upper-cased) until RECORDS arrived in OUTPUT, then closes.

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

public class StreamsGroupDriver {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], app = args[1], input = args[2], output = args[3];
        int records = Integer.parseInt(args[4]);
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args.length > 5 ? args[5] : "/tmp/segtools-streams");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input).mapValues(v -> v.toUpperCase()).to(output);
        int seen = 0;
        try (KafkaStreams streams = new KafkaStreams(builder.build(), p)) {
            streams.start();
            Properties c = new Properties();
            c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            c.put(ConsumerConfig.GROUP_ID_CONFIG, app + "-reader");
            c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                consumer.subscribe(List.of(output));
                long deadline = System.currentTimeMillis() + 90_000;
                while (seen < records && System.currentTimeMillis() < deadline) {
                    for (var r : consumer.poll(Duration.ofMillis(500))) {
                        System.out.println(r.value());
                        seen++;
                    }
                }
            }
            Thread.sleep(1000);   // one more commit interval: the input offsets are committed
            streams.close(Duration.ofSeconds(30));
        }
        System.exit(seen >= records ? 0 : 1);
    }
}
