#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target under corpus/<target>/: small real
examples (the import fixtures, events of the skein export, raw requests, API calls).
Run from anywhere; it rewrites only the files it names."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tools", "fixtures")


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def json_codec():
    for i, line in enumerate(fixture("skein.jsonl").splitlines()):
        write("json_codec", "skein_line_%d" % i, line)
    write("json_codec", "agent", '{"v":1,"id":"coder","system_prompt":"Be brief.","engine":"scripted",'
          '"engine_config":{"default":{"reply":"ok"}},"tools":["clock"],"policy":"reject",'
          '"budgets":{"ticks_max":4,"run_time_ms_max":1000,"engine_idle_ms":500,"tool_timeout_ms":100},"created_at":1}')
    write("json_codec", "compaction", '{"seq":9,"ts":1,"run":"r","type":"compaction","payload":{"strategy":"trim-tool-results",'
          '"from_seq":1,"to_seq":8,"events":[{"seq":1,"ts":0,"run":"","type":"message","payload":{"role":"user","text":"x"}}]}}')
    write("json_codec", "unicode", '{"seq":1,"ts":0,"run":"","type":"message","payload":{"role":"user","text":"\\u00fc\\ud83d\\ude42 \xc3\xbc"}}')
    write("json_codec", "numbers", '[1,-0,2.5e300,1e-300,18446744073709551615,-9223372036854775808,true,null,{"a":[]}]')


def key_codec():
    def event_key(thread, seq):
        return thread + b"\0" + struct.pack(">Q", seq)
    write("key_codec", "event_key", event_key(b"th_20250301_0123456789ab", 7))
    write("key_codec", "event_key_max", event_key(b"t", 2**64 - 1))
    write("key_codec", "index_key", b"a/coder/th_1")
    write("key_codec", "usage_key", struct.pack(">Q", 1740823200000) + b"t1\0" + struct.pack(">Q", 3))


def imports():
    pairs = {"skein": "skein.jsonl", "opennova": "opennova.jsonl", "lace": "lace.jsonl", "gitmem": "gitmem_threads.json"}
    for fmt, name in pairs.items():
        body = fixture(name)
        write("import_" + fmt, name, body)
        write("import_auto", name, body)
        lines = body.splitlines(keepends=True)
        if len(lines) > 2:  # a torn last line
            write("import_" + fmt, "torn_" + name, b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    write("import_gitmem", "array", '["one item", {"id":"t-9","text":"two","status":"done"}]')
    write("import_lace", "two_threads", '{"type":"USER_MESSAGE","data":"a","timestamp":1,"threadId":"x"}\n'
          '{"type":"AGENT_MESSAGE","data":"b","timestamp":"2025-03-01","threadId":"y"}\n')


def http_parse():
    write("http_parse", "post_entry", "POST /v1/threads/t1/entries?wait=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          "Authorization: Bearer abcdefghijklmnop\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n"
          '{"text":"hi"}')
    write("http_parse", "chunked", "POST /v1/import?format=lace&agent=a%20b HTTP/1.1\r\nHost: x\r\n"
          "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    write("http_parse", "stream", "GET /v1/threads/t%2F1/stream?from_seq=3 HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 7\r\n\r\n")
    write("http_parse", "http10", "GET /healthz HTTP/1.0\r\n\r\n")


class api_input:
    """Mirrors fuzz_input.hpp: strings from the front (ended by backslash + another
    byte), fixed-width values from the back, the body in between."""

    def __init__(self):
        self.front, self.back = b"", []

    def string(self, s):
        self.front += s.encode().replace(b"\\", b"\\\\") + b"\\ "

    def byte(self, v):
        self.back.append(v)

    def data(self, body=""):
        return self.front + body.encode() + bytes(reversed(self.back))


METHODS = ["GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS"]
COLLECTIONS = ["threads", "agents", "import", "prune", "metrics", "healthz"]
ACTIONS = ["entries", "stream", "cancel", "fork", "diagnose", "reconcile", "export", ""]
WHO = ["none", "admin", "scoped", "foreign", "garbage"]
THREAD = {None: 0, "fz": 1, "other": 2}


def api_call(name, method, collection, thread=None, action="", query=None, who="admin", body="",
             last_event_id=None, idempotency_key=None):
    x = api_input()
    x.byte(1)                             # a known method
    x.byte(METHODS.index(method))
    x.byte(0)                             # a built target
    x.byte(COLLECTIONS.index(collection))
    if collection not in ("metrics", "healthz"):
        x.byte(THREAD[thread])
        x.byte(ACTIONS.index(action))
        x.byte(1 if query else 0)
        if query:
            x.string(query)
    x.byte(WHO.index(who))
    if who == "garbage":
        x.string("Bearer not-a-token-at-all")
    x.byte(1 if last_event_id is not None else 0)
    if last_event_id is not None:
        x.string(last_event_id)
    x.byte(1 if idempotency_key is not None else 0)
    if idempotency_key is not None:
        x.string(idempotency_key)
    x.byte(1)                             # an honest Content-Length
    write("http_api", name, x.data(body))


def http_api():
    api_call("healthz", "GET", "healthz", who="none")
    api_call("metrics", "GET", "metrics")
    api_call("create_agent", "POST", "agents", body='{"id":"a2","system_prompt":"p","engine_config":{"default":{"reply":"hi"}}}')
    api_call("list_agents", "GET", "agents", who="scoped")
    api_call("create_thread", "POST", "threads", who="scoped", body='{"agent_id":"fz","title":"t","tags":["x"]}')
    api_call("list_threads", "GET", "threads", query="agent=fz&limit=5", who="scoped")
    api_call("post_entry", "POST", "threads", "fz", "entries", who="scoped", body='{"text":"hi"}', idempotency_key="k1")
    api_call("post_entry_wait", "POST", "threads", "fz", "entries", body='{"text":"hi","wait":true,"role":"system"}')
    api_call("list_entries", "GET", "threads", "fz", "entries", query="from_seq=1&limit=10&view=working", who="scoped")
    api_call("stream", "GET", "threads", "fz", "stream", last_event_id="1")
    api_call("cancel", "POST", "threads", "fz", "cancel", who="scoped")
    api_call("fork", "POST", "threads", "fz", "fork", body='{"at_seq":1}')
    api_call("diagnose", "GET", "threads", "fz", "diagnose")
    api_call("reconcile", "POST", "threads", "fz", "reconcile")
    api_call("export", "GET", "threads", "fz", "export", who="scoped")
    api_call("delete_foreign", "DELETE", "threads", "fz", who="foreign")
    api_call("get_foreign", "GET", "threads", "fz", who="foreign")
    api_call("get_garbage", "GET", "threads", "fz", who="garbage")
    api_call("prune", "POST", "prune")
    skein_body = fixture("skein.jsonl").decode().replace('"agent_id":"coder"', '"agent_id":"fz"')
    api_call("import_skein", "POST", "import", query="format=skein", who="scoped", body=skein_body)
    api_call("import_lace", "POST", "import", query="format=lace&agent=fz", body=fixture("lace.jsonl").decode())


if __name__ == "__main__":
    json_codec()
    key_codec()
    imports()
    http_parse()
    http_api()
