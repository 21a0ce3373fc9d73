/*
 * log.c - the JSON-lines logger (see log.h). Each line is built in full with
 * jansson and written with one fputs under a lock, so lines from threads never
 * interleave.
 */
#include "awooop/log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/redact.h"

static aw_log_level min_level = AW_LOG_INFO;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const names[] = {"debug", "info", "warn", "error"};

void aw_log_set_level(aw_log_level lvl)
{
	min_level = lvl;
}

int aw_log_parse_level(const char *s, aw_log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (s && strcmp(s, names[i]) == 0) {
			*out = (aw_log_level)i;
			return 0;
		}
	}
	return -1;
}

static void vlog(aw_log_level lvl, const aw_ctx *ctx, int redact, const char *msg, va_list ap)
{
	char ts[AW_TS_LEN + 1];
	aw_clock_now(ts);
	json_t *o = json_object();
	if (!o)
		return;
	json_object_set_new(o, "ts", json_string(ts));
	json_object_set_new(o, "level", json_string(names[lvl]));
	if (ctx) { /* the logger's own fields: ids it made, never redacted */
		if (ctx->trace.trace_id[0])
			json_object_set_new(o, "trace_id", json_string(ctx->trace.trace_id));
		if (ctx->request_id[0])
			json_object_set_new(o, "request_id", json_string(ctx->request_id));
		if (ctx->project[0])
			json_object_set_new(o, "project", json_string(ctx->project));
	}
	json_t *fields = json_object();
	if (!fields) {
		json_decref(o);
		return;
	}
	json_object_set_new(fields, "msg", json_string(msg));
	for (;;) {
		const char *k = va_arg(ap, const char *);
		if (!k)
			break;
		const char *v = va_arg(ap, const char *);
		json_object_set_new(fields, k, v ? json_string(v) : json_null());
	}
	/* what a caller passed goes through the redaction engine, whatever it is
	 * (but for aw_log_own's); it cannot replace the logger's own fields */
	aw_err re = redact ? aw_redact_json_for(ctx ? ctx->project : NULL, fields, NULL) : AW_OK;
	if (!re)
		json_object_update_missing(o, fields);
	json_decref(fields);
	if (re) {
		json_decref(o);
		return;
	}
	char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!line)
		return;
	pthread_mutex_lock(&out_lock);
	fputs(line, stderr);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&out_lock);
	free(line);
}

void aw_log(aw_log_level lvl, const aw_ctx *ctx, const char *msg, ...)
{
	if (lvl < min_level)
		return;
	va_list ap;
	va_start(ap, msg);
	vlog(lvl, ctx, 1, msg, ap);
	va_end(ap);
}

void aw_log_own(aw_log_level lvl, const char *msg, ...)
{
	if (lvl < min_level)
		return;
	va_list ap;
	va_start(ap, msg);
	vlog(lvl, NULL, 0, msg, ap);
	va_end(ap);
}
