/*
 * redis_conn.c - Redis URLs, authentication and TLS (see redis.h).
 *
 * TLS: hiredis 0.14 reads and writes a plain file descriptor, so a TLS
 * connection hands it one end of a socketpair; a detached relay thread owns
 * the other end, the TCP socket and the OpenSSL session, and copies between
 * them until either side closes (redisFree closes hiredis' end). The
 * handshake (with certificate and name verification) is done before hiredis
 * sees the descriptor, so its errors are reported as what they are.
 * aw_redis_free waits for the relay to end (no thread of ours touches
 * OpenSSL after the last connection is freed, e.g. at exit).
 */
#include "awooop/alloc.h"
#include "awooop/redis.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "awooop/crypto.h"
#include "awooop/str.h"

/* ------------------------------------------------------------ the URL */

/* Percent-decodes s[0..n) into out[cap]; -1 when malformed or too long. */
static int decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			int a = i + 2 < n ? aw_hex_digit(s[i + 1]) : -1;
			int b = i + 2 < n ? aw_hex_digit(s[i + 2]) : -1;
			if (a < 0 || b < 0 || (a | b) == 0) /* malformed, or an encoded NUL */
				return -1;
			c = a * 16 + b;
			i += 2;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

static aw_err bad(aw_error *err, const char *what)
{
	return aw_fail(err, AW_E_CONFIG,
		       "--redis: %s (redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?tls_ca=...])",
		       what);
}

static aw_err query_param(aw_redis_url *u, const char *kv, size_t n, aw_error *err)
{
	static const struct {
		const char *name;
		size_t off, cap;
	} keys[] = {
		{"tls_ca", offsetof(aw_redis_url, ca), sizeof((aw_redis_url *)0)->ca},
		{"tls_cert", offsetof(aw_redis_url, cert), sizeof((aw_redis_url *)0)->cert},
		{"tls_key", offsetof(aw_redis_url, key), sizeof((aw_redis_url *)0)->key},
		{"tls_server_name", offsetof(aw_redis_url, server_name),
		 sizeof((aw_redis_url *)0)->server_name},
	};
	const char *eq = memchr(kv, '=', n);
	if (!eq)
		return bad(err, "a query parameter without a value");
	size_t klen = (size_t)(eq - kv);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (strlen(keys[i].name) != klen || strncmp(keys[i].name, kv, klen))
			continue;
		if (!u->tls)
			return bad(err, "tls_* parameters need rediss://");
		char *dst = (char *)u + keys[i].off;
		if (decode(eq + 1, n - klen - 1, dst, keys[i].cap) || !dst[0])
			return bad(err, "a malformed or too long tls_* value");
		return AW_OK;
	}
	return bad(err, "an unknown query parameter (tls_ca, tls_cert, tls_key, "
			"tls_server_name)");
}

aw_err aw_redis_url_parse(const char *url, aw_redis_url *u, aw_error *err)
{
	memset(u, 0, sizeof *u);
	if (!url)
		return bad(err, "no URL");
	const char *p;
	if (!strncmp(url, "redis://", 8))
		p = url + 8;
	else if (!strncmp(url, "rediss://", 9))
		p = url + 9, u->tls = 1;
	else
		return bad(err, "not a redis:// or rediss:// URL");
	const char *end = p + strcspn(p, "/?");
	const char *at = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == '@')
			at = q;
	if (at) { /* USER:PASSWORD, :PASSWORD or PASSWORD-less USER */
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);
		if (decode(p, ulen, u->user, sizeof u->user))
			return bad(err, "a malformed user name");
		if (colon &&
		    decode(colon + 1, (size_t)(at - colon - 1), u->password, sizeof u->password))
			return bad(err, "a malformed password (percent-encode '%', '@', '/')");
		if (!u->password[0])
			return bad(err, "a user without a password");
		p = at + 1;
	}
	const char *hend;
	if (*p == '[') { /* [IPv6] */
		const char *rb = memchr(p, ']', (size_t)(end - p));
		if (!rb || rb == p + 1 || (size_t)(rb - p - 1) >= sizeof u->host)
			return bad(err, "a malformed [IPv6] host");
		memcpy(u->host, p + 1, (size_t)(rb - p - 1));
		hend = rb + 1;
	} else {
		hend = memchr(p, ':', (size_t)(end - p));
		if (!hend)
			hend = end;
		if (hend == p || (size_t)(hend - p) >= sizeof u->host)
			return bad(err, "no host, or a host too long");
		memcpy(u->host, p, (size_t)(hend - p));
		for (const char *h = u->host; *h; h++)
			if (!(*h == '-' || *h == '.' || *h == '_' || (*h >= '0' && *h <= '9') ||
			      (*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z')))
				return bad(err, "a host name with characters a host cannot have");
	}
	u->port = 6379;
	if (hend < end) {
		if (*hend != ':')
			return bad(err, "a malformed host");
		long v = 0;
		const char *d = hend + 1;
		if (d == end || end - d > 5)
			return bad(err, "bad port");
		for (; d < end; d++) {
			if (*d < '0' || *d > '9')
				return bad(err, "bad port");
			v = v * 10 + (*d - '0');
		}
		if (v < 1 || v > 65535)
			return bad(err, "bad port");
		u->port = (int)v;
	}
	p = end;
	if (*p == '/') {
		p++;
		size_t n = strcspn(p, "?");
		if (n) {
			if (n > 2 || p[0] < '0' || p[0] > '9' ||
			    (n == 2 && (p[1] < '0' || p[1] > '9')))
				return bad(err, "bad database number (0-15)");
			u->db = (int)strtol(p, NULL, 10);
			if (u->db > 15)
				return bad(err, "bad database number (0-15)");
		}
		p += n;
	}
	if (*p == '?') {
		p++;
		while (*p) {
			size_t n = strcspn(p, "&");
			aw_err e = query_param(u, p, n, err);
			if (e)
				return e;
			p += n + (p[n] == '&');
		}
	}
	if ((u->cert[0] != 0) != (u->key[0] != 0))
		return bad(err, "tls_cert and tls_key go together");
	return AW_OK;
}

void aw_redis_url_redact(const char *url, char *out, size_t cap)
{
	if (!cap)
		return;
	const char *s = url ? strstr(url, "://") : NULL;
	if (!s) {
		snprintf(out, cap, "(not a redis URL)");
		return;
	}
	s += 3;
	const char *end = s + strcspn(s, "/?"), *at = NULL;
	for (const char *q = s; q < end; q++)
		if (*q == '@')
			at = q;
	if (!at) {
		aw_str_show(out, cap, url); /* for logs and messages */
		return;
	}
	const char *colon = memchr(s, ':', (size_t)(at - s));
	size_t keep = (size_t)((colon ? colon : at) - url);
	snprintf(out, cap, "%.*s:***%s", (int)keep, url, at);
}

/* ------------------------------------------------------------ TLS */

typedef struct relay {
	struct relay *next; /* the live relays, by hiredis' descriptor */
	SSL_CTX *ctx;
	SSL *ssl;
	int tcp, pair, hiredis_fd;
	pthread_t thread;
} relay;

static pthread_mutex_t relays_mu = PTHREAD_MUTEX_INITIALIZER;
static relay *relays;

static void relay_free(relay *r)
{
	if (r->ssl) {
		SSL_shutdown(r->ssl);
		SSL_free(r->ssl);
	}
	SSL_CTX_free(r->ctx);
	if (r->tcp >= 0)
		close(r->tcp);
	if (r->pair >= 0)
		close(r->pair);
	free(r);
}

/* Takes the relay of hiredis' descriptor fd off the list (NULL: none). */
static relay *relay_take(int fd)
{
	pthread_mutex_lock(&relays_mu);
	relay **pp = &relays, *r = NULL;
	while (*pp && (*pp)->hiredis_fd != fd)
		pp = &(*pp)->next;
	if (*pp) {
		r = *pp;
		*pp = r->next;
	}
	pthread_mutex_unlock(&relays_mu);
	return r;
}

/* Writes all of b to hiredis' end (which may be gone: EPIPE, no signal). */
static int pair_write(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Waits until the TLS socket can go on after SSL error e (WANT_READ or
 * WANT_WRITE); -1 on anything else. */
static int tls_wait(relay *r, int e)
{
	if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
		return -1;
	struct pollfd p = {.fd = r->tcp, .events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT};
	return poll(&p, 1, 30000) == 1 ? 0 : -1;
}

static int tls_write_all(relay *r, const char *b, int n)
{
	while (n > 0) {
		int w = SSL_write(r->ssl, b, n);
		if (w > 0) {
			b += w;
			n -= w;
		} else if (tls_wait(r, SSL_get_error(r->ssl, w))) {
			return -1;
		}
	}
	return 0;
}

/* Moves what the server sent to hiredis: every record that is complete
 * (the socket does not block: a partial record waits for the next poll,
 * and records that carry no data, such as TLS 1.3 session tickets, are not
 * waited on). -1 when the session ended. */
static int tls_drain(relay *r, char *buf, int cap)
{
	for (;;) {
		int n = SSL_read(r->ssl, buf, cap);
		if (n > 0) {
			if (pair_write(r->pair, buf, (size_t)n))
				return -1;
			continue;
		}
		int e = SSL_get_error(r->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			return 0;
		if (e != SSL_ERROR_WANT_WRITE || tls_wait(r, e))
			return -1;
	}
}

static void *relay_main(void *arg)
{
	relay *r = arg;
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE); /* a write to a closed peer fails instead */
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	char buf[16384];
	for (;;) {
		struct pollfd p[2] = {{.fd = r->pair, .events = POLLIN},
				      {.fd = r->tcp, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) { /* hiredis -> server */
			ssize_t n = read(r->pair, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || tls_write_all(r, buf, (int)n))
				break;
		}
		if (p[1].revents && tls_drain(r, buf, sizeof buf)) /* server -> hiredis */
			break;
	}
	shutdown(r->pair, SHUT_RDWR); /* hiredis reads the end of the stream */
	return NULL;
}

static int tcp_connect(const aw_redis_url *u, int timeout_ms, aw_error *err)
{
	char port[8];
	snprintf(port, sizeof port, "%d", u->port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc = getaddrinfo(u->host, port, &hints, &ai);
	if (rc) {
		aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis at %s:%d: cannot resolve the host (%s)",
			u->host, u->port, gai_strerror(rc));
		return -1;
	}
	int fd = -1, why = 0;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		why = 0;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			/* connected at once */
		} else if (errno == EINPROGRESS) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			socklen_t len = sizeof why;
			if (poll(&p, 1, timeout_ms) != 1)
				why = ETIMEDOUT;
			else
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &why, &len);
		} else {
			why = errno;
		}
		if (why) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis at %s:%d unreachable: %s", u->host,
			u->port, strerror(why ? why : ECONNREFUSED));
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static void set_timeouts(int fd, int timeout_ms)
{
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* The last OpenSSL error, or what the certificate check said. */
static const char *tls_why(SSL *ssl, char *buf, size_t cap)
{
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e = ERR_get_error();
	if (v != X509_V_OK)
		snprintf(buf, cap, "certificate verify failed: %s",
			 X509_verify_cert_error_string(v));
	else if (e)
		ERR_error_string_n(e, buf, cap);
	else
		snprintf(buf, cap, "the connection closed during the handshake");
	ERR_clear_error();
	return buf;
}

/* The TLS session to u; returns hiredis' end of the relay, or -1. */
static int tls_open(const aw_redis_url *u, int timeout_ms, aw_error *err)
{
	char why[256];
	relay *r = aw_calloc(1, sizeof *r);
	if (!r) {
		aw_fail(err, AW_E_NOMEM, "out of memory");
		return -1;
	}
	r->tcp = r->pair = -1;
	const char *name = u->server_name[0] ? u->server_name : u->host;
	unsigned char ip[16];
	int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
	if (!(r->ctx = SSL_CTX_new(TLS_client_method())) ||
	    !SSL_CTX_set_min_proto_version(r->ctx, TLS1_2_VERSION)) {
		aw_fail(err, AW_E_INTERNAL, "TLS: %s", tls_why(NULL, why, sizeof why));
		goto fail;
	}
	SSL_CTX_set_verify(r->ctx, SSL_VERIFY_PEER, NULL);
	if (u->ca[0] ? SSL_CTX_load_verify_locations(r->ctx, u->ca, NULL) != 1
		     : SSL_CTX_set_default_verify_paths(r->ctx) != 1) {
		aw_fail(err, AW_E_CONFIG, "redis TLS: cannot load the CA file %s: %s",
			u->ca[0] ? u->ca : "(system)", tls_why(NULL, why, sizeof why));
		goto fail;
	}
	if (u->cert[0] && (SSL_CTX_use_certificate_chain_file(r->ctx, u->cert) != 1 ||
			   SSL_CTX_use_PrivateKey_file(r->ctx, u->key, SSL_FILETYPE_PEM) != 1 ||
			   SSL_CTX_check_private_key(r->ctx) != 1)) {
		aw_fail(err, AW_E_CONFIG, "redis TLS: cannot use the client certificate %s: %s",
			u->cert, tls_why(NULL, why, sizeof why));
		goto fail;
	}
	if ((r->tcp = tcp_connect(u, timeout_ms, err)) < 0)
		goto fail;
	set_timeouts(r->tcp, timeout_ms);
	if (!(r->ssl = SSL_new(r->ctx)) || SSL_set_fd(r->ssl, r->tcp) != 1 ||
	    (!is_ip && SSL_set_tlsext_host_name(r->ssl, name) != 1) ||
	    (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(r->ssl), name) != 1
		   : SSL_set1_host(r->ssl, name) != 1)) {
		aw_fail(err, AW_E_INTERNAL, "TLS: %s", tls_why(r->ssl, why, sizeof why));
		goto fail;
	}
	if (SSL_connect(r->ssl) != 1) {
		aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis at %s:%d: TLS handshake failed: %s",
			u->host, u->port, tls_why(r->ssl, why, sizeof why));
		goto fail;
	}
	/* the relay waits in poll; the session does not block */
	fcntl(r->tcp, F_SETFL, fcntl(r->tcp, F_GETFL) | O_NONBLOCK);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		aw_fail(err, AW_E_INTERNAL, "socketpair: %s", strerror(errno));
		goto fail;
	}
	r->pair = sv[1];
	r->hiredis_fd = sv[0];
	if (pthread_create(&r->thread, NULL, relay_main, r)) {
		close(sv[0]);
		aw_fail(err, AW_E_INTERNAL, "cannot start the TLS relay");
		goto fail;
	}
	pthread_mutex_lock(&relays_mu);
	r->next = relays;
	relays = r;
	pthread_mutex_unlock(&relays_mu);
	return sv[0];
fail:
	relay_free(r);
	return -1;
}

/* ------------------------------------------------------------ connect */

/* Runs one command; its error reply (never containing what was sent) into
 * err. */
static int command_ok(redisContext *c, const aw_redis_url *u, const char *step, aw_error *err,
		      redisReply *r)
{
	if (!r) {
		aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis at %s:%d: %s: %s", u->host, u->port, step,
			c->errstr[0] ? c->errstr : "no answer");
		return 0;
	}
	int ok = r->type != REDIS_REPLY_ERROR;
	if (!ok)
		aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis at %s:%d refused %s: %.160s", u->host,
			u->port, step, r->str);
	freeReplyObject(r);
	return ok;
}

redisContext *aw_redis_connect(const aw_redis_url *u, int timeout_ms, aw_error *err)
{
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	redisContext *c = NULL;
	if (u->tls) {
		int fd = tls_open(u, timeout_ms, err);
		if (fd < 0)
			return NULL;
		if (!(c = redisConnectFd(fd))) {
			close(fd); /* the relay reads its end of file and ends */
			relay *r = relay_take(fd);
			if (r) {
				pthread_join(r->thread, NULL);
				relay_free(r);
			}
		}
	} else {
		c = redisConnectWithTimeout(u->host, u->port, tv);
	}
	if (!c || c->err) {
		aw_fail(err, AW_E_BUS_UNAVAILABLE, "redis at %s:%d unreachable: %s", u->host,
			u->port, c ? c->errstr : "out of memory");
		aw_redis_free(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	int ok = 1;
	if (u->password[0])
		ok = command_ok(c, u, "the credentials (AUTH)", err,
				u->user[0] ? redisCommand(c, "AUTH %s %s", u->user, u->password)
					   : redisCommand(c, "AUTH %s", u->password));
	if (ok && u->db)
		ok = command_ok(c, u, "SELECT", err, redisCommand(c, "SELECT %d", u->db));
	if (ok)
		ok = command_ok(c, u, "PING", err, redisCommand(c, "PING"));
	if (!ok) {
		aw_redis_free(c);
		return NULL;
	}
	return c;
}

void aw_redis_free(redisContext *c)
{
	if (!c)
		return;
	int fd = c->fd;
	redisFree(c); /* closes fd: the relay reads its end of file and ends */
	relay *r = relay_take(fd);
	if (r) {
		pthread_join(r->thread, NULL);
		relay_free(r);
	}
}

aw_err aw_redis_ping(const char *url, int timeout_ms, aw_error *err)
{
	aw_redis_url u;
	aw_err e = aw_redis_url_parse(url, &u, err);
	if (e)
		return e;
	redisContext *c = aw_redis_connect(&u, timeout_ms, err);
	explicit_bzero(u.password, sizeof u.password);
	if (!c)
		return err->err;
	aw_redis_free(c);
	return AW_OK;
}
