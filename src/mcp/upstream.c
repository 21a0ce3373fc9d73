/*
 * upstream.c - the MCP servers behind the gateway, as seen from it: one
 * mcp_up per (project, provider, configuration), over Streamable HTTP
 * (upstream_http.c) or as a stdio child (upstream_stdio.c). Here: its life,
 * a request handed to its transport, and what both transports share.
 *
 * What comes back has every credential value of the upstream replaced by
 * [REDACTED:credential] before it is parsed, and again in the parsed
 * strings and member names, which JSON escapes (\/, \uXXXX) hid from the
 * first pass.
 */
#include "upstream_internal.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/json.h"
#include "awooop/mcp_wire.h"
#include "awooop/str.h"

#define SCRUBBED "[REDACTED:credential]"

/* An upstream's message that is an event of its own, not of a request. */
int mcp_is_event(const char *method)
{
	return method && (!strcmp(method, "notifications/resources/updated") ||
			  !strcmp(method, "notifications/tools/list_changed"));
}

void mcp_scrub(aw_buf *b, char *const *secrets, int n)
{
	for (int i = 0; i < n; i++) {
		size_t sl = strlen(secrets[i]);
		if (sl < 4) /* a value this short would scrub ordinary text */
			continue;
		char *hit;
		size_t from = 0;
		while (b->len && (hit = memmem(b->p + from, b->len - from, secrets[i], sl))) {
			size_t at = (size_t)(hit - b->p), rl = sizeof SCRUBBED - 1;
			aw_buf tail = AW_BUF_INIT(b->max);
			aw_buf_add(&tail, hit + sl, b->len - at - sl);
			aw_buf_truncate(b, at);
			aw_buf_add(b, SCRUBBED, rl);
			aw_buf_add(b, aw_buf_str(&tail), tail.len);
			aw_buf_free(&tail);
			from = at + rl;
		}
	}
}

/* 1 when p[0..n) holds one of the credentials (those mcp_scrub() replaces). */
static int holds_secret(const char *p, size_t n, char *const *secrets, int ns)
{
	for (int i = 0; i < ns; i++) {
		size_t sl = strlen(secrets[i]);
		if (sl >= 4 && memmem(p, n, secrets[i], sl))
			return 1;
	}
	return 0;
}

/* p[0..n) scrubbed, as a new buffer (NULL: out of memory or over the cap -
 * the caller then replaces the whole string). */
static char *scrubbed_copy(const char *p, size_t n, char *const *secrets, int ns, size_t *len)
{
	aw_buf b = AW_BUF_INIT(4 * (size_t)AW_MCP_MAX_RESPONSE);
	if (aw_buf_add(&b, p, n)) {
		aw_buf_free(&b);
		return NULL;
	}
	mcp_scrub(&b, secrets, ns);
	if (holds_secret(b.p, b.len, secrets, ns)) { /* the cap cut a replacement */
		aw_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return aw_buf_take(&b);
}

/* Every string value and member name of j (in place, all depths) that
 * holds a credential gets it replaced - the pass after parsing, for what
 * the upstream wrote with JSON escapes. */
void mcp_scrub_json(json_t *j, char *const *secrets, int ns)
{
	if (!ns)
		return;
	if (json_is_string(j)) {
		const char *v = json_string_value(j);
		size_t n = json_string_length(j), len = 0;
		if (!holds_secret(v, n, secrets, ns))
			return;
		char *c = scrubbed_copy(v, n, secrets, ns, &len);
		if (!c || json_string_setn(j, c, len))
			json_string_set(j, SCRUBBED);
		free(c);
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach (j, i, v)
			mcp_scrub_json(v, secrets, ns);
	} else if (json_is_object(j)) {
		const char *k;
		json_t *v, *renamed = NULL;
		json_object_foreach (j, k, v) {
			mcp_scrub_json(v, secrets, ns);
			if (holds_secret(k, strlen(k), secrets, ns)) {
				if (!renamed)
					renamed = json_array();
				json_array_append_new(renamed, json_string(k));
			}
		}
		size_t i;
		json_t *kv;
		json_array_foreach (renamed, i, kv) {
			const char *old = json_string_value(kv);
			size_t len = 0;
			char *c = old ? scrubbed_copy(old, strlen(old), secrets, ns, &len) : NULL;
			json_t *val = old ? json_incref(json_object_get(j, old)) : NULL;
			if (old)
				json_object_del(j, old);
			if (val)
				json_object_set_new(j, c ? c : SCRUBBED, val);
			free(c);
		}
		json_decref(renamed);
	}
}

void mcp_wipe_str(char *s)
{
	if (s) {
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		free(s);
	}
}

/* err's message under another code. */
aw_err mcp_rewrap(aw_error *err, aw_err e)
{
	char msg[sizeof err->msg];
	memcpy(msg, err->msg, sizeof msg);
	return aw_fail(err, e, "%s", msg);
}

char *mcp_request_line(json_int_t id, const char *method, const json_t *params)
{
	json_t *m = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
	if (id >= 0)
		json_object_set_new(m, "id", json_integer(id));
	if (params)
		json_object_set(m, "params", (json_t *)params);
	char *s = aw_json_dumps(m, JSON_COMPACT);
	json_decref(m);
	return s;
}

json_t *mcp_init_params(void)
{
	/* what the gateway can ask its clients during a call (each client's own
	 * capability is checked when the upstream asks) */
	return json_pack("{s:s,s:{s:{},s:{}},s:{s:s,s:s}}", "protocolVersion", AW_MCP_V_LEGACY,
			 "capabilities", "sampling", "elicitation", "clientInfo", "name",
			 "awooop-mcp-gateway", "version", AWOOOP_VERSION);
}

/* The answer to a request: result, or an upstream JSON-RPC error. */
aw_err mcp_answer_of(json_t *msg, json_t **result, json_t **rpc_error, aw_error *err)
{
	json_t *res = json_object_get(msg, "result"), *e = json_object_get(msg, "error");
	if (json_is_object(res)) {
		*result = json_incref(res);
		return AW_OK;
	}
	if (json_is_object(e)) {
		if (rpc_error)
			*rpc_error = json_incref(e);
		const char *m = json_string_value(json_object_get(e, "message"));
		return aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream answered error %lld: %.120s",
			       (long long)json_integer_value(json_object_get(e, "code")),
			       m ? m : "(no message)");
	}
	return aw_fail(err, AW_E_MCP_UPSTREAM, "the upstream's answer has no result");
}

/* What goes back to the upstream for its request req: peer's answer, or
 * -32601 when there is no peer or it cannot ask its client. */
json_t *mcp_peer_answer(const mcp_peer *peer, const json_t *req)
{
	json_t *resp = peer && peer->request ? peer->request(peer->ud, req) : NULL;
	return resp ? resp
		    : aw_rpc_error_json(json_object_get(req, "id"), AW_RPC_METHOD,
					"the gateway's client cannot answer this request", NULL);
}

/* The upstream is told a request of ours was cancelled (best effort). */
char *mcp_cancel_line(json_int_t id)
{
	json_t *p = json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason",
			      "cancelled by the gateway's client");
	char *line = p ? mcp_request_line(-1, "notifications/cancelled", p) : NULL;
	json_decref(p);
	return line;
}

aw_err mcp_up_new(const mcp_up_opts *o, mcp_up **out, aw_error *err)
{
	mcp_up *u = aw_calloc(1, sizeof *u);
	if (!u)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	/* the URL to connect to, whole or not at all: the schema counts its
	 * characters, so a URL of multibyte ones can be longer than u->url */
	if (AW_STR_COPY(u->project, o->project) < 0 || AW_STR_COPY(u->provider, o->provider) < 0 ||
	    AW_STR_COPY(u->url, json_string_value(json_object_get(o->config, "url"))) < 0) {
		free(u);
		return aw_fail(err, AW_E_CONTRACT_SCHEMA,
			       "an upstream's url is at most %zu bytes (its provider name at "
			       "most 31)",
			       sizeof u->url - 1);
	}
	u->config = json_deep_copy(o->config);
	u->secrets_dir = o->secrets_dir ? aw_strdup(o->secrets_dir) : NULL;
	u->allow_private = o->allow_private;
	u->sbx = o->sbx;
	u->pids_max = o->pids_max > 0 ? o->pids_max : 128;
	json_t *to = json_object_get(o->config, "timeout_ms");
	u->timeout_ms = to		    ? (int)json_integer_value(to)
			: o->timeout_ms > 0 ? o->timeout_ms
					    : 30000;
	u->stdio = !strcmp(json_string_value(json_object_get(o->config, "transport")), "stdio");
	AW_COPY_ARRAY(u->version, AW_MCP_V_LEGACY);
	atomic_init(&u->next_id, 1);
	u->event = o->event;
	u->event_ud = o->event_ud;
	u->cgroup_dir = o->cgroup_dir ? aw_strdup(o->cgroup_dir) : NULL;
	/* the contract may ask for less than the gateway allows, never more */
	u->memory_mb = o->memory_mb > 0 ? o->memory_mb : o->memory_mb < 0 ? -1 : 512;
	json_t *mem = json_object_get(o->config, "memory_mb");
	if (json_is_integer(mem) && json_integer_value(mem) > 0 &&
	    (u->memory_mb < 0 || json_integer_value(mem) < u->memory_mb))
		u->memory_mb = (int)json_integer_value(mem);
	pthread_mutex_init(&u->mu, NULL);
	*out = u;
	return AW_OK;
}

void mcp_up_free(mcp_up *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->mu);
	u->stopping = 1;
	int listening = u->listening;
	pthread_mutex_unlock(&u->mu);
	atomic_store(&u->halt, 1);
	if (listening) /* its transfer aborts within a second (on_progress) */
		pthread_join(u->listener, NULL);
	pthread_mutex_lock(&u->mu);
	mcp_stdio_stop(u);
	for (int i = 0; i < u->nidle; i++) {
		curl_easy_cleanup(u->idle[i]);
		curl_multi_cleanup(u->idle_m[i]);
	}
	pthread_mutex_unlock(&u->mu);
	pthread_mutex_destroy(&u->mu);
	json_decref(u->config);
	free(u->secrets_dir);
	free(u->cgroup_dir);
	free(u);
}

aw_err mcp_up_request(mcp_up *u, const char *method, const json_t *params, int timeout_ms,
		      const mcp_peer *peer, json_t **result, json_t **rpc_error, aw_error *err)
{
	*result = NULL;
	if (rpc_error)
		*rpc_error = NULL;
	if (timeout_ms <= 0)
		timeout_ms = u->timeout_ms;
	return u->stdio ? mcp_stdio_request(u, method, params, timeout_ms, peer, result, rpc_error,
					    err)
			: mcp_http_request(u, method, params, timeout_ms, peer, result, rpc_error,
					   err);
}

int mcp_up_list_changed(mcp_up *u)
{
	return atomic_exchange(&u->list_changed, 0);
}
