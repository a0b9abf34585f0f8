"""A ZooKeeper writer for the tests, as a real application's client: kazoo
(Debian's python3-kazoo) with SASL GSSAPI through pure-sasl and pykerberos,
so that it authenticates with its own Kerberos ticket (KRB5_CLIENT_KTNAME,
KRB5CCNAME, KRB5_CONFIG from its environment).

Usage: kazoo_writer.py HOSTS. Reads one JSON command per line on stdin and
answers one line, "ok" or "error: ...":
  {"op": "create", "path": P, "data": HEX, "ephemeral": B, "sequence": B,
   "acl": [[SCHEME, ID, PERMS]]}   (PERMS of "rwcda"; prints the path made)
  {"op": "delete", "path": P}
The session lives until stdin closes, so ephemeral nodes stay meanwhile.
"""

import json
import sys

from kazoo.client import KazooClient
from kazoo.security import make_acl

PERMS = {"r": "read", "w": "write", "c": "create", "d": "delete", "a": "admin"}


def acl_of(entries):
    return [
        make_acl(scheme, ident, **{PERMS[p]: True for p in perms})
        for scheme, ident, perms in entries
    ]


def main():
    zk = KazooClient(
        hosts=sys.argv[1],
        timeout=10.0,
        sasl_options={"mechanism": "GSSAPI", "service": "zookeeper"},
    )
    zk.start(timeout=30)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "create":
                made = zk.create(
                    cmd["path"],
                    bytes.fromhex(cmd.get("data", "")),
                    acl=acl_of(cmd["acl"]) if "acl" in cmd else None,
                    ephemeral=cmd.get("ephemeral", False),
                    sequence=cmd.get("sequence", False),
                )
                print("ok " + made, flush=True)
            elif cmd["op"] == "delete":
                zk.delete(cmd["path"])
                print("ok", flush=True)
            else:
                print("error: unknown op " + cmd["op"], flush=True)
        except Exception as e:  # noqa: BLE001 - the test reads the words
            print("error: %s: %s" % (type(e).__name__, e), flush=True)
    zk.stop()


if __name__ == "__main__":
    main()
