/*
 * vkey.c - virtual keys' limits (see tenancy.h): the one parser of the
 * limits document a key's creator or admin writes (outside input: every
 * member checked, unknown ones refused, each refusal with its pointer), its
 * stored form, and the two questions admission asks of it (may this key
 * call that model; has it expired). What the limits count - requests and
 * tokens per minute, the key's budget - is the budget service's.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "awooop/log.h"
#include "awooop/str.h"
#include "awooop/tenancy.h"

void aw_key_limits_none(aw_key_limits *l)
{
	memset(l, 0, sizeof *l);
	l->budget_tokens = -1;
	l->budget_cost = -1;
}

int aw_key_limits_any(const aw_key_limits *l)
{
	return l->nmodels > 0 || l->rpm > 0 || l->tpm > 0 || l->budget_tokens >= 0 ||
	       l->budget_cost >= 0;
}

static aw_err bad(aw_error *err, const char *where, const char *msg)
{
	return aw_fail_at(err, AW_E_KEY_LIMITS, where, "%s", msg);
}

/* Model and route names: what policy_routing and upstreams call them. */
static int model_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > AW_KEY_MODEL_MAX)
		return 0;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._:/@+-", *p))
			return 0;
	return 1;
}

static int meta_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > AW_KEY_META_MAX || !isalnum((unsigned char)s[0]))
		return 0;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._@-", *p))
			return 0;
	return 1;
}

/* A whole number in 1 .. AW_KEY_LIMIT_MAX (an integer written 1e3 too). */
static int count_ok(const json_t *v, long long *out)
{
	if (!json_is_number(v))
		return 0;
	double d = json_number_value(v);
	if (!(d >= 1 && d <= (double)AW_KEY_LIMIT_MAX) || d != floor(d))
		return 0;
	*out = (long long)d;
	return 1;
}

/* "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z", every field in range: the store's form. */
static int rfc3339_ok(const char *s, char out[AW_TS_LEN + 1])
{
	int y, mo, d, h, mi, sec, used = 0;
	if (!s || strlen(s) > 40 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
	    used != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':')
		return 0;
	for (int i = 0; i < 19; i++)
		if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16 &&
		    !isdigit((unsigned char)s[i]))
			return 0;
	const char *p = s + 19;
	int ms = 0, digits = 0;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		if (digits < 1 || digits > 9)
			return 0;
		for (int k = digits; k < 3; k++)
			ms *= 10;
	}
	if (strcmp(p, "Z") || y < 2000 || y > 9999 || mo < 1 || mo > 12 || d < 1 || h > 23 ||
	    mi > 59 || sec > 59)
		return 0;
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] + (mo == 2 && leap))
		return 0;
	struct tm tm = {.tm_year = y - 1900,
			.tm_mon = mo - 1,
			.tm_mday = d,
			.tm_hour = h,
			.tm_min = mi,
			.tm_sec = sec};
	aw_clock_format((int64_t)timegm(&tm) * 1000 + ms, out);
	return 1;
}

static int skipped(const char *k, const char *const *skip)
{
	for (int i = 0; skip && skip[i]; i++)
		if (!strcmp(k, skip[i]))
			return 1;
	return 0;
}

static aw_err parse_budget(const json_t *b, aw_key_limits *out, aw_error *err)
{
	if (!json_is_object(b))
		return bad(err, "/budget",
			   "budget is {\"tokens\"?, \"cost_usd\"?, \"period\": "
			   "\"day\"|\"month\"|\"total\"}");
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)b, k, v) {
		char where
			[160]; /* longer than aw_error.where: aw_fail_at shows it shortened with "..." */
		snprintf(where, sizeof where, "/budget/%s", k);
		if (!strcmp(k, "tokens")) {
			long long n = 0;
			if (!count_ok(v, &n))
				return bad(err, where, "tokens must be a whole number in 1..10^9");
			out->budget_tokens = n;
		} else if (!strcmp(k, "cost_usd")) {
			double d = json_is_number(v) ? json_number_value(v) : -1;
			if (!(d > 0 && d <= 1e6))
				return bad(err, where,
					   "cost_usd must be a number of USD above 0, at most "
					   "1,000,000");
			out->budget_cost = llround(d * 1e6);
		} else if (!strcmp(k, "period")) {
			const char *p = json_string_value(v);
			if (!p || (strcmp(p, "day") && strcmp(p, "month") && strcmp(p, "total")) ||
			    AW_STR_COPY(out->budget_period, p) < 0)
				return bad(err, where, "period is day, month or total");
		} else {
			return bad(err, where,
				   "unknown member: a budget has tokens, cost_usd and period");
		}
	}
	if (out->budget_tokens < 0 && out->budget_cost < 0)
		return bad(err, "/budget", "a budget limits tokens, cost_usd or both");
	if (!out->budget_period[0])
		snprintf(out->budget_period, sizeof out->budget_period, "month");
	return AW_OK;
}

aw_err aw_key_limits_parse(const json_t *doc, const char *const *skip, aw_key_limits *out,
			   aw_error *err)
{
	aw_key_limits_none(out);
	if (!json_is_object(doc))
		return bad(err, "", "a key's limits are a JSON object");
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)doc, k, v) {
		char where
			[160]; /* longer than aw_error.where: aw_fail_at shows it shortened with "..." */
		snprintf(where, sizeof where, "/%s", k);
		if (skipped(k, skip) || json_is_null(v))
			continue; /* null: no such limit */
		if (!strcmp(k, "models")) {
			if (!json_is_array(v) || json_array_size(v) > AW_KEY_MODELS_MAX)
				return bad(err, where,
					   "models is an array of at most 16 route or model names");
			size_t i;
			const json_t *m;
			json_array_foreach (v, i, m) {
				char at[64];
				snprintf(at, sizeof at, "/models/%zu", i);
				const char *name = json_string_value(m);
				if (!model_ok(name))
					return bad(err, at,
						   "a model is 1-128 characters of "
						   "[A-Za-z0-9._:/@+-]");
				for (int j = 0; j < out->nmodels; j++)
					if (!strcmp(out->models[j], name))
						return bad(err, at, "a model is listed once");
				if (AW_STR_COPY(out->models[out->nmodels++], name) < 0)
					return bad(err, at, "a model is at most 128 characters");
			}
			if (out->nmodels == 0)
				return bad(err, where,
					   "models lists at least one (null, or no member: every "
					   "model)");
		} else if (!strcmp(k, "rpm") || !strcmp(k, "tpm")) {
			long long n = 0;
			if (!count_ok(v, &n))
				return bad(err, where,
					   "a per-minute limit is a whole number in 1..10^9");
			*(k[0] == 'r' ? &out->rpm : &out->tpm) = n;
		} else if (!strcmp(k, "budget")) {
			aw_err e = parse_budget(v, out, err);
			if (e)
				return e;
		} else if (!strcmp(k, "expires_at")) {
			if (!rfc3339_ok(json_string_value(v), out->expires_at))
				return bad(err, where,
					   "expires_at is a UTC time: YYYY-MM-DDTHH:MM:SS[.mmm]Z");
		} else if (!strcmp(k, "metadata")) {
			if (!json_is_object(v))
				return bad(err, where, "metadata is {\"team\"?, \"user\"?}");
			const char *mk;
			const json_t *mv;
			json_object_foreach ((json_t *)v, mk, mv) {
				char at[160]; /* aw_fail_at shows a long one shortened */
				snprintf(at, sizeof at, "/metadata/%s", mk);
				if (strcmp(mk, "team") && strcmp(mk, "user"))
					return bad(err, at, "metadata has team and user");
				if (json_is_null(mv))
					continue;
				if (!meta_ok(json_string_value(mv)))
					return bad(
						err, at,
						"team and user are 1-64 characters of "
						"[A-Za-z0-9._@-], starting with a letter or digit");
				if (aw_str_copy(mk[0] == 't' ? out->team : out->user,
						AW_KEY_META_MAX + 1, json_string_value(mv)) < 0)
					return bad(err, at,
						   "team and user are at most 64 characters");
			}
		} else {
			return bad(err, where,
				   "unknown member: a key's limits are models, rpm, tpm, budget, "
				   "expires_at and metadata");
		}
	}
	return AW_OK;
}

json_t *aw_key_limits_json(const aw_key_limits *l)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (l->nmodels) {
		json_t *a = json_array();
		for (int i = 0; i < l->nmodels; i++)
			json_array_append_new(a, json_string(l->models[i]));
		json_object_set_new(o, "models", a);
	}
	if (l->rpm > 0)
		json_object_set_new(o, "rpm", json_integer(l->rpm));
	if (l->tpm > 0)
		json_object_set_new(o, "tpm", json_integer(l->tpm));
	if (l->budget_tokens >= 0 || l->budget_cost >= 0) {
		json_t *b = json_pack("{s:s}", "period", l->budget_period);
		if (l->budget_tokens >= 0)
			json_object_set_new(b, "tokens", json_integer(l->budget_tokens));
		if (l->budget_cost >= 0)
			json_object_set_new(b, "cost_usd", json_real((double)l->budget_cost / 1e6));
		json_object_set_new(o, "budget", b);
	}
	if (l->team[0] || l->user[0]) {
		json_t *m = json_object();
		if (l->team[0])
			json_object_set_new(m, "team", json_string(l->team));
		if (l->user[0])
			json_object_set_new(m, "user", json_string(l->user));
		json_object_set_new(o, "metadata", m);
	}
	return o;
}

void aw_key_limits_load(const char *stored, const char *expires_at, aw_key_limits *out)
{
	aw_key_limits_none(out);
	json_t *doc = stored && *stored ? json_loads(stored, 0, NULL) : NULL;
	aw_error err = {0};
	if (doc && aw_key_limits_parse(doc, NULL, out, &err)) {
		aw_log(AW_LOG_WARN, NULL, "a key's stored limits do not parse: none applied",
		       "detail", err.msg, NULL);
		aw_key_limits_none(out);
	}
	json_decref(doc);
	/* "" is never: a stored time that does not fit expires the key, never
	 * the other way round */
	if (AW_STR_COPY(out->expires_at, expires_at) < 0)
		AW_COPY_ARRAY(out->expires_at, "1970-01-01T00:00:00Z");
}

int aw_key_allows(const aw_key_limits *l, const char *model)
{
	if (!l || l->nmodels == 0)
		return 1;
	for (int i = 0; model && i < l->nmodels; i++)
		if (!strcmp(l->models[i], model))
			return 1;
	return 0;
}

int aw_key_expired(const aw_key_limits *l, int64_t now_ms)
{
	int64_t at = 0;
	return l && l->expires_at[0] && aw_clock_parse(l->expires_at, &at) == 0 && now_ms >= at;
}
