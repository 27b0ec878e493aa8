"""Ways to write a non-public destination that the network policy must refuse (port P is the canary's)."""

from __future__ import annotations

import ipaddress
import socket


def refused_urls(port: int) -> list[str]:
    forms = [
        "http://127.0.0.1:{P}/",
        "https://127.0.0.1:{P}/",
        "http://localhost:{P}/",
        "http://LOCALHOST:{P}/",
        "http://localhost.:{P}/",
        "http://app.localhost:{P}/",
        "http://2130706433:{P}/",  # decimal
        "http://0x7f000001:{P}/",  # hex
        "http://0x7f.0.0.1:{P}/",  # hex octet
        "http://0177.0.0.1:{P}/",  # octal
        "http://0177.0000.0000.0001:{P}/",
        "http://127.1:{P}/",  # short forms
        "http://127.0.1:{P}/",
        "http://127.000.000.001:{P}/",
        "http://127.0.0.1.:{P}/",  # trailing dot
        "http://127.0.0.2:{P}/",
        "http://0.0.0.0:{P}/",
        "http://0:{P}/",
        "http://[::1]:{P}/",
        "http://[0:0:0:0:0:0:0:1]:{P}/",
        "http://[::ffff:127.0.0.1]:{P}/",  # IPv4-mapped
        "http://[::ffff:7f00:1]:{P}/",
        "http://[::]:{P}/",
        "http://[64:ff9b::7f00:1]:{P}/",  # NAT64 of 127.0.0.1
        "http://[2002:7f00:1::]:{P}/",  # 6to4 of 127.0.0.1
        "http://[fe80::1]:{P}/",  # link-local
        "http://[fc00::1]:{P}/",  # unique local
        "http://[ff02::1]:{P}/",  # multicast
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://0xa9fea9fe/latest/meta-data/",  # the same in hex
        "http://10.0.0.1:{P}/",
        "http://172.16.0.1:{P}/",
        "http://192.168.1.1:{P}/",
        "http://100.64.0.1:{P}/",  # CGNAT
        "http://224.0.0.1:{P}/",  # multicast
        "http://255.255.255.255:{P}/",  # broadcast
        "http://user:pass@127.0.0.1:{P}/",  # userinfo
        "http://example.com@127.0.0.1:{P}/",  # the host is what follows the @
    ]
    hostname = socket.gethostname()
    try:
        resolved = {info[4][0] for info in socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)}
    except socket.gaierror:
        resolved = set()
    if resolved and not any(ipaddress.ip_address(a).is_global for a in resolved):
        forms.append("http://" + hostname + ":{P}/")  # a DNS name that resolves to a private address
    return [form.replace("{P}", str(port)) for form in forms]


BAD_SCHEMES = ["ftp://127.0.0.1/", "file:///etc/passwd", "gopher://127.0.0.1:70/", "javascript:alert(1)"]
