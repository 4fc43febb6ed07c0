#!/usr/bin/env python3
"""Writes rows.jsonl: the file the README's "Your own task" walk-through was
last run on, a kind of task corl does not ship (word and number answers, no
worked solutions). Deterministic: python3 make_rows.py > rows.jsonl.

Five kinds of question, mixed:
  words    "Write 347 in words."                   -> three hundred forty-seven
  weekday  "What day is 75 days after Monday?"     -> saturday
  larger   "Which is larger, 38 or 83?"            -> 83
  reverse  "Reverse the letters of stam."          -> mats
  letters  "How many letters are in kwopa?"        -> 5
1,200 rows of each, none repeated.
"""
import json
import random

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def in_words(n):
    if n >= 1000:
        k, rest = divmod(n, 1000)
        return ONES[k] + " thousand" + ("" if rest == 0 else " " + in_words(rest))
    if n >= 100:
        h, rest = divmod(n, 100)
        return ONES[h] + " hundred" + ("" if rest == 0 else " " + in_words(rest))
    if n < 20:
        return ONES[n]
    t, o = divmod(n, 10)
    return TENS[t] + ("" if o == 0 else "-" + ONES[o])


def pseudo_word(r, lo, hi):
    return "".join(r.choice(LETTERS) for _ in range(r.randint(lo, hi)))


def row(r, kind):
    if kind == "words":
        n = r.randrange(0, 3000)
        return f"Write {n} in words.", in_words(n)
    if kind == "weekday":
        d, k = r.randrange(7), r.randrange(1, 201)
        return f"What day is {k} days after {DAYS[d].capitalize()}?", DAYS[(d + k) % 7]
    if kind == "larger":
        a, b = r.sample(range(10, 100), 2)
        return f"Which is larger, {a} or {b}?", str(max(a, b))
    if kind == "reverse":
        w = pseudo_word(r, 3, 6)
        return f"Reverse the letters of {w}.", w[::-1]
    w = pseudo_word(r, 3, 9)
    return f"How many letters are in {w}?", str(len(w))


def main():
    r = random.Random(7)
    seen = set()
    for kind in ["words", "weekday", "larger", "reverse", "letters"]:
        n = 0
        while n < 1200:
            q, a = row(r, kind)
            if q not in seen:
                seen.add(q)
                n += 1
                yield {"q": q, "a": a}


rows = list(main())
random.Random(8).shuffle(rows)
for x in rows:
    print(json.dumps(x))
