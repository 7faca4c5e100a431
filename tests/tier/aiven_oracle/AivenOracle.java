// Writes one remote segment in Aiven's tiered-storage object format with the Java calls the
// plugin makes (JDK AES/GCM/NoPadding with a random 12-byte IV written before each chunk and
// the segment's AAD; BouncyCastle's RSA/NONE/OAEPWithSHA3-512AndMGF1Padding wrapping the AES
// key; zstd-jni's ZstdCompressCtx with the content size in each frame). Written for segtools'
// tests from the plugin's published format; an independent second encoder to
// tests/tier/aiven_encoder.py for the crypto and compression libraries.
//
// java -cp <bcprov:zstd-jni> AivenOracle.java PUBLIC_KEY.der OUT_BASE CHUNK_SIZE SEGMENT.log
//      OFFSET.index TIME.timeindex PRODUCER.snapshot LEADER_EPOCH.checkpoint
import com.github.luben.zstd.ZstdCompressCtx;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Security;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import javax.crypto.Cipher;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import org.bouncycastle.jce.provider.BouncyCastleProvider;

public class AivenOracle {
    static byte[] zstd(byte[] in) {
        try (ZstdCompressCtx ctx = new ZstdCompressCtx()) {
            ctx.setPledgedSrcSize(in.length);
            ctx.setContentSize(true);
            return ctx.compress(in);
        }
    }

    static byte[] encrypt(SecretKey key, byte[] aad, byte[] plain) throws Exception {
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(Cipher.ENCRYPT_MODE, key, SecureRandom.getInstanceStrong());
        c.updateAAD(aad);
        byte[] iv = c.getIV();
        byte[] body = c.doFinal(plain);
        byte[] out = new byte[iv.length + body.length];
        System.arraycopy(iv, 0, out, 0, iv.length);
        System.arraycopy(body, 0, out, iv.length, body.length);
        return out;
    }

    // count; base, bytes per value and offsets from the base; the last value in full
    static byte[] pack(List<Integer> v) {
        int n = v.size();
        if (n <= 1) {
            ByteBuffer b = ByteBuffer.allocate(4 + 4 * n).putInt(n);
            if (n == 1) b.putInt(v.get(0));
            return b.array();
        }
        int base = Integer.MAX_VALUE;
        for (int i = 0; i < n - 1; i++) base = Math.min(base, v.get(i));
        int width = 1;
        for (int i = 0; i < n - 1; i++) {
            long d = v.get(i) - base;
            while (d >= (1L << (8 * width))) width++;
        }
        ByteBuffer b = ByteBuffer.allocate(9 + (n - 1) * width + 4).putInt(n).putInt(base);
        b.put((byte) width);
        for (int i = 0; i < n - 1; i++) {
            byte[] full = ByteBuffer.allocate(4).putInt(v.get(i) - base).array();
            b.put(full, 4 - width, width);
        }
        return b.putInt(v.get(n - 1)).array();
    }

    public static void main(String[] a) throws Exception {
        Security.addProvider(new BouncyCastleProvider());
        PublicKey pub = KeyFactory.getInstance("RSA").generatePublic(
            new X509EncodedKeySpec(Files.readAllBytes(Path.of(a[0]))));
        String base = a[1];
        int chunkSize = Integer.parseInt(a[2]);
        byte[] log = Files.readAllBytes(Path.of(a[3]));
        KeyGenerator gen = KeyGenerator.getInstance("AES");
        gen.init(256, SecureRandom.getInstanceStrong());
        SecretKey dataKey = gen.generateKey();
        byte[] aad = gen.generateKey().getEncoded();

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<Integer> sizes = new ArrayList<>();
        for (int p = 0; p < log.length; p += chunkSize) {
            byte[] chunk = Arrays.copyOfRange(log, p, Math.min(log.length, p + chunkSize));
            byte[] t = encrypt(dataKey, aad, zstd(chunk));
            sizes.add(t.length);
            out.write(t);
        }
        Files.write(Path.of(base + ".log"), out.toByteArray());

        String[] names = {"offset", "timestamp", "producerSnapshot", "leaderEpoch"};
        ByteArrayOutputStream idx = new ByteArrayOutputStream();
        StringBuilder indexes = new StringBuilder();
        for (int i = 0; i < names.length; i++) {
            byte[] plain = Files.readAllBytes(Path.of(a[4 + i]));
            byte[] t = plain.length == 0 ? plain : encrypt(dataKey, aad, plain);
            indexes.append('"').append(names[i]).append("\":{\"position\":").append(idx.size())
                .append(",\"size\":").append(t.length).append("},");
            idx.write(t);
        }
        indexes.append("\"transaction\":null");
        Files.write(Path.of(base + ".indexes"), idx.toByteArray());

        Cipher rsa = Cipher.getInstance("RSA/NONE/OAEPWithSHA3-512AndMGF1Padding", "BC");
        rsa.init(Cipher.ENCRYPT_MODE, pub, SecureRandom.getInstanceStrong());
        byte[] wrapped = rsa.doFinal(dataKey.getEncoded());
        Base64.Encoder b64 = Base64.getEncoder();
        String manifest = "{\"version\":\"1\",\"chunkIndex\":{\"type\":\"variable\","
            + "\"originalChunkSize\":" + chunkSize + ",\"originalFileSize\":" + log.length
            + ",\"transformedChunks\":\"" + b64.encodeToString(zstd(pack(sizes))) + "\"},"
            + "\"segmentIndexes\":{" + indexes + "},\"compression\":true,"
            + "\"encryption\":{\"dataKey\":\"key1:" + b64.encodeToString(wrapped) + "\","
            + "\"aad\":\"" + b64.encodeToString(aad) + "\"}}";
        Files.writeString(Path.of(base + ".rsm-manifest"), manifest);
    }
}
