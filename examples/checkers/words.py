#!/usr/bin/env python3
"""A corl answer checker for word answers (see the checker package doc).

Reads {"id", "prompt", "response", "answer"?} lines on stdin and writes one
line per row: the answer key is the response's last line after "answer:"
(or its last word), lowercased, with articles and punctuation dropped, so
"The answer is: The Moon." and "moon" vote together; "correct" is given
when the row has a label.
"""
import json
import re
import sys

ARTICLES = {"a", "an", "the"}


def key(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    if not lines:
        return None
    last = lines[-1]
    m = re.search(r"answer\s*(?:is)?\s*:?\s*(.+)$", last, re.IGNORECASE)
    words = re.findall(r"[a-z0-9]+", (m.group(1) if m else last).lower())
    words = [w for w in words if w not in ARTICLES]
    if not words:
        return None
    return " ".join(words if m else words[-1:])


for line in sys.stdin:
    row = json.loads(line)
    k = key(row["response"])
    out = {"id": row["id"], "answer_key": k}
    if "answer" in row:
        out["correct"] = k is not None and k == key(row["answer"])
    print(json.dumps(out), flush=False)
