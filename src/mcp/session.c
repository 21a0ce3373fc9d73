/*
 * session.c - legacy (2025-11-25) sessions: created at initialize, found by
 * id for the key's project and principal, idle ones ended after an hour and
 * bounded per project and per process (a tenant opening sessions without
 * end ends its own). A session may hold a GET stream (its listener) and
 * resource subscriptions; what upstreams say outside any call reaches the
 * streams of the project's sessions here. All under g->mu.
 */
#include "mcp_gateway.h"

#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/clock.h"
#include "awooop/crypto.h"
#include "awooop/str.h"

#define SESSION_IDLE_NS (3600LL * 1000000000LL)
#define SESSIONS_MAX 10000
#define PROJECT_SESSIONS_MAX 1000

/* A session's GET stream ends (holds g->mu). */
static void listener_end(msession *s)
{
	aw_mcp_call *l = s->listener;
	if (!l)
		return;
	s->listener = NULL;
	pthread_mutex_lock(&l->base.mu);
	l->base.eof = 1;
	aw_call_wake(&l->base);
	pthread_mutex_unlock(&l->base.mu);
	aw_mcp_release(l);
}

void mcp_session_free(msession *s) /* holds g->mu, or the gateway is going */
{
	listener_end(s);
	for (int i = 0; i < s->nsubs; i++)
		free(s->subs[i]);
	free(s);
}

/* The session of a call (holds g->mu); NULL when it ended. */
static msession *session_of(aw_mcp *g, const aw_mcp_call *c)
{
	for (msession *s = g->sessions; s; s = s->next)
		if (!strcmp(s->id, c->req_session) && !strcmp(s->project, c->ctx.project) &&
		    !strcmp(s->principal, c->ctx.principal))
			return s;
	return NULL;
}

/* The CAP_* of the session a call came in. */
int mcp_session_caps(aw_mcp *g, const aw_mcp_call *c)
{
	pthread_mutex_lock(&g->mu);
	msession *s = session_of(g, c);
	int caps = s ? s->caps : 0;
	pthread_mutex_unlock(&g->mu);
	return caps;
}

/* Adds (on) or removes uri from the call's session's subscriptions. On: 0,
 * or -1 when the session has SUBS_MAX or ended. Off: how many other
 * sessions of the project still subscribe to uri. */
int mcp_session_sub(aw_mcp *g, const aw_mcp_call *c, const char *uri, int on)
{
	int r = on ? -1 : 0;
	pthread_mutex_lock(&g->mu);
	msession *s = session_of(g, c);
	for (int i = 0; s && i < s->nsubs; i++)
		if (!strcmp(s->subs[i], uri)) {
			if (on) {
				s = NULL, r = 0; /* already */
				break;
			}
			free(s->subs[i]);
			s->subs[i] = s->subs[--s->nsubs];
			break;
		}
	if (on && s && s->nsubs < SUBS_MAX && (s->subs[s->nsubs] = aw_strdup(uri)))
		s->nsubs++, r = 0;
	for (msession *o = g->sessions; !on && o; o = o->next)
		for (int i = 0; o != s && !strcmp(o->project, c->ctx.project) && i < o->nsubs; i++)
			r += !strcmp(o->subs[i], uri);
	pthread_mutex_unlock(&g->mu);
	return r;
}

/* A notification to the GET streams of a project's sessions: every one, or
 * with uri those subscribed to it. */
void mcp_to_sessions(aw_mcp *g, const char *project, const char *method, const char *uri)
{
	json_t *note = uri ? json_pack("{s:s,s:s,s:{s:s}}", "jsonrpc", "2.0", "method", method,
				       "params", "uri", uri)
			   : json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
	pthread_mutex_lock(&g->mu);
	for (msession *s = g->sessions; s && note; s = s->next) {
		if (!s->listener || strcmp(s->project, project))
			continue;
		int want = !uri;
		for (int i = 0; i < s->nsubs && !want; i++)
			want = !strcmp(s->subs[i], uri);
		if (want)
			mcp_emit(s->listener, note);
	}
	pthread_mutex_unlock(&g->mu);
	json_decref(note);
}

/* mcp_up_opts.event: what a project's upstream says outside any call -
 * notifications/resources/updated to the sessions subscribed to the URI
 * (only the URI is passed on), notifications/tools/list_changed to all of
 * the project's sessions (the gateway's list may hide or show a tool now). */
void mcp_upstream_event(void *ud, const char *project, const json_t *msg)
{
	const char *m = json_string_value(json_object_get(msg, "method"));
	const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
	if (!strcmp(m, "notifications/tools/list_changed"))
		mcp_to_sessions(ud, project, m, NULL);
	else if (uri)
		mcp_to_sessions(ud, project, m, uri);
}

void mcp_session_new(aw_mcp *g, aw_mcp_call *c)
{
	uint8_t raw[16];
	if (aw_random_bytes(raw, sizeof raw))
		return;
	msession *s = aw_calloc(1, sizeof *s);
	if (!s)
		return;
	aw_base64url(raw, sizeof raw, s->id);
	memcpy(s->project, c->ctx.project, sizeof s->project);
	memcpy(s->principal, c->ctx.principal, sizeof s->principal);
	memcpy(s->version, c->version, sizeof s->version);
	json_t *caps = json_object_get(c->msg.params, "capabilities");
	s->caps = (json_is_object(json_object_get(caps, "sampling")) ? CAP_SAMPLING : 0) |
		  (json_is_object(json_object_get(caps, "elicitation")) ? CAP_ELICITATION : 0) |
		  (json_is_object(json_object_get(caps, "roots")) ? CAP_ROOTS : 0);
	s->used_ns = aw_clock_mono_ns();
	pthread_mutex_lock(&g->mu);
	/* idle ones go; past a cap, the project's own oldest: a tenant opening
	 * sessions without end ends its own, never another's (the process-wide
	 * cap takes another's oldest only from a project that has none here) */
	msession **pp = &g->sessions, **oldest = NULL, **mine = NULL;
	int nmine = 0;
	while (*pp) {
		if (s->used_ns - (*pp)->used_ns > SESSION_IDLE_NS) {
			msession *d = *pp;
			*pp = d->next;
			mcp_session_free(d);
			g->nsessions--;
			continue;
		}
		if (!oldest || (*pp)->used_ns < (*oldest)->used_ns)
			oldest = pp;
		if (!strcmp((*pp)->project, s->project)) {
			nmine++;
			if (!mine || (*pp)->used_ns < (*mine)->used_ns)
				mine = pp;
		}
		pp = &(*pp)->next;
	}
	msession **go = nmine >= PROJECT_SESSIONS_MAX ? mine
			: g->nsessions < SESSIONS_MAX ? NULL
			: mine			      ? mine
						      : oldest;
	if (go) {
		msession *d = *go;
		*go = d->next;
		mcp_session_free(d);
		g->nsessions--;
	}
	s->next = g->sessions;
	g->sessions = s;
	g->nsessions++;
	pthread_mutex_unlock(&g->mu);
	memcpy(c->session, s->id, sizeof c->session);
}

aw_err aw_mcp_session_get(aw_mcp *g, const aw_ctx *ctx, const char *id, char version[16],
			  aw_error *err)
{
	aw_err e = aw_fail(err, AW_E_MCP_SESSION, "no such MCP session here; initialize again");
	pthread_mutex_lock(&g->mu);
	int64_t now = aw_clock_mono_ns();
	for (msession *s = g->sessions; s; s = s->next)
		if (!strcmp(s->id, id) && !strcmp(s->project, ctx->project) &&
		    !strcmp(s->principal, ctx->principal) && now - s->used_ns <= SESSION_IDLE_NS) {
			s->used_ns = now;
			memcpy(version, s->version, 16);
			e = AW_OK;
			break;
		}
	pthread_mutex_unlock(&g->mu);
	return e;
}

aw_err aw_mcp_listen(aw_mcp *g, const aw_ctx *ctx, const char *id, aw_mcp_wake wake, void *ud,
		     aw_mcp_call **out, aw_error *err)
{
	aw_mcp_call *c = aw_calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	if (AW_STR_COPY(c->req_session, id) < 0) { /* a cut id could be another session */
		free(c);
		return aw_fail(err, AW_E_MCP_SESSION, "no such MCP session");
	}
	c->g = g;
	/* a client that reads nothing loses events */
	mcp_call_init(c, 1 << 20, wake, ud);
	c->ctx = *ctx;
	c->streaming = 1;
	aw_buf_adds(&c->base.out, ": awooop session stream\n\n");
	pthread_mutex_lock(&g->mu);
	msession *s = session_of(g, c);
	if (s) {
		listener_end(s);	/* one stream a session: the newest */
		aw_call_hold(&c->base); /* the session's */
		s->listener = c;
		s->used_ns = aw_clock_mono_ns();
	}
	pthread_mutex_unlock(&g->mu);
	if (!s) {
		aw_mcp_release(c);
		return aw_fail(err, AW_E_MCP_SESSION, "no such MCP session here; initialize again");
	}
	*out = c;
	return AW_OK;
}

int aw_mcp_session_count(aw_mcp *g, const char *project)
{
	int n = 0;
	pthread_mutex_lock(&g->mu);
	for (msession *s = g->sessions; s; s = s->next)
		n += !strcmp(s->project, project);
	pthread_mutex_unlock(&g->mu);
	return n;
}

void aw_mcp_session_end(aw_mcp *g, const aw_ctx *ctx, const char *id)
{
	pthread_mutex_lock(&g->mu);
	for (msession **pp = &g->sessions; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->id, id) && !strcmp((*pp)->project, ctx->project)) {
			msession *d = *pp;
			*pp = d->next;
			mcp_session_free(d);
			g->nsessions--;
			break;
		}
	pthread_mutex_unlock(&g->mu);
}
