/*
 * prompt.c - the prompt's bound: what the upstream may bill for a request's
 * prompt - its text (every member of every message, the tools and schemas)
 * as bytes, and its images at the provider's token price - for the budget's
 * reservation (admit.c) and the candidates' max_input_tokens (route.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "provider_internal.h"

/* Images at the provider's documented token price. OpenAI bills an image
 * by tiles (base + per 512 px tile after fitting 2048 x 2048 and scaling the
 * short side to 768; "low" detail: the base alone) or, for some models, by
 * 32 px patches (at most 1536) times a multiplier. Without dimensions (a URL
 * the gateway does not fetch, a format it does not read) an image is priced
 * at the most one image can cost: 8 tiles, or 1536 patches. A model not
 * listed here cannot be priced: the request is refused (E-BUDGET-005). */
typedef struct {
	const char *prefix;
	int patches; /* 0: tiles, 1: 32 px patches, 2: pixels / 750 (Anthropic) */
	double base, tile, mult;
} image_price;

static const image_price image_prices[] = {
	/* longer prefixes first */
	{"gpt-4o-mini", 0, 2833, 5667, 0},
	{"gpt-4.1-mini", 1, 0, 0, 1.62},
	{"gpt-4.1-nano", 1, 0, 0, 2.46},
	{"o4-mini", 1, 0, 0, 1.72},
	{"gpt-4o", 0, 85, 170, 0},
	{"gpt-4.1", 0, 85, 170, 0},
	{"gpt-4-turbo", 0, 85, 170, 0},
	{"gpt-4.5", 0, 85, 170, 0},
	{"o1", 0, 75, 150, 0},
	{"o3", 0, 75, 150, 0},
	/* Anthropic: width x height / 750 tokens, at most 1600 (larger
	 * images are scaled down to about 1.15 megapixels first) */
	{"claude", 2, 0, 0, 0},
	{NULL, 0, 0, 0, 0}};

static const image_price *image_price_of(const char *model)
{
	for (int i = 0; image_prices[i].prefix; i++)
		if (!strncmp(model, image_prices[i].prefix, strlen(image_prices[i].prefix)))
			return &image_prices[i];
	return NULL;
}

/* Decodes the first bytes of base64 text (stops at the first non-base64
 * character); returns how many bytes it wrote. */
static size_t b64_head(const char *s, unsigned char *out, size_t max)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;
	unsigned v = 0;
	int bits = 0;
	for (; *s && n < max; s++) {
		const char *p = strchr(tab, *s);
		if (!p || !*s)
			break;
		v = (v << 6) | (unsigned)(p - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(v >> bits);
		}
	}
	return n;
}

/* The dimensions of a base64 data URL's PNG or GIF (0: unknown). */
static void image_dims(const char *url, long *w, long *h)
{
	*w = *h = 0;
	const char *b = strncmp(url, "data:", 5) ? NULL : strstr(url, ";base64,");
	if (!b)
		return;
	unsigned char d[32];
	size_t n = b64_head(b + 8, d, sizeof d);
	if (n >= 24 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8) && !memcmp(d + 12, "IHDR", 4)) {
		*w = (long)d[16] << 24 | (long)d[17] << 16 | (long)d[18] << 8 | d[19];
		*h = (long)d[20] << 24 | (long)d[21] << 16 | (long)d[22] << 8 | d[23];
	} else if (n >= 10 && !memcmp(d, "GIF8", 4)) {
		*w = d[6] | (long)d[7] << 8;
		*h = d[8] | (long)d[9] << 8;
	}
	if (*w <= 0 || *h <= 0 || *w > 100000 || *h > 100000)
		*w = *h = 0;
}

static long long image_cost(const image_price *p, long w, long h, int low)
{
	if (p->patches == 2) {
		double t = w && h ? ceil((double)w * (double)h / 750) : 1600;
		return (long long)(t > 1600 ? 1600 : t);
	}
	if (p->patches) {
		double patches = 1536;
		if (w && h) {
			double pw = ceil((double)w / 32), ph = ceil((double)h / 32);
			patches = pw * ph > 1536 ? 1536 : pw * ph;
		}
		return (long long)ceil(patches * p->mult);
	}
	if (low)
		return (long long)p->base;
	double tiles = 8; /* 2048 x 768: the most tiles an image can take */
	if (w && h) {
		double fw = (double)w, fh = (double)h;
		if (fw > 2048 || fh > 2048) { /* fit in 2048 x 2048 */
			double k = 2048 / (fw > fh ? fw : fh);
			fw *= k, fh *= k;
		}
		double shortest = fw < fh ? fw : fh;
		if (shortest > 768) /* the short side to 768 */
			fw *= 768 / shortest, fh *= 768 / shortest;
		tiles = ceil(fw / 512) * ceil(fh / 512);
	}
	return (long long)(p->base + p->tile * tiles);
}

/* An image part's tokens at the dearest of the call's models; -1 when one
 * of them cannot be priced. */
static long long image_tokens(const aw_llm_call *c, const json_t *part)
{
	json_t *iu = json_object_get(part, "image_url");
	const char *url = json_string_value(json_object_get(iu, "url"));
	const char *detail = json_string_value(json_object_get(iu, "detail"));
	long w, h;
	image_dims(url ? url : "", &w, &h);
	long long most = 0;
	for (int i = 0; i < c->nt; i++) {
		const image_price *p = image_price_of(c->t[i].model);
		if (!p)
			return -1;
		long long v = image_cost(p, w, h, detail && !strcmp(detail, "low"));
		most = v > most ? v : most;
	}
	return most;
}

static long long json_bytes(const json_t *v)
{
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v))
		return (long long)json_string_length(v);
	char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	long long n = d ? (long long)strlen(d) : 0;
	free(d);
	return n;
}

/* The request's prompt, as the upstream bills it, in two parts: *bytes, the
 * text - every member of every message (text parts, names, tool calls and
 * their arguments, legacy function calls), 8 per message for the chat
 * template, and the request's tools, functions, tool_choice, function_call
 * and response_format (its schema) as JSON - an upper bound of its tokens
 * for the byte-level BPE tokenizers models use (a token is at least one
 * byte); *images, the images' tokens at the provider's price. AW_E_BUDGET_
 * UNPRICED when an image goes to a model the budget cannot price. */
aw_err llm_prompt_bound(const aw_llm_call *c, const json_t *req, long long *bytes,
			long long *images, aw_error *err)
{
	static const char *const billed[] = {"tools",	      "functions",	 "tool_choice",
					     "function_call", "response_format", NULL};
	if (c->rq.embeddings) { /* no template, no images: the inputs */
		*bytes = aw_llm_embed_bound(req);
		*images = 0;
		return AW_OK;
	}
	long long n = 0, img = 0;
	size_t i, k;
	json_t *m, *part, *v;
	const char *key;
	json_array_foreach (json_object_get(req, "messages"), i, m) {
		n += 8;
		json_object_foreach (m, key, v) {
			if (strcmp(key, "content") || !json_is_array(v)) {
				n += json_bytes(v);
				continue;
			}
			json_array_foreach (v, k, part) {
				const char *type = json_string_value(json_object_get(part, "type"));
				if (type && !strcmp(type, "image_url")) {
					long long t = image_tokens(c, part);
					if (t < 0)
						return aw_fail_at(
							err, AW_E_BUDGET_UNPRICED, "/messages",
							"an image goes to a model whose image price "
							"the budget does not know (route %s)",
							c->route);
					img += t;
				} else {
					n += json_bytes(
						json_object_get(part, type ? type : "text"));
				}
			}
		}
	}
	for (int b = 0; billed[b]; b++)
		n += json_bytes(json_object_get(req, billed[b]));
	/* an Anthropic target adds its tool-use system prompt to a prompt with
	 * tools, and asks for JSON output in the system prompt */
	int anthropic = 0;
	for (int ti = 0; ti < c->nt; ti++)
		anthropic |= c->t[ti].u->api == API_ANTHROPIC;
	if (anthropic && json_array_size(json_object_get(req, "tools")))
		n += AW_LLM_ANTHROPIC_TOOL_TOKENS;
	if (anthropic && json_object_get(req, "response_format"))
		n += (long long)sizeof AW_LLM_JSON_INSTRUCTION + 64;
	*bytes = n;
	*images = img;
	return AW_OK;
}

/* The prompt's tokens as max_input_tokens is held against: a token per 4
 * bytes of its text (the usual ratio of English text to BPE tokens), and
 * its images at their price. */
long long llm_prompt_estimate(long long bytes, long long images)
{
	return (bytes + 3) / 4 + images;
}
