// Package generate samples completions from a model: batched decoding over a
// KV cache with continuous batching (a finished sequence's slot takes the next
// prompt), temperature, top-k and top-p sampling, stop strings and EOS, one
// seed per request, and the log-probability of every sampled token, which the
// policy update needs.
package generate
