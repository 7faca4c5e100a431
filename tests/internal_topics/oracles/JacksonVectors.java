import com.fasterxml.jackson.databind.node.*;
// Oracle for segtools.internal.json_render: what Jackson's JsonNode.toString() writes for the node
// types Kafka's generated JsonConverters use (TextNode, DoubleNode, BinaryNode, LongNode, NullNode).
public class JacksonVectors {
    public static void main(String[] args) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        String[] texts = {"plain", "quote\" back\\slash /", "tab\tnl\ncr\rbs\bff\f", "ctl\u0001\u001f\u007f", "unicode é ü 漢 \uD83D\uDE00", "<DELETE>&'"};
        for (String t : texts) { ObjectNode o = f.objectNode(); o.set("s", new TextNode(t)); System.out.println(o.toString()); }
        double[] ds = {0.0, -0.0, 1.0, 1024.0, 0.5, 0.001, 0.0001, 1.0E7, 9999999.0, 12345678.9, 1.5E-10, 123456.789, 3.0E20, -2.5, 1.0/3, 100.0, Double.MAX_VALUE, Double.MIN_VALUE, 1.0E-3, 2.0E-3};
        for (double d : ds) { ObjectNode o = f.objectNode(); o.set("d", new DoubleNode(d)); System.out.println(o.toString()); }
        byte[][] bs = {new byte[0], "a".getBytes(), "ab".getBytes(), "Subscription".getBytes(), "Assignment".getBytes(), new byte[]{(byte)0xfb, (byte)0xff, (byte)0xfe}};
        for (byte[] b : bs) { ObjectNode o = f.objectNode(); o.set("b", new BinaryNode(b)); System.out.println(o.toString()); }
        ObjectNode o = f.objectNode(); o.set("l", new LongNode(Long.MIN_VALUE)); o.set("n", NullNode.instance); o.set("t", BooleanNode.TRUE);
        ArrayNode a = f.arrayNode(); a.add(new IntNode(1)); a.add(new ShortNode((short) -2)); o.set("a", a); o.set("e", f.objectNode());
        System.out.println(o.toString());
    }
}
