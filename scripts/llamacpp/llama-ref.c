// llama-ref runs llama.cpp for `corl bench llamacpp`: the prebuilt library
// that node-llama-cpp 3.21.1 ships (make bench-llamacpp installs the pinned
// package and builds this against that library and the headers of the same
// llama.cpp release, bundled in the package), called directly so that no
// JavaScript sits between the benchmark and the library. It reads requests
// on stdin, one a line, a prompt a line after the request ("L t1 ... tL"):
//
//	load PATH
//	    -> "ok V"                        the model (float32 GGUF), vocabulary V
//	check K N, then N prompts
//	    -> for each prompt, "probs p0 .. pV-1" (the next-token distribution
//	       after it, temperature 1) and "greedy g1 .. gK" (K greedy tokens)
//	time NEW THREADS KV FLASH WARMUP B, then B prompts
//	    -> "TOKENS SECONDS": every prompt decoded together, one sequence
//	       each, sampling (temperature 1, untruncated, as llama.cpp's dist
//	       sampler draws) NEW tokens after each, EOS or not (a sequence
//	       ended early would leave the prefill's time over fewer tokens).
//	       KV is f32 or f16 (the cache), FLASH 0 or 1 (flash attention),
//	       WARMUP untimed runs first. The context is kept while the next
//	       request asks for the same one.
//
// Errors are "error MESSAGE" lines.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static struct llama_model *model;
static int n_vocab;

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool silent_progress(float progress, void *data) {
	(void)progress, (void)data;
	return true;
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void free_prompts(int n, llama_token **prompts);

// read_prompts reads n prompt lines into prompts (lengths in lens) and
// returns the longest length; on a bad line it frees what it read and
// returns -1.
static int read_prompts(int n, llama_token **prompts, int *lens) {
	int longest = 0;
	for (int i = 0; i < n; i++) {
		if (scanf("%d", &lens[i]) != 1 || lens[i] < 1) {
			free_prompts(i, prompts);
			return -1;
		}
		prompts[i] = malloc(sizeof(llama_token) * lens[i]);
		for (int j = 0; j < lens[i]; j++)
			if (scanf("%d", &prompts[i][j]) != 1 || prompts[i][j] < 0 || prompts[i][j] >= n_vocab) {
				free_prompts(i + 1, prompts);
				return -1;
			}
		longest = lens[i] > longest ? lens[i] : longest;
	}
	return longest;
}

static void free_prompts(int n, llama_token **prompts) {
	for (int i = 0; i < n; i++) free(prompts[i]);
}

static struct llama_context *new_context(int seqs, int per_seq, int threads, enum ggml_type kv, int flash) {
	struct llama_context_params cp = llama_context_default_params();
	cp.n_seq_max = seqs;
	cp.kv_unified = false; // each sequence its own cache, attention over it alone
	cp.n_ctx = (uint32_t)seqs * per_seq;
	cp.n_batch = cp.n_ubatch = 512;
	cp.n_threads = cp.n_threads_batch = threads;
	cp.type_k = cp.type_v = kv;
	cp.flash_attn_type = flash ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
	cp.no_perf = true;
	return llama_init_from_model(model, cp);
}

// add appends one token of sequence seq at pos to the batch.
static void add(struct llama_batch *b, llama_token t, int pos, int seq, int logits) {
	int i = b->n_tokens++;
	b->token[i] = t;
	b->pos[i] = pos;
	b->n_seq_id[i] = 1;
	b->seq_id[i][0] = seq;
	b->logits[i] = logits;
}

// prefill decodes every prompt but its last token, 512 tokens a call.
static int prefill(struct llama_context *ctx, struct llama_batch *b, int n, llama_token **prompts, int *lens) {
	b->n_tokens = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < lens[i] - 1; j++) {
			add(b, prompts[i][j], j, i, 0);
			if (b->n_tokens == 512) {
				if (llama_decode(ctx, *b)) return -1;
				b->n_tokens = 0;
			}
		}
	if (b->n_tokens > 0 && llama_decode(ctx, *b)) return -1;
	return 0;
}

static void check(int k, int n) {
	llama_token *prompts[n];
	int lens[n];
	int longest = read_prompts(n, prompts, lens);
	if (longest < 0) {
		printf("error check: bad prompt\n");
		return;
	}
	struct llama_context *ctx = new_context(1, longest + k, 1, GGML_TYPE_F32, 0);
	struct llama_batch b = llama_batch_init(512, 0, 1);
	for (int i = 0; i < n; i++) {
		llama_memory_clear(llama_get_memory(ctx), true);
		if (prefill(ctx, &b, 1, &prompts[i], &lens[i])) goto fail;
		llama_token t = prompts[i][lens[i] - 1];
		llama_token greedy[k];
		for (int s = 0; s < k; s++) {
			b.n_tokens = 0;
			add(&b, t, lens[i] - 1 + s, 0, 1);
			if (llama_decode(ctx, b)) goto fail;
			const float *lg = llama_get_logits_ith(ctx, -1);
			int best = 0;
			for (int v = 1; v < n_vocab; v++)
				if (lg[v] > lg[best]) best = v;
			if (s == 0) {
				double hi = lg[best], sum = 0;
				for (int v = 0; v < n_vocab; v++) sum += exp(lg[v] - hi);
				printf("probs");
				for (int v = 0; v < n_vocab; v++) printf(" %.9g", exp(lg[v] - hi) / sum);
				printf("\n");
			}
			greedy[s] = t = best;
		}
		printf("greedy");
		for (int s = 0; s < k; s++) printf(" %d", greedy[s]);
		printf("\n");
	}
	llama_batch_free(b);
	llama_free(ctx);
	free_prompts(n, prompts);
	return;
fail:
	printf("error check: llama_decode failed\n");
	llama_batch_free(b);
	llama_free(ctx);
	free_prompts(n, prompts);
}

// timed is the context of the last time request.
static struct {
	struct llama_context *ctx;
	int seqs, per_seq, threads, flash;
	enum ggml_type kv;
} timed;

// sample runs one decode of every prompt and returns the tokens generated,
// -1 on a failed decode.
static long sample(int n, llama_token **prompts, int *lens, int new_tokens, struct llama_sampler **smpl) {
	struct llama_context *ctx = timed.ctx;
	llama_memory_clear(llama_get_memory(ctx), true);
	struct llama_batch b = llama_batch_init(n > 512 ? n : 512, 0, 1);
	long tokens = 0;
	int pos[n], done[n], made[n];
	llama_token last[n];
	if (prefill(ctx, &b, n, prompts, lens)) goto fail;
	for (int i = 0; i < n; i++) {
		pos[i] = lens[i] - 1;
		last[i] = prompts[i][lens[i] - 1];
		done[i] = made[i] = 0;
	}
	for (;;) {
		b.n_tokens = 0;
		int row[n];
		for (int i = 0; i < n; i++)
			if (!done[i]) {
				row[i] = b.n_tokens;
				add(&b, last[i], pos[i]++, i, 1);
			}
		if (b.n_tokens == 0) break;
		if (llama_decode(ctx, b)) goto fail;
		for (int i = 0; i < n; i++)
			if (!done[i]) {
				llama_token t = llama_sampler_sample(smpl[i], ctx, row[i]);
				tokens++;
				last[i] = t;
				if (++made[i] == new_tokens) done[i] = 1;
			}
	}
	llama_batch_free(b);
	return tokens;
fail:
	llama_batch_free(b);
	return -1;
}

static void time_request(int new_tokens, int threads, const char *kvname, int flash, int warmup, int n) {
	llama_token *prompts[n];
	int lens[n];
	int longest = read_prompts(n, prompts, lens);
	if (longest < 0) {
		printf("error time: bad prompt\n");
		return;
	}
	enum ggml_type kv = strcmp(kvname, "f16") == 0 ? GGML_TYPE_F16 : GGML_TYPE_F32;
	if (strcmp(kvname, "f16") && strcmp(kvname, "f32")) {
		printf("error time: kv %s; want f32 or f16\n", kvname);
		free_prompts(n, prompts);
		return;
	}
	int per_seq = (longest + new_tokens + 255) / 256 * 256;
	if (!timed.ctx || timed.seqs != n || timed.per_seq != per_seq || timed.threads != threads || timed.kv != kv || timed.flash != flash) {
		if (timed.ctx) llama_free(timed.ctx);
		timed.ctx = new_context(n, per_seq, threads, kv, flash);
		timed.seqs = n, timed.per_seq = per_seq, timed.threads = threads, timed.kv = kv, timed.flash = flash;
		if (!timed.ctx) {
			printf("error time: no context\n");
			free_prompts(n, prompts);
			return;
		}
	}
	static uint32_t seed = 1;
	struct llama_sampler *smpl[n];
	for (int i = 0; i < n; i++) {
		smpl[i] = llama_sampler_chain_init(llama_sampler_chain_default_params());
		llama_sampler_chain_add(smpl[i], llama_sampler_init_dist(seed++));
	}
	long tokens = 0;
	double secs = 0;
	for (int r = 0; r <= warmup && tokens >= 0; r++) {
		double t0 = now();
		tokens = sample(n, prompts, lens, new_tokens, smpl);
		secs = now() - t0;
	}
	if (tokens < 0)
		printf("error time: llama_decode failed\n");
	else
		printf("%ld %.9f\n", tokens, secs);
	for (int i = 0; i < n; i++) llama_sampler_free(smpl[i]);
	free_prompts(n, prompts);
}

int main(void) {
	llama_log_set(quiet, NULL);
	// The CPU backends (one a CPU generation) lie beside libllama.
	Dl_info lib;
	if (!dladdr((void *)llama_backend_init, &lib) || !lib.dli_fname) {
		fprintf(stderr, "llama-ref: where libllama was loaded from is unknown\n");
		return 1;
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", lib.dli_fname);
	ggml_backend_load_all_from_path(dirname(dir));
	llama_backend_init();
	char op[16];
	while (scanf("%15s", op) == 1) {
		if (strcmp(op, "load") == 0) {
			char path[4096];
			if (scanf(" %4095[^\n]", path) != 1) break;
			struct llama_model_params mp = llama_model_default_params();
			mp.n_gpu_layers = 0;
			mp.progress_callback = silent_progress;
			model = llama_model_load_from_file(path, mp);
			if (!model) {
				printf("error load: %s does not load\n", path);
			} else {
				const struct llama_vocab *vocab = llama_model_get_vocab(model);
				n_vocab = llama_vocab_n_tokens(vocab);
				printf("ok %d\n", n_vocab);
			}
		} else if (!model) {
			printf("error %s: no model loaded\n", op);
		} else if (strcmp(op, "check") == 0) {
			int k, n;
			if (scanf("%d %d", &k, &n) != 2 || k < 1 || n < 1) break;
			check(k, n);
		} else if (strcmp(op, "time") == 0) {
			int new_tokens, threads, flash, warmup, n;
			char kv[8];
			if (scanf("%d %d %7s %d %d %d", &new_tokens, &threads, kv, &flash, &warmup, &n) != 6 || n < 1) break;
			time_request(new_tokens, threads, kv, flash, warmup, n);
		} else {
			printf("error %s: want load, check or time\n", op);
			break;
		}
		fflush(stdout);
	}
	if (timed.ctx) llama_free(timed.ctx);
	if (model) llama_model_free(model);
	return 0;
}
