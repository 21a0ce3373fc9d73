/*
 * fuzz_llm_stream.c - the two upstream stream framings (SSE and NDJSON) and
 * the chunk translators behind them, fed what an upstream could send. The
 * first byte picks how the input is split (a stream arrives in any pieces).
 * Checks: no crash; splitting never changes what is parsed (the same events
 * and lines, byte for byte, as from one whole feed); every translated
 * Ollama line is framed "data: ...\n\n".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/llm_wire.h"

typedef struct {
	aw_buf log; /* every event/line, each followed by a 0x1e separator */
	aw_llm_stream_state st;
	aw_buf sse;
} seen;

static int on_event(void *ud, const char *d, size_t n)
{
	seen *s = ud;
	aw_buf_add(&s->log, d, n);
	aw_buf_add(&s->log, "\x1e", 1);
	int keep, done;
	aw_error err = {0};
	aw_llm_sse_event(d, n, &s->st, 0, &keep, &done, &err);
	return 0;
}

static int on_line(void *ud, const char *d, size_t n)
{
	seen *s = ud;
	aw_buf_add(&s->log, d, n);
	aw_buf_add(&s->log, "\x1e", 1);
	int done;
	aw_error err = {0};
	size_t before = s->sse.len;
	if (aw_llm_chunk_from_ollama(d, n, &s->st, 1, &s->sse, &done, &err) == AW_OK &&
	    s->sse.len > before &&
	    (memcmp(s->sse.p + before, "data: ", 6) ||
	     memcmp(s->sse.p + s->sse.len - 2, "\n\n", 2)))
		abort();
	return 0;
}

static void run(const uint8_t *data, size_t size, size_t step, int nd, seen *s)
{
	memset(s, 0, sizeof *s);
	s->log = (aw_buf)AW_BUF_INIT(1 << 22);
	s->sse = (aw_buf)AW_BUF_INIT(1 << 24);
	snprintf(s->st.id, sizeof s->st.id, "chatcmpl-f");
	s->st.model = "m";
	aw_sse p;
	aw_ndjson q;
	aw_sse_init(&p, 4096);
	aw_ndjson_init(&q, 4096);
	aw_error err = {0};
	aw_err e = AW_OK;
	for (size_t i = 0; i < size && !e; i += step) {
		size_t n = size - i < step ? size - i : step;
		e = nd ? aw_ndjson_feed(&q, (const char *)data + i, n, on_line, s, &err)
		       : aw_sse_feed(&p, (const char *)data + i, n, on_event, s, &err);
	}
	if (!e && nd)
		aw_ndjson_end(&q, on_line, s, &err);
	if (e)
		aw_buf_adds(&s->log, "\x1f"
				     "error");
	aw_sse_free(&p);
	aw_ndjson_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)(data[0] % 7) + 1;
	int nd = data[0] & 0x80;
	data++, size--;
	seen whole, split;
	run(data, size, size ? size : 1, nd, &whole);
	run(data, size, step, nd, &split);
	/* the limit error may land at a different piece; when neither failed,
	 * the parse is the same */
	if (!strstr(aw_buf_str(&whole.log), "\x1f") && !strstr(aw_buf_str(&split.log), "\x1f") &&
	    (whole.log.len != split.log.len ||
	     (whole.log.len && memcmp(whole.log.p, split.log.p, whole.log.len))))
		abort();
	aw_buf_free(&whole.log);
	aw_buf_free(&split.log);
	aw_buf_free(&whole.sse);
	aw_buf_free(&split.sse);
	return 0;
}
