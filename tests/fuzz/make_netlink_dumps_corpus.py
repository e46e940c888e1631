#!/usr/bin/env python3
"""Writes the seeds of fuzz_netlink_dumps into tests/fuzz/corpus/netlink_dumps/
and those of fuzz_nfqueue_messages into tests/fuzz/corpus/nfqueue_messages/.

Each seed is one received buffer as the kernel lays it out: several
netlink messages in a row, each padded to 4 bytes, with sequence number 1
(the one the fuzzer walks them as); the queued packets are of queue 0. Run it again after changing a seed;
the constants are the Linux uapi values of the types and attributes used.
  usage: tests/fuzz/make_netlink_dumps_corpus.py
"""
import os
import struct

SEQ = 1
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLA_F_NESTED = 0x8000
SOCK_DIAG_BY_FAMILY = 20
INET_DIAG_INFO, INET_DIAG_PROTOCOL, INET_DIAG_CGROUP_ID = 2, 10, 21
TCP_INFO_MIN = 136  # tcp_info up to tcpi_bytes_received, the least the sniffer reads
CTNL_NEW, CTNL_DELETE = (1 << 8) | 0, (1 << 8) | 2  # NFNL_SUBSYS_CTNETLINK << 8 | msg
CTA_TUPLE_ORIG, CTA_COUNTERS_ORIG, CTA_COUNTERS_REPLY, CTA_ID = 1, 9, 10, 12
CTA_TUPLE_IP, CTA_TUPLE_PROTO = 1, 2
CTA_IP_V4_SRC, CTA_IP_V4_DST = 1, 2
CTA_PROTO_NUM, CTA_PROTO_SRC_PORT, CTA_PROTO_DST_PORT = 1, 2, 3
CTA_COUNTERS_PACKETS, CTA_COUNTERS_BYTES = 1, 2
RTM_NEWADDR, IFA_ADDRESS, IFA_LOCAL = 20, 1, 2
AF_INET, AF_INET6 = 2, 10
TCP, UDP = 6, 17


def pad(b):
    return b + b"\0" * (-len(b) % 4)


def attr(kind, payload):
    return pad(struct.pack("<HH", 4 + len(payload), kind) + payload)


def nest(kind, *attrs):
    return attr(kind | NLA_F_NESTED, b"".join(attrs))


def message(kind, body, seq=SEQ, flags=0):
    return pad(struct.pack("<IHHII", 16 + len(body), kind, flags, seq, 0) + body)


def inet_diag(sport, dport, proto=None, tcp=True):
    """One inet_diag_msg over IPv4 127.0.0.1, with tcp_info on TCP."""
    lo = struct.pack(">I12x", 0x7F000001)
    msg = struct.pack("<BBBB", AF_INET, 1, 0, 0)  # family, ESTABLISHED
    msg += struct.pack(">HH", sport, dport) + lo + lo
    msg += struct.pack("<III", 0, 7, 1)  # interface, cookie
    msg += struct.pack("<IIIII", 0, 0, 0, 1000, 4242)  # expires, queues, uid, inode
    attrs = b""
    if proto is not None:
        attrs += attr(INET_DIAG_PROTOCOL, bytes([proto]))
    if tcp:
        info = bytearray(TCP_INFO_MIN)
        struct.pack_into("<QQ", info, 120, 3001, 500)  # bytes_acked, bytes_received
        attrs += attr(INET_DIAG_INFO, bytes(info))
    attrs += attr(INET_DIAG_CGROUP_ID, struct.pack("<Q", 9))
    return message(SOCK_DIAG_BY_FAMILY, msg + attrs)


def conntrack(kind, proto, sport, dport, counters=False, seq=SEQ):
    tuple_ = nest(CTA_TUPLE_ORIG,
                  nest(CTA_TUPLE_IP, attr(CTA_IP_V4_SRC, struct.pack(">I", 0x0A000001)),
                       attr(CTA_IP_V4_DST, struct.pack(">I", 0x0A000002))),
                  nest(CTA_TUPLE_PROTO, attr(CTA_PROTO_NUM, bytes([proto])),
                       attr(CTA_PROTO_SRC_PORT, struct.pack(">H", sport)),
                       attr(CTA_PROTO_DST_PORT, struct.pack(">H", dport))))
    body = struct.pack("<BBH", AF_INET, 0, 0) + tuple_ + attr(CTA_ID, struct.pack(">I", 77))
    if counters:
        for which, packets, size in ((CTA_COUNTERS_ORIG, 2, 120), (CTA_COUNTERS_REPLY, 1, 300)):
            body += nest(which, attr(CTA_COUNTERS_PACKETS, struct.pack(">Q", packets)),
                         attr(CTA_COUNTERS_BYTES, struct.pack(">Q", size)))
    return message(kind, body, seq)


def address(family, raw):
    body = struct.pack("<BBBBI", family, 8 if family == AF_INET else 64, 0, 0, 1)
    return message(RTM_NEWADDR, body + attr(IFA_ADDRESS, raw) + attr(IFA_LOCAL, raw))


def done(seq=SEQ):
    return message(NLMSG_DONE, struct.pack("<i", 0), seq)


def error(errno, seq=SEQ):
    request = struct.pack("<IHHII", 16, SOCK_DIAG_BY_FAMILY, 1, seq, 0)
    return message(NLMSG_ERROR, struct.pack("<i", -errno) + request, seq)


NFQNL_MSG_PACKET = (3 << 8) | 0  # NFNL_SUBSYS_QUEUE << 8 | msg
NFQA_PACKET_HDR, NFQA_TIMESTAMP, NFQA_PAYLOAD = 1, 4, 10
NFQA_CAP_LEN, NFQA_SKB_INFO = 17, 18
NFQA_SKB_GSO = 2
STAMP_S = 1_700_000_000  # the fuzzer's receive clock, 1.7e9 s realtime


def queued_packet(packet_id, payload, cap_len=None, stamp_us=None, skb_info=None):
    """One NFQNL_MSG_PACKET of queue 0 as the kernel sends it (seq 0)."""
    body = struct.pack("<BBH", AF_INET, 0, 0)  # family, NFNETLINK_V0, res_id 0
    body += attr(NFQA_PACKET_HDR, struct.pack(">IHB", packet_id, 0x0800, 1))
    if stamp_us is not None:
        body += attr(NFQA_TIMESTAMP, struct.pack(">QQ", STAMP_S, stamp_us))
    if cap_len is not None:
        body += attr(NFQA_CAP_LEN, struct.pack(">I", cap_len))
    if skb_info is not None:
        body += attr(NFQA_SKB_INFO, struct.pack(">I", skb_info))
    body += attr(NFQA_PAYLOAD, payload)
    return message(NFQNL_MSG_PACKET, body, seq=0)


UDP_PACKET = bytes.fromhex("4500001c000140004011f6d97f0000017f000001"
                           "a4c9238200080000")  # 127.0.0.1:42185 -> :9090, empty

QUEUE_SEEDS = {
    "one_packet": queued_packet(1, UDP_PACKET),
    "stamped_gso_then_next": queued_packet(7, UDP_PACKET[:20], cap_len=1500, stamp_us=0,
                                           skb_info=NFQA_SKB_GSO)
    + queued_packet(9, UDP_PACKET),
    "verdict_error_then_packet": error(2) + queued_packet(3, UDP_PACKET),
}

SEEDS = {
    "diag_two_then_done": inet_diag(8080, 40000) + inet_diag(40000, 8080) + done(),
    "diag_record_then_error": inet_diag(8080, 40000) + error(2),  # ENOENT
    "diag_udp_ack": inet_diag(53, 40001, tcp=False) + error(0),
    "destroy_events": inet_diag(8080, 40002, proto=TCP) + inet_diag(53, 40003, UDP, tcp=False),
    "conntrack_two_then_done": conntrack(CTNL_NEW, TCP, 45000, 8080)
    + conntrack(CTNL_DELETE, UDP, 40000, 53, counters=True) + done(),
    "conntrack_late_ack_then_entry": conntrack(CTNL_NEW, TCP, 1, 2, seq=SEQ + 1)
    + error(0) + conntrack(CTNL_NEW, UDP, 3, 4),
    "addresses_then_done": address(AF_INET, struct.pack(">I", 0x0A000001))
    + address(AF_INET6, bytes(15) + b"\1") + done(),
}


def write(folder, seeds):
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", folder)
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


def main():
    write("netlink_dumps", SEEDS)
    write("nfqueue_messages", QUEUE_SEEDS)


if __name__ == "__main__":
    main()
