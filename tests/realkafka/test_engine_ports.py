"""The real engine's listener ports (realcluster.config.free_port): reserved from the moment
they are picked until release_ports, so that no other process's bind(0) is handed one while
its JVM is starting or a broker is down between a crash and its restart; a JVM's server
socket still binds it."""

from __future__ import annotations

import socket
import subprocess

import pytest

from segtools.realcluster import config
from segtools.realcluster.kafka_runtime import find_java

# what Kafka's SocketServer does with a listener: a ServerSocketChannel with Java's defaults
_LISTENER = """
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;

public class Listen {
    public static void main(String[] args) throws Exception {
        try (ServerSocketChannel channel = ServerSocketChannel.open()) {
            channel.socket().bind(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 50);
            System.out.println("listening " + channel.socket().getLocalPort());
        }
    }
}
"""


def _bind(port: int, reuse: bool = False) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(1)


def test_a_picked_port_is_given_to_no_other_bind_until_released():
    port = config.free_port()
    try:
        handed_out = set()
        for _ in range(3000):     # the kernel's choice of free ports, as another process gets it
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", 0))
                handed_out.add(sock.getsockname()[1])
        assert port not in handed_out
        with pytest.raises(OSError):
            _bind(port)           # nor to a bind of that very port
        _bind(port, reuse=True)   # a server socket with SO_REUSEADDR, as Java's, listens on it
    finally:
        config.release_ports([port])
    _bind(port)                   # released: anyone's again


def test_a_jvm_listens_on_a_reserved_port(tmp_path):
    java = find_java()      # the Java the real engine runs Kafka with
    source = tmp_path / "Listen.java"
    source.write_text(_LISTENER)
    port = config.free_port()
    try:
        run = subprocess.run([java, str(source), str(port)], capture_output=True, text=True, timeout=120)
    finally:
        config.release_ports([port])
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["listening", str(port)]
