// The conformance corpus: hand-picked strings that exercise each part of a
// tokenizer (whitespace of every kind, Unicode normal forms, scripts,
// digits, contractions, code, special tokens inside text, long inputs), and
// strings drawn from those fragments by a seeded generator. Deterministic:
// the same list every run.
"use strict";

const fixed = [
  "", " ", "  ", "\n", "\n\n", "\t", " \t\n ", "a", "A", "Hello world", "Hello  world", "Hello   world  ",
  " leading space", "trailing space ", "  two leading", "tabs\tinside\ttext", "line one\nline two\n\nline four",
  "windows\r\nline\r\nends", "mac\rline", "What's the answer? It's 42.", "I'LL SAY IT'S FINE, WE'VE SEEN IT'D WORK",
  "don't can't won't shouldn't y'all", "rock 'n' roll", "'quoted' and \"double\"",
  "12345678901234567890", "3.14159 2.71828 1,000,000 -17 +5 1e10 0x1F", "Compute 765+11.", "x^2 - 4x + 4 = 0",
  "The answer is 776.", "What is (2*11+3) mod 6?", "Solve for x: 6x+18=72.",
  "caf\u00e9 cafe\u0301", "na\u00efve co\u00f6perate r\u00e9sum\u00e9", "\u00c5ngstr\u00f6m \u212bngstr\u00f6m",
  "\ufb01ne \ufb02ow", "\u2460\u2461\u2462 \u00bd \u00b2", "Stra\u00dfe STRASSE", "\u0130stanbul \u0131",
  "non\u00a0breaking\u00a0space", "en\u2002em\u2003thin\u2009hair\u200a", "narrow\u202fno-break", "ideographic\u3000space",
  "zero\u200bwidth\u200cjoin\u200d", "a \u00a0b", "x\u3000\u3000y", " \u2003 leading em",
  "\u4f60\u597d\uff0c\u4e16\u754c\uff01", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
  "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!", "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
  "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645", "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
  "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
  "emoji \ud83d\ude00\ud83d\ude80 \ud83d\udc4d\ud83c\udffd family \ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67",
  "flags \ud83c\uddfa\ud83c\uddf8\ud83c\uddef\ud83c\uddf5", "math \u2200x\u2208\u211d: x\u00b2\u22650 \u222b\u2211\u221a",
  "func main() {\n\tfmt.Println(\"hi\")\n}\n", "def f(x):\n    return x ** 2  # square\n",
  "    four spaces\n        eight spaces", "if (a && b || !c) { x += 1; }", "SELECT * FROM t WHERE id=1;",
  "https://example.com/path?q=1&r=two#frag", "user@example.org", "C:\\Users\\name\\file.txt",
  "<html><body class=\"x\">text</body></html>", "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "----====____****", "!!!???...", "a.b.c", "...ellipsis\u2026", "\u201csmart quotes\u201d \u2018single\u2019",
  "em\u2014dash en\u2013dash", "<|endoftext|>", "before<|endoftext|>after", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
  "<s>hello</s>", "text <s> with </s> tags", "<bos>x<eos>", "<start_of_turn>user\nhello<end_of_turn>",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<unk>", "<pad> <mask>",
  "<tool_call>{}</tool_call>", "not a <|special|> token", "<|endoftext", "endoftext|>",
  "\u2581already metaspace\u2581", "\u2581\u2581", "low_line_", "ALLCAPSWORD", "MiXeD CaSe WoRdS",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abababababababababababab", "   \n   \n   ", "a\n\n\n\nb",
  "word\u00a0\u00a0word", "1 2  3   4", "100%", "$5.00 \u20ac10 \u00a320 \u00a5300", "#hashtag @mention",
];

// Fragments the generator joins.
const words = ["the", "The", "answer", "is", "don't", "I've", "cat", "caf\u00e9", "na\u00efve", "\u4e16\u754c", "\u043c\u0438\u0440",
  "\ud83d\ude00", "42", "3.5", "-7", "x+y", "f(x)", "<|endoftext|>", "<s>", "</s>", "<eos>", "\u00a0", "\u3000", "\t", "\n",
  "\r\n", "  ", "   ", "?", "!", ",", ".", "...", "'s", "'LL", "\u2581", "ABC", "xyz", "1234567", "\u0301", "e\u0301",
  "\u212b", "\ufb01", "\u05e9\u05dc\u05d5\u05dd", "\u0928\u092e", "Stra\u00dfe", "http://a.b/c", "a_b", "\u2014"];

function rng(seed) { // mulberry32
  return function () {
    seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generated(n, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < n; i++) {
    const len = 1 + Math.floor(r() * 12);
    let s = "";
    for (let j = 0; j < len; j++) {
      s += words[Math.floor(r() * words.length)];
      const sep = r();
      s += sep < 0.6 ? " " : sep < 0.75 ? "" : sep < 0.85 ? "  " : sep < 0.92 ? "\n" : "\u00a0";
    }
    out.push(s);
  }
  return out;
}

// Long inputs: whole paragraphs, where merge cost and whole-document
// pre-tokenization (Metaspace without split) show.
function long(seed) {
  const r = rng(seed);
  const para = [];
  for (const n of [500, 2000, 8000]) {
    let s = "";
    while (s.length < n) {
      s += words[Math.floor(r() * 17)] + (r() < 0.9 ? " " : "\n");
    }
    para.push(s);
  }
  return para;
}

module.exports = fixed.concat(generated(200, 7), long(11));

// large is the bigger corpus (about 1 MB): lines drawn from all of the
// above, and more generated ones, one string per line (newlines inside
// a string written as spaces, so that lines and strings agree).
module.exports.large = function () {
  const r = rng(3);
  const pool = module.exports.concat(generated(2000, 13));
  const out = [];
  let n = 0;
  while (n < 1 << 20) {
    const s = pool[Math.floor(r() * pool.length)].replace(/[\r\n]/g, " ");
    out.push(s);
    n += s.length + 1;
  }
  return out;
};
