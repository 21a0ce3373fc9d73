/*
 * tls.c - HTTPS for the API: libmicrohttpd's own TLS (GnuTLS, as Debian
 * builds it), so the event loop stays the one that enforces the head and
 * request deadlines, with no proxy in front.
 *
 * The certificate and key are handed to GnuTLS by a callback at every
 * handshake, from the generation loaded last: a reload (SIGHUP) loads the
 * files anew and later handshakes get them, while connections made before
 * keep theirs (a generation is freed only with the server). A bad reload
 * keeps the old generation and says why.
 *
 * TLS 1.2 and 1.3 only, GnuTLS's "SECURE" suites. With a client CA, every
 * request must come over a connection whose client certificate that CA
 * signed (transport trust only: the API key still decides the project).
 */
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/log.h"
#include "awooop/str.h"
#include "http_internal.h"

#define MAX_CHAIN 8

typedef struct gen {
	struct gen *older;
	gnutls_pcert_st pcert[MAX_CHAIN];
	unsigned n;
	gnutls_privkey_t key;
} gen;

struct aw_tls {
	char cert_path[512], key_path[512];
	char *client_ca; /* PEM, for MHD_OPTION_HTTPS_MEM_TRUST; NULL = none */
	pthread_mutex_t mu;
	gen *current; /* with every older generation behind it */
};

/* GnuTLS's certificate callback has no closure: one server per process. */
static _Atomic(aw_tls *) the_tls;

const char aw_tls_priorities[] = "SECURE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

static void gen_free(gen *g)
{
	for (unsigned i = 0; i < g->n; i++)
		gnutls_pcert_deinit(&g->pcert[i]);
	if (g->key)
		gnutls_privkey_deinit(g->key);
	free(g);
}

static aw_err load_gen(const aw_tls *t, gen **out, aw_error *err)
{
	gnutls_datum_t cert = {0}, key = {0};
	gen *g = aw_calloc(1, sizeof *g);
	aw_err e = AW_OK;
	int rc;
	if (!g)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	if ((rc = gnutls_load_file(t->cert_path, &cert)) < 0)
		e = aw_fail(err, AW_E_CONFIG, "--tls-cert %s: %s", t->cert_path,
			    gnutls_strerror(rc));
	else if ((rc = gnutls_load_file(t->key_path, &key)) < 0)
		e = aw_fail(err, AW_E_CONFIG, "--tls-key %s: %s", t->key_path, gnutls_strerror(rc));
	else if ((g->n = MAX_CHAIN, rc = gnutls_pcert_list_import_x509_raw(
					    g->pcert, &g->n, &cert, GNUTLS_X509_FMT_PEM, 0)) < 0) {
		g->n = 0;
		e = aw_fail(err, AW_E_CONFIG, "--tls-cert %s: not a PEM certificate chain: %s",
			    t->cert_path, gnutls_strerror(rc));
	} else if ((rc = gnutls_privkey_init(&g->key)) < 0 ||
		   (rc = gnutls_privkey_import_x509_raw(g->key, &key, GNUTLS_X509_FMT_PEM, NULL,
							0)) < 0) {
		e = aw_fail(err, AW_E_CONFIG, "--tls-key %s: not a PEM private key: %s",
			    t->key_path, gnutls_strerror(rc));
	}
	if (key.data) {
		gnutls_memset(key.data, 0, key.size);
		gnutls_free(key.data);
	}
	gnutls_free(cert.data);
	if (e) {
		gen_free(g);
		return e;
	}
	*out = g;
	return AW_OK;
}

static int cert_cb(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
		   const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
		   unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	(void)s;
	(void)req_ca_dn;
	(void)nreqs;
	(void)algos;
	(void)nalgos;
	aw_tls *t = atomic_load(&the_tls);
	if (!t)
		return -1;
	pthread_mutex_lock(&t->mu);
	gen *g = t->current;
	pthread_mutex_unlock(&t->mu);
	*pcert = g->pcert;
	*pcert_length = g->n;
	*pkey = g->key;
	return 0;
}

aw_err tls_new(const char *cert, const char *key, const char *client_ca, aw_tls **out,
	       aw_error *err)
{
	*out = NULL;
	if (!cert != !key)
		return aw_fail(err, AW_E_CONFIG, "--tls-cert and --tls-key go together");
	if (!cert) {
		if (client_ca)
			return aw_fail(err, AW_E_CONFIG, "--tls-client-ca needs --tls-cert");
		return AW_OK;
	}
	aw_tls *t = aw_calloc(1, sizeof *t);
	if (!t)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	pthread_mutex_init(&t->mu, NULL);
	aw_err e = AW_OK;
	if (AW_STR_COPY(t->cert_path, cert) < 0 || AW_STR_COPY(t->key_path, key) < 0)
		e = aw_fail(err, AW_E_CONFIG,
			    "--tls-cert and --tls-key are paths of at most %zu bytes",
			    sizeof t->cert_path - 1);
	else
		e = load_gen(t, &t->current, err);
	if (!e && client_ca) {
		gnutls_datum_t ca = {0};
		gnutls_x509_crt_t *list = NULL;
		unsigned n = 0;
		int rc = gnutls_load_file(client_ca, &ca);
		if (rc >= 0)
			rc = gnutls_x509_crt_list_import2(&list, &n, &ca, GNUTLS_X509_FMT_PEM, 0);
		for (unsigned i = 0; i < n; i++)
			gnutls_x509_crt_deinit(list[i]);
		gnutls_free(list);
		if (rc < 0 || !n)
			e = aw_fail(err, AW_E_CONFIG,
				    "--tls-client-ca %s: not a PEM CA certificate%s%s", client_ca,
				    rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
		else if (!(t->client_ca = aw_strndup((const char *)ca.data, ca.size)))
			e = aw_fail(err, AW_E_NOMEM, "out of memory");
		gnutls_free(ca.data);
	}
	if (e) {
		http_tls_free(t);
		return e;
	}
	atomic_store(&the_tls, t);
	*out = t;
	return AW_OK;
}

aw_err tls_reload(aw_tls *t, aw_error *err)
{
	gen *g = NULL;
	aw_err e = load_gen(t, &g, err);
	if (e)
		return e;
	pthread_mutex_lock(&t->mu);
	g->older = t->current;
	t->current = g;
	pthread_mutex_unlock(&t->mu);
	return AW_OK;
}

void http_tls_free(aw_tls *t)
{
	if (!t)
		return;
	aw_tls *self = t;
	atomic_compare_exchange_strong(&the_tls, &self, NULL);
	for (gen *g = t->current, *next; g; g = next) {
		next = g->older;
		gen_free(g);
	}
	free(t->client_ca);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

const char *http_tls_client_ca(const aw_tls *t)
{
	return t ? t->client_ca : NULL;
}

void *tls_cert_callback(void)
{
	return (void *)cert_cb;
}

aw_err tls_check_client(const aw_tls *t, struct MHD_Connection *conn, aw_error *err)
{
	if (!t || !t->client_ca)
		return AW_OK;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	unsigned status = 0;
	int rc = ci && ci->tls_session ? gnutls_certificate_verify_peers2(
						 (gnutls_session_t)ci->tls_session, &status)
				       : GNUTLS_E_NO_CERTIFICATE_FOUND;
	if (rc == GNUTLS_E_NO_CERTIFICATE_FOUND)
		return aw_fail(err, AW_E_TLS_CLIENT, "this server needs a client certificate");
	if (rc < 0 || status) {
		gnutls_datum_t why = {0};
		if (rc >= 0)
			gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why,
								     0);
		aw_fail(err, AW_E_TLS_CLIENT, "the client certificate is not trusted: %s",
			rc < 0	   ? gnutls_strerror(rc)
			: why.data ? (const char *)why.data
				   : "invalid");
		gnutls_free(why.data);
		return err->err;
	}
	return AW_OK;
}
