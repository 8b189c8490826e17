#!/usr/bin/env python3
"""The A records CoreDNS answers for one name, as `IP TTL` lines (TTL in
seconds, as the answer carries it): the real node's smoke test reads the TTL
to tell a cached answer (its TTL counts down) from a fresh one (the
`kubernetes` plugin's `ttl` every time). One UDP query (RFC 1035), no
recursion asked; the host has no dig, and Python's resolver hides the TTL.

    dev/real-node/dns-answer.py NAME [SERVER]     SERVER default 10.244.0.1

Exit 0 with one line per A record; 1 on NXDOMAIN, another error code, no A
record, a timeout (2 s) or an answer that does not parse (message on stderr).
Reads nothing else and writes nothing else.
"""

import random
import socket
import struct
import sys


def encode_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        raw = label.encode("ascii")
        if not 0 < len(raw) < 64:
            raise ValueError(f"bad label {label!r} in {name!r}")
        out += bytes([len(raw)]) + raw
    return out + b"\0"


def skip_name(data, off):
    """Offset just past the (possibly compressed) name at `off`."""
    while True:
        length = data[off]
        if length == 0:
            return off + 1
        if length & 0xC0 == 0xC0:
            return off + 2
        off += length + 1


def query(name, server):
    tid = random.randint(0, 0xFFFF)
    packet = struct.pack(">HHHHHH", tid, 0, 1, 0, 0, 0) + encode_name(name)
    packet += struct.pack(">HH", 1, 1)  # QTYPE A, QCLASS IN
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(packet, (server, 53))
        while True:
            data, _ = s.recvfrom(4096)
            if len(data) >= 12 and struct.unpack(">H", data[:2])[0] == tid:
                break
    _, flags, qdcount, ancount, _, _ = struct.unpack(">HHHHHH", data[:12])
    rcode = flags & 0xF
    if rcode != 0:
        raise LookupError(f"{name}: rcode {rcode}" + (" (NXDOMAIN)" if rcode == 3 else ""))
    off = 12
    for _ in range(qdcount):
        off = skip_name(data, off) + 4
    records = []
    for _ in range(ancount):
        off = skip_name(data, off)
        rtype, _, ttl, rdlength = struct.unpack(">HHIH", data[off:off + 10])
        off += 10
        if rtype == 1 and rdlength == 4:
            records.append((socket.inet_ntoa(data[off:off + 4]), ttl))
        off += rdlength
    if not records:
        raise LookupError(f"{name}: no A record in the answer")
    return records


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: dns-answer.py NAME [SERVER]", file=sys.stderr)
        return 1
    server = sys.argv[2] if len(sys.argv) == 3 else "10.244.0.1"
    try:
        records = query(sys.argv[1], server)
    except (OSError, LookupError, ValueError, struct.error, IndexError) as e:
        print(f"dns-answer: {e}", file=sys.stderr)
        return 1
    for ip, ttl in records:
        print(ip, ttl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
