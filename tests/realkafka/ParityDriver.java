/*
 * Runs the real kafka-dump-log (DumpLogSegments.main, unmodified: org.apache.kafka.tools' in
 * Kafka 4.3+, kafka.tools' Scala one in 4.0-4.2) once
 * per job inside one JVM, so that a parity run over hundreds of files pays the JVM start-up
 * once. Each job is one line of the job file: the tool's arguments separated by TABs.
 *
 * For every job the driver writes one frame to its stdout:
 *   "@@PARITY@@ <stdout bytes> <stderr bytes> <exception bytes> <changes bytes>\n" then the
 *   four byte blocks.
 * The exception block is empty when main returned; otherwise it is what the JVM would have
 * printed for the uncaught exception (class: message, then the stack frames), because Kafka's
 * tool has no try/catch around per-file work and dies with that stack trace.
 *
 * The tool writes to its inputs: it creates a missing <base>.index next to a .timeindex it
 * dumps, and opening an index truncates it to a whole number of entries. After each job the
 * driver deletes what the job created and restores the bytes of what it changed, and lists
 * those paths in a fourth block of the frame ("created <path>" / "modified <path>" lines).
 */
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class ParityDriver {
    public static void main(String[] argv) throws Exception {
        List<String> jobs = Files.readAllLines(Path.of(argv[0]), StandardCharsets.UTF_8);
        OutputStream frames = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        // Kafka's Exit.exit would end the JVM (usage errors): turn it into an exception. Exit
        // moved to common.utils.internals in Kafka 4.4, so it is found by name in either place
        setExitProcedure();
        // the Java tool of Kafka 4.3+, else the Scala one of 4.0-4.2 (kafka.tools)
        Class<?> tool;
        try {
            tool = Class.forName("org.apache.kafka.tools.DumpLogSegments");
        } catch (ClassNotFoundException e) {
            tool = Class.forName("kafka.tools.DumpLogSegments");
        }
        java.lang.reflect.Method dumpLogMain = tool.getMethod("main", String[].class);
        for (String job : jobs) {
            if (job.isEmpty()) {
                continue;
            }
            String[] args = job.split("\t", -1);
            List<Path> absentSiblings = new ArrayList<>();
            Map<Path, byte[]> before = new LinkedHashMap<>();
            for (int i = 0; i + 1 < args.length; i++) {
                if (!args[i].equals("--files")) {
                    continue;
                }
                for (String file : args[i + 1].split(",")) {
                    Path p = Path.of(file).toAbsolutePath();
                    String base = p.getFileName().toString().split("\\.")[0];
                    if (Files.isRegularFile(p) && Files.size(p) < (64 << 20)) {
                        before.put(p, Files.readAllBytes(p));
                    }
                    for (String suffix : new String[] {".index", ".log", ".timeindex"}) {
                        Path sibling = p.resolveSibling(base + suffix);
                        if (!Files.exists(sibling)) {
                            absentSiblings.add(sibling);
                        } else if (Files.isRegularFile(sibling) && Files.size(sibling) < (64 << 20)) {
                            before.put(sibling, Files.readAllBytes(sibling));
                        }
                    }
                }
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            String exception = "";
            StringBuilder changes = new StringBuilder();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            try {
                runTool(dumpLogMain, args);
            } catch (java.lang.reflect.InvocationTargetException t) {
                StringWriter trace = new StringWriter();
                t.getCause().printStackTrace(new PrintWriter(trace));
                exception = trace.toString();
            } catch (Throwable t) {
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                exception = trace.toString();
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
                for (Path created : absentSiblings) {
                    if (Files.deleteIfExists(created)) {
                        changes.append("created ").append(created).append('\n');
                    }
                }
                for (Map.Entry<Path, byte[]> e : before.entrySet()) {
                    if (!Files.exists(e.getKey()) || !Arrays.equals(Files.readAllBytes(e.getKey()), e.getValue())) {
                        Files.write(e.getKey(), e.getValue());
                        changes.append("modified ").append(e.getKey()).append('\n');
                    }
                }
            }
            byte[] o = out.toByteArray();
            byte[] e = err.toByteArray();
            byte[] x = exception.getBytes(StandardCharsets.UTF_8);
            byte[] c = changes.toString().getBytes(StandardCharsets.UTF_8);
            frames.write(("@@PARITY@@ " + o.length + " " + e.length + " " + x.length + " " + c.length + "\n")
                .getBytes(StandardCharsets.US_ASCII));
            frames.write(o);
            frames.write(e);
            frames.write(x);
            frames.write(c);
        }
        frames.flush();
    }

    /**
     * DumpLogSegments.main(args). The Scala tool of Kafka 4.0-4.2 prints through scala.Console,
     * whose out/err are bound once (to the System.out of the first use), so it runs inside
     * Console.withOut/withErr bound to the job's streams; the Java tool of 4.3+ needs none.
     */
    private static void runTool(java.lang.reflect.Method main, String[] args) throws Throwable {
        Class<?> console;
        try {
            console = Class.forName("scala.Console");
        } catch (ClassNotFoundException e) {
            main.invoke(null, (Object) args);
            return;
        }
        Class<?> function0 = Class.forName("scala.Function0");
        java.lang.reflect.Method withOut = console.getMethod("withOut", java.io.OutputStream.class, function0);
        java.lang.reflect.Method withErr = console.getMethod("withErr", java.io.OutputStream.class, function0);
        Object inner = thunk(function0, () -> main.invoke(null, (Object) args));
        Object outer = thunk(function0, () -> withErr.invoke(null, System.err, inner));
        withOut.invoke(null, System.out, outer);
    }

    interface Body {
        Object run() throws Throwable;
    }

    private static Object thunk(Class<?> function0, Body body) {
        return java.lang.reflect.Proxy.newProxyInstance(
            function0.getClassLoader(), new Class<?>[] {function0}, (proxy, method, margs) -> {
                switch (method.getName()) {
                    case "hashCode": return System.identityHashCode(proxy);
                    case "equals": return proxy == margs[0];
                    case "toString": return "<job>";
                    default:
                        try {
                            return body.run();
                        } catch (java.lang.reflect.InvocationTargetException e) {
                            throw e.getCause();
                        }
                }
            });
    }

    private static void setExitProcedure() throws Exception {
        Class<?> exit;
        try {
            exit = Class.forName("org.apache.kafka.common.utils.internals.Exit");
        } catch (ClassNotFoundException e) {
            exit = Class.forName("org.apache.kafka.common.utils.Exit");
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object throwing = java.lang.reflect.Proxy.newProxyInstance(
            procedure.getClassLoader(), new Class<?>[] {procedure}, (proxy, method, margs) -> {
                if (method.getDeclaringClass() == Object.class) {
                    return method.getName().equals("hashCode") ? System.identityHashCode(proxy)
                        : method.getName().equals("equals") ? proxy == margs[0] : "ExitProcedure";
                }
                Object message = margs.length > 1 ? margs[1] : null;
                throw new IllegalStateException("Exit.exit(" + margs[0] + ")"
                    + (message == null ? "" : ": " + message));
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, throwing);
    }
}
