#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tcpfwd LISTEN_ADDR TO_HOST TO_PORT - forward every TCP connection made
to LISTEN_ADDR (port 0: one the kernel picks, printed on the first line of
standard output) to TO_HOST:TO_PORT, both ways, until its parent process
ends.

The scale-out tests run each rank in a network namespace of its own; the
launcher's PMIx server listens on 127.0.0.1 of the first namespace only,
so each rank's wrapper (test/lib/in_netns.sh) reaches it through one of
these, listening on the bridge's address."""
import os
import selectors
import socket
import sys


def main():
    listen, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    parent = os.getppid()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((listen, 0))
    srv.listen(64)
    print(srv.getsockname()[1], flush=True)
    sys.stdout.close()
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    peer = {}
    while os.getppid() == parent:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            if s is srv:
                c, _ = srv.accept()
                try:
                    u = socket.create_connection((host, port), timeout=5)
                except OSError:
                    c.close()
                    continue
                for a, b in ((c, u), (u, c)):
                    peer[a] = b
                    sel.register(a, selectors.EVENT_READ)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b''
            other = peer.get(s)
            if data and other:
                try:
                    other.sendall(data)
                    continue
                except OSError:
                    pass
            for x in (s, other):
                if x in peer:
                    sel.unregister(x)
                    peer.pop(x, None)
                    x.close()


if __name__ == '__main__':
    main()
