/*
 * fake_telegram.c - a double of the Telegram Bot API for the channel hub's
 * tests and drills (the npm telegram-test-api ignores offset and timeout and
 * has no 429 or 409).
 *
 *   POST /bot<TOKEN>/getUpdates {offset, timeout, limit}: updates with
 *        update_id >= offset (those below are confirmed and forgotten),
 *        waiting up to timeout s for one; a second getUpdates while one
 *        waits ends the first with 409 Conflict, as Telegram does
 *   POST /bot<TOKEN>/sendMessage {chat_id, text, reply_markup?, reply_parameters?}
 *     (recorded with "reply_to": reply_parameters.message_id)
 *   POST /bot<TOKEN>/editMessageText {chat_id, message_id, text}: 400
 *        "message is not modified" when the text is the same
 *   POST /bot<TOKEN>/answerCallbackQuery {callback_query_id, text?}
 *   POST /bot<TOKEN>/setWebhook {url, secret_token?}
 * Sends and edits are rate-checked as Telegram does (1 per second per chat,
 * 30 per second per bot): one over answers 429 and counts a violation.
 * Injected faults (POST /control/faults {"p429", "p5xx", "pdrop",
 * "retry_after"}) answer 429 with retry_after, 502, or close the connection,
 * before anything is recorded; {"stall": true} makes every Bot API call
 * (getUpdates waiting already too) hang without a byte of answer until
 * {"stall": false} (a stalled connection); stats count them ("stalled").
 * {"stall_send": "before"} makes sendMessage alone hang before anything is
 * recorded (a send that never reached Telegram), {"stall_send": "after"}
 * records the message and then hangs without answering (a send Telegram
 * delivered whose answer was lost); {"stall_send": false} ends it, the
 * connection closing without an answer. stats count them ("stalled_sends").
 * {"fail_chat": "-100..."} answers sendMessage to that chat 400 "chat not
 * found" (a chat the bot cannot write to) until {"fail_chat": false}.
 *   POST /control/updates {"updates": [update without update_id, ...]}
 *   GET  /control/stats   counts, the messages and edits, the max per-chat
 *        and per-bot rates seen over any second, the confirmed offset
 * The token is --token-env VAR's value (another answers 401).
 * usage: fake_telegram [--port N] --token-env VAR; prints "port N".
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *token = "";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static json_t *updates; /* pending (not confirmed) */
static long long next_id = 1, confirmed = 0;
static long poll_gen;	 /* the newest getUpdates */
static json_t *messages; /* [{chat_id, text, message_id, at_ms, markup?}] */
static json_t *edits, *answers, *webhook;
static long conflicts, not_modified, violations, inj429, inj5xx, injdrop, getupdates;
static double p429, p5xx, pdrop;
static int retry_after = 1;
static int stall, stalled; /* getUpdates hang; how many hang now */
static int stall_send;	   /* sendMessage hangs: 0 no, 1 before recording, 2 after */
static int stalled_sends;  /* how many sendMessage hang now */
static char fail_chat[32]; /* sendMessage there answers 400, or "" */
static long long msg_seq = 100;
static long long accepted_ms[100000]; /* sends and edits, in order */
static char accepted_chat[100000][24];
static int naccepted;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct {
	char *body;
	size_t len;
} upload;

static enum MHD_Result reply_json(struct MHD_Connection *c, int status, json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result fail(struct MHD_Connection *c, int code, const char *desc, int ra)
{
	json_t *d = json_pack("{s:b, s:i, s:s}", "ok", 0, "error_code", code, "description", desc);
	if (ra)
		json_object_set_new(d, "parameters", json_pack("{s:i}", "retry_after", ra));
	return reply_json(c, code, d);
}

static enum MHD_Result ok(struct MHD_Connection *c, json_t *result)
{
	return reply_json(c, 200, json_pack("{s:b, s:o}", "ok", 1, "result", result));
}

static const char *chat_of(const json_t *p, char *buf, size_t cap)
{
	json_t *v = json_object_get(p, "chat_id");
	if (json_is_string(v))
		snprintf(buf, cap, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else
		buf[0] = 0;
	return buf;
}

/* Telegram's own limits; the caller holds mu. 1 when over them. */
static int over_rate(const char *chat, long long now)
{
	int bot = 0, per_chat = 0;
	for (int i = naccepted - 1; i >= 0 && now - accepted_ms[i] < 1000; i--) {
		bot++;
		per_chat += !strcmp(accepted_chat[i], chat);
	}
	return bot >= 30 || per_chat >= 1;
}

static void accept_msg(const char *chat, long long now)
{
	if (naccepted < 100000) {
		accepted_ms[naccepted] = now;
		snprintf(accepted_chat[naccepted], sizeof accepted_chat[0], "%s", chat);
		naccepted++;
	}
}

static enum MHD_Result get_updates(struct MHD_Connection *c, json_t *p)
{
	long long offset = json_integer_value(json_object_get(p, "offset"));
	int timeout = (int)json_integer_value(json_object_get(p, "timeout"));
	int limit = json_is_integer(json_object_get(p, "limit"))
			    ? (int)json_integer_value(json_object_get(p, "limit"))
			    : 100;
	pthread_mutex_lock(&mu);
	getupdates++;
	long gen = ++poll_gen;
	pthread_cond_broadcast(&cv); /* an older poll ends with 409 */
	if (offset > confirmed) {    /* confirms everything below offset */
		confirmed = offset;
		size_t i = 0;
		while (i < json_array_size(updates))
			if (json_integer_value(json_object_get(json_array_get(updates, i),
							       "update_id")) < offset)
				json_array_remove(updates, i);
			else
				i++;
	}
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout;
	json_t *out = json_array();
	for (;;) {
		if (stall) { /* no answer while stalled (a poll waiting too); then
				the connection closes */
			stalled++;
			while (stall)
				pthread_cond_wait(&cv, &mu);
			stalled--;
			pthread_mutex_unlock(&mu);
			json_decref(out);
			return MHD_NO;
		}
		if (poll_gen != gen) {
			conflicts++;
			pthread_mutex_unlock(&mu);
			json_decref(out);
			return fail(c, 409,
				    "Conflict: terminated by other getUpdates request; make sure "
				    "that only one bot instance is running",
				    0);
		}
		size_t i;
		json_t *u;
		json_array_foreach (updates, i, u)
			if (json_integer_value(json_object_get(u, "update_id")) >= offset &&
			    (int)json_array_size(out) < limit)
				json_array_append(out, u);
		if (json_array_size(out) || timeout <= 0)
			break;
		if (pthread_cond_timedwait(&cv, &mu, &dl) != 0)
			break;
	}
	pthread_mutex_unlock(&mu);
	return ok(c, out);
}

static enum MHD_Result bot_method(struct MHD_Connection *c, const char *method, json_t *p)
{
	if (!strcmp(method, "getUpdates"))
		return get_updates(c, p);
	double r = (double)rand() / RAND_MAX;
	char chat[32];
	chat_of(p, chat, sizeof chat);
	pthread_mutex_lock(&mu);
	if (stall) { /* no answer while stalled; then the connection closes */
		stalled++;
		while (stall)
			pthread_cond_wait(&cv, &mu);
		stalled--;
		pthread_mutex_unlock(&mu);
		return MHD_NO;
	}
	int send = !strcmp(method, "sendMessage"), edit = !strcmp(method, "editMessageText");
	if (send || edit || !strcmp(method, "answerCallbackQuery")) {
		if (r < pdrop) {
			injdrop++;
			pthread_mutex_unlock(&mu);
			return MHD_NO; /* the connection closes with no answer */
		}
		if (r < pdrop + p429) {
			inj429++;
			pthread_mutex_unlock(&mu);
			return fail(c, 429, "Too Many Requests: retry after 1", retry_after);
		}
		if (r < pdrop + p429 + p5xx) {
			inj5xx++;
			pthread_mutex_unlock(&mu);
			return fail(c, 502, "Bad Gateway", 0);
		}
	}
	if (send && fail_chat[0] && !strcmp(chat, fail_chat)) {
		pthread_mutex_unlock(&mu);
		return fail(c, 400, "Bad Request: chat not found", 0);
	}
	if (send && stall_send == 1) { /* never reached Telegram: nothing recorded */
		stalled_sends++;
		while (stall_send == 1)
			pthread_cond_wait(&cv, &mu);
		stalled_sends--;
		pthread_mutex_unlock(&mu);
		return MHD_NO;
	}
	long long now = now_ms();
	if (send || edit) {
		if (over_rate(chat, now)) {
			violations++;
			pthread_mutex_unlock(&mu);
			return fail(c, 429, "Too Many Requests: retry after 1", 1);
		}
	}
	if (send) {
		const char *text = json_string_value(json_object_get(p, "text"));
		if (!chat[0] || !text) {
			pthread_mutex_unlock(&mu);
			return fail(c, 400, "Bad Request: chat_id and text are required", 0);
		}
		accept_msg(chat, now);
		long long id = ++msg_seq;
		json_t *m = json_pack("{s:s, s:s, s:I, s:I}", "chat_id", chat, "text", text,
				      "message_id", (json_int_t)id, "at_ms", (json_int_t)now);
		if (json_object_get(p, "reply_markup"))
			json_object_set(m, "markup", json_object_get(p, "reply_markup"));
		json_t *to = json_object_get(json_object_get(p, "reply_parameters"), "message_id");
		if (json_is_integer(to)) /* the message it answers */
			json_object_set(m, "reply_to", to);
		json_array_append_new(messages, m);
		if (stall_send == 2) { /* delivered; the answer is lost */
			stalled_sends++;
			while (stall_send == 2)
				pthread_cond_wait(&cv, &mu);
			stalled_sends--;
			pthread_mutex_unlock(&mu);
			return MHD_NO;
		}
		pthread_mutex_unlock(&mu);
		return ok(c, json_pack("{s:I, s:{s:s}, s:s}", "message_id", (json_int_t)id, "chat",
				       "id", chat, "text", text));
	}
	if (edit) {
		long long id = json_integer_value(json_object_get(p, "message_id"));
		const char *text = json_string_value(json_object_get(p, "text"));
		size_t i;
		json_t *m, *found = NULL;
		json_array_foreach (messages, i, m)
			if (json_integer_value(json_object_get(m, "message_id")) == id &&
			    !strcmp(json_string_value(json_object_get(m, "chat_id")), chat))
				found = m;
		if (!found || !text) {
			pthread_mutex_unlock(&mu);
			return fail(c, 400, "Bad Request: message to edit not found", 0);
		}
		if (!strcmp(json_string_value(json_object_get(found, "text")), text)) {
			not_modified++;
			pthread_mutex_unlock(&mu);
			return fail(c, 400,
				    "Bad Request: message is not modified: specified new message "
				    "content and reply markup are exactly the same as a current "
				    "content and reply markup of the message",
				    0);
		}
		accept_msg(chat, now);
		json_object_set_new(found, "text", json_string(text));
		json_array_append_new(edits, json_pack("{s:s, s:I, s:s, s:I}", "chat_id", chat,
						       "message_id", (json_int_t)id, "text", text,
						       "at_ms", (json_int_t)now));
		pthread_mutex_unlock(&mu);
		return ok(c, json_pack("{s:I, s:s}", "message_id", (json_int_t)id, "text", text));
	}
	if (!strcmp(method, "answerCallbackQuery")) {
		json_array_append(answers, p);
		pthread_mutex_unlock(&mu);
		return ok(c, json_true());
	}
	if (!strcmp(method, "setWebhook")) {
		json_decref(webhook);
		webhook = json_incref(p);
		pthread_mutex_unlock(&mu);
		return ok(c, json_true());
	}
	pthread_mutex_unlock(&mu);
	return fail(c, 404, "Not Found: method not found", 0);
}

/* The most accepted messages in any one second: the bot's, and one chat's. */
static void max_rates(int *bot, int *chat)
{
	*bot = *chat = 0;
	for (int i = 0; i < naccepted; i++) {
		int b = 0, c = 0;
		for (int k = i; k < naccepted && accepted_ms[k] - accepted_ms[i] < 1000; k++) {
			b++;
			c += !strcmp(accepted_chat[k], accepted_chat[i]);
		}
		if (b > *bot)
			*bot = b;
		if (c > *chat)
			*chat = c;
	}
}

static enum MHD_Result control(struct MHD_Connection *c, const char *what, json_t *p)
{
	pthread_mutex_lock(&mu);
	if (!strcmp(what, "updates")) {
		size_t i;
		json_t *u;
		long long first = next_id;
		json_array_foreach (json_object_get(p, "updates"), i, u) {
			json_t *x = json_deep_copy(u);
			json_object_set_new(x, "update_id", json_integer(next_id++));
			json_array_append_new(updates, x);
		}
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		return reply_json(c, 200,
				  json_pack("{s:I, s:I}", "first", (json_int_t)first, "last",
					    (json_int_t)(next_id - 1)));
	}
	if (!strcmp(what, "faults")) {
		p429 = json_number_value(json_object_get(p, "p429"));
		p5xx = json_number_value(json_object_get(p, "p5xx"));
		pdrop = json_number_value(json_object_get(p, "pdrop"));
		if (json_is_boolean(json_object_get(p, "stall"))) {
			stall = json_is_true(json_object_get(p, "stall"));
			pthread_cond_broadcast(&cv);
		}
		json_t *fc = json_object_get(p, "fail_chat");
		if (fc)
			snprintf(fail_chat, sizeof fail_chat, "%s", json_string_value(fc) ?: "");
		json_t *ss = json_object_get(p, "stall_send");
		if (ss) {
			const char *v = json_string_value(ss);
			stall_send = v && !strcmp(v, "before")	? 1
				     : v && !strcmp(v, "after") ? 2
								: 0;
			pthread_cond_broadcast(&cv);
		}
		if (json_is_integer(json_object_get(p, "retry_after")))
			retry_after = (int)json_integer_value(json_object_get(p, "retry_after"));
		pthread_mutex_unlock(&mu);
		return reply_json(c, 200, json_object());
	}
	if (!strcmp(what, "stats")) {
		int mb, mc;
		max_rates(&mb, &mc);
		json_t *s = json_pack(
			"{s:O, s:O, s:O, s:O*, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:i,"
			" s:i, s:i, s:i}",
			"messages", messages, "edits", edits, "answers", answers, "webhook",
			webhook, "conflicts", (int)conflicts, "not_modified", (int)not_modified,
			"rate_violations", (int)violations, "injected_429", (int)inj429,
			"injected_5xx", (int)inj5xx, "injected_drop", (int)injdrop, "getupdates",
			(int)getupdates, "pending_updates", (int)json_array_size(updates),
			"confirmed", (json_int_t)confirmed, "last_update_id",
			(json_int_t)(next_id - 1), "max_bot_per_s", mb, "max_chat_per_s", mc,
			"stalled", stalled, "stalled_sends", stalled_sends);
		pthread_mutex_unlock(&mu);
		return reply_json(c, 200, s);
	}
	pthread_mutex_unlock(&mu);
	return reply_json(c, 404, json_object());
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **state)
{
	(void)cls, (void)version, (void)method;
	upload *u = *state;
	if (!u) {
		*state = calloc(1, sizeof(upload));
		return MHD_YES;
	}
	if (*size) {
		u->body = realloc(u->body, u->len + *size + 1);
		memcpy(u->body + u->len, data, *size);
		u->len += *size;
		u->body[u->len] = 0;
		*size = 0;
		return MHD_YES;
	}
	json_error_t je;
	json_t *p = u->len ? json_loadb(u->body, u->len, 0, &je) : json_object();
	if (!p)
		p = json_object();
	enum MHD_Result ret;
	if (!strncmp(url, "/control/", 9)) {
		ret = control(c, url + 9, p);
	} else if (!strncmp(url, "/bot", 4)) {
		const char *slash = strchr(url + 4, '/');
		size_t tl = slash ? (size_t)(slash - url - 4) : 0;
		if (!slash || tl != strlen(token) || strncmp(url + 4, token, tl))
			ret = fail(c, 401, "Unauthorized", 0);
		else
			ret = bot_method(c, slash + 1, p);
	} else {
		ret = fail(c, 404, "Not Found", 0);
	}
	json_decref(p);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
		    enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	upload *u = *state;
	if (u) {
		free(u->body);
		free(u);
	}
	*state = NULL;
}

int main(int argc, char **argv)
{
	int port = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = (int)strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--token-env") && i + 1 < argc)
			token = getenv(argv[++i]) ? getenv(argv[i]) : "";
		else {
			fprintf(stderr, "usage: fake_telegram [--port N] --token-env VAR\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	srand(12345);
	pthread_cond_init(&cv, NULL);
	updates = json_array();
	messages = json_array();
	edits = json_array();
	answers = json_array();
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port,
		NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa,
		MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_CONNECTION_LIMIT, 2000u,
		MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "fake_telegram: cannot listen\n");
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("port %u\n", info->port);
	fflush(stdout);
	pause();
	MHD_stop_daemon(d);
	return 0;
}
