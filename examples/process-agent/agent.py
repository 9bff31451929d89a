#!/usr/bin/env python3
"""A skein agent behind the `process` engine: JSON lines on stdin and stdout.

skein sends {"type":"call",...} and {"type":"cancel",...} lines; this program
answers each call with a few deltas and one step. It answers in order, one call
at a time; a real agent would call its model here (and could answer many calls
at once: replies are matched by id). Its stderr goes to skein's log.

Replies:
  a run     "You said: <the last user message>", streamed word by word; if the
            agent offers a tool named "clock" and the user asks for the time, it
            calls the tool first and answers with its output
  a title   the first five words of the first user message
  a summary the user messages, joined
"""
import json
import sys


def user_texts(conversation):
    return [e["payload"]["text"] for e in conversation
            if e.get("type") == "message" and e["payload"].get("role") == "user"]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(call):
    cid = call["id"]
    conversation = call.get("conversation", [])
    users = user_texts(conversation)
    last = users[-1] if users else ""
    if call.get("purpose") == "title":
        return send({"id": cid, "type": "step", "text": " ".join((users or [""])[0].split()[:5])})
    if call.get("purpose") == "summary":
        return send({"id": cid, "type": "step", "text": " / ".join(users)})
    tools = [t["name"] for t in call.get("tools", [])]
    last_event = conversation[-1] if conversation else {}
    if last_event.get("type") == "tool_result":
        return send({"id": cid, "type": "step", "text": "The clock says " + last_event["payload"]["output"]})
    if "clock" in tools and "time" in last:
        return send({"id": cid, "type": "step",
                     "tool_calls": [{"id": "clock-" + cid, "name": "clock", "arguments": {}}]})
    text = "You said: " + last
    for i, word in enumerate(text.split(" ")):
        send({"id": cid, "type": "delta", "text": word if i == 0 else " " + word})
    send({"id": cid, "type": "step", "text": text,
          "usage": {"input_tokens": sum(len(u) for u in users) // 4 + 1, "output_tokens": len(text) // 4 + 1},
          "session_id": "example-" + call.get("thread_id", "")})


def main():
    print("example agent started", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            print("not JSON: " + line[:80], file=sys.stderr, flush=True)
            continue
        if msg.get("type") == "call":
            try:
                answer(msg)
            except Exception as e:  # a bad call fails alone, the program lives on
                send({"id": msg.get("id", ""), "type": "error", "message": "example agent: %s" % e})
        # A cancel needs nothing here: calls are answered at once.


if __name__ == "__main__":
    main()
