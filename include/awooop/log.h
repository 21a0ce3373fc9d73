/*
 * log.h - JSON-lines logging to stderr: one object per line with ts, level, msg,
 * and the trace id, request id and project of the ctx when one is given. Extra
 * fields are key/value string pairs ending in NULL:
 *
 *     aw_log(AW_LOG_INFO, ctx, "project created", "project_id", id, NULL);
 *
 * Never pass secrets; values are written verbatim (JSON-escaped).
 */
#ifndef AWOOOP_LOG_H
#define AWOOOP_LOG_H

#include "awooop/ctx.h"

typedef enum { AW_LOG_DEBUG, AW_LOG_INFO, AW_LOG_WARN, AW_LOG_ERROR } aw_log_level;

void aw_log_set_level(aw_log_level lvl);
/* 0 on "debug|info|warn|error". */
int aw_log_parse_level(const char *s, aw_log_level *out);
void aw_log(aw_log_level lvl, const aw_ctx *ctx, const char *msg, ...) __attribute__((sentinel));
/* A line whose fields the process made from its own configuration - never a
 * tenant's, a request's or a secret's value - written as given, without the
 * redaction every aw_log field goes through (which would blank the listen
 * address of the "awooop serving" line an operator needs to see). */
void aw_log_own(aw_log_level lvl, const char *msg, ...) __attribute__((sentinel));

#endif
