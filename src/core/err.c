/*
 * err.c - lookups over the error catalogue in include/awooop/err.h.
 * The table is generated from AW_ERROR_LIST so codes, statuses and titles cannot
 * drift apart.
 */
#include "awooop/err.h"
#include "awooop/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *code;
	int status;
	const char *title;
} catalogue[AW_ERR__COUNT] = {
#define AW_X_ROW(name, code, status, title) [name] = {code, status, title},
	AW_ERROR_LIST(AW_X_ROW)
#undef AW_X_ROW
};

const char *aw_err_code(aw_err e)
{
	return (unsigned)e < AW_ERR__COUNT ? catalogue[e].code : "E-INTERNAL-001";
}

const char *aw_err_title(aw_err e)
{
	return (unsigned)e < AW_ERR__COUNT ? catalogue[e].title : "Internal error";
}

int aw_err_http_status(aw_err e)
{
	return (unsigned)e < AW_ERR__COUNT ? catalogue[e].status : 500;
}

int aw_err_from_code(const char *code, aw_err *out)
{
	for (int i = 0; i < AW_ERR__COUNT; i++) {
		if (strcmp(catalogue[i].code, code) == 0) {
			*out = (aw_err)i;
			return 0;
		}
	}
	*out = AW_E_INTERNAL;
	return -1;
}

static aw_err vfail(aw_error *err, aw_err e, const char *where, const char *fmt, va_list ap)
{
	if (!err)
		return e;
	err->err = e;
	err->retry_after_s = 0;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	aw_str_show(err->where, sizeof err->where, where); /* too long to keep: says so */
	return e;
}

aw_err aw_fail(aw_error *err, aw_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(err, e, NULL, fmt, ap);
	va_end(ap);
	return e;
}

aw_err aw_fail_at(aw_error *err, aw_err e, const char *where, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(err, e, where, fmt, ap);
	va_end(ap);
	return e;
}
