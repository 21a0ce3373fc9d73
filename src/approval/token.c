/*
 * token.c - approval tokens: the JWS compact HS256 layer (parse, check) and
 * the approval claims on top (verify, mint). See approval.h.
 *
 * Refusals, in the order they are checked: the shape (three base64url parts,
 * JSON objects) E-APPROVAL-001; the algorithm (anything but "HS256", or a
 * "crit" header) E-APPROVAL-002; the key (no kid, or one the ring does not
 * hold) E-APPROVAL-003; the signature E-APPROVAL-004; only then the claims:
 * missing or mistyped E-APPROVAL-001, times E-APPROVAL-005, issuer and
 * audience E-APPROVAL-006.
 *
 * Why not libjwt (DESIGN's choice): Debian 12's libjwt 1.10 decodes the
 * header and claims with json_loads(buf, 0, ...) - duplicate member names
 * resolved silently, last wins - and base64 leniently (several spellings of
 * one token); it has no way to pick the key by kid before verifying (its
 * key-provider decode came in 1.12), so the header would be parsed twice;
 * and it reports a malformed token, a wrong algorithm and a bad signature
 * all as EINVAL, where each needs its own stable code. The JWS compact
 * layer is small: what this file parses is fuzzed (fuzz_jwt), checked
 * against RFC 7515 A.1 and interoperates with jose both ways.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"
#include "awooop/approval.h"
#include "awooop/crypto.h"
#include "awooop/ident.h"
#include "awooop/str.h"
#include "awooop/uuid.h"

#define HEADER_MAX 1024
#define CLAIMS_MAX 2048

static json_t *decode_object(const char *p, size_t n, size_t cap)
{
	uint8_t *raw = aw_malloc(cap + 1);
	size_t len = 0;
	json_t *o = NULL;
	if (raw && aw_base64url_decode(p, n, raw, cap, &len) == 0) {
		json_error_t je;
		o = json_loadb((const char *)raw, len, JSON_REJECT_DUPLICATES, &je);
		if (o && !json_is_object(o)) {
			json_decref(o);
			o = NULL;
		}
	}
	free(raw);
	return o;
}

void aw_jws_clear(aw_jws *j)
{
	json_decref(j->header);
	json_decref(j->claims);
	memset(j, 0, sizeof *j);
}

aw_err aw_jws_parse(const char *tok, size_t len, aw_jws *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	if (!tok || len == 0 || len > AW_APPROVAL_TOKEN_MAX || memchr(tok, 0, len))
		return aw_fail(err, AW_E_APPROVAL_TOKEN, "a token is 1..%d bytes of text",
			       AW_APPROVAL_TOKEN_MAX);
	const char *d1 = memchr(tok, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok)) : NULL;
	if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)))
		return aw_fail(err, AW_E_APPROVAL_TOKEN,
			       "a token is three base64url parts joined by dots (JWS compact)");
	if (!(out->header = decode_object(tok, (size_t)(d1 - tok), HEADER_MAX)))
		return aw_fail(err, AW_E_APPROVAL_TOKEN,
			       "the token's header is not a base64url JSON object");
	const char *alg = json_string_value(json_object_get(out->header, "alg"));
	if (!alg || strcmp(alg, "HS256") != 0) {
		aw_jws_clear(out);
		return aw_fail(err, AW_E_APPROVAL_ALG, "the token's algorithm must be HS256");
	}
	if (json_object_get(out->header, "crit")) {
		aw_jws_clear(out);
		return aw_fail(err, AW_E_APPROVAL_ALG, "critical header extensions are refused");
	}
	const char *sig = d2 + 1;
	size_t siglen = len - (size_t)(sig - tok), n = 0;
	if (aw_base64url_decode(sig, siglen, out->sig, sizeof out->sig, &n) || n != 32) {
		aw_jws_clear(out);
		return aw_fail(err, AW_E_APPROVAL_SIGNATURE,
			       "the signature is not 32 bytes of base64url");
	}
	if (!(out->claims = decode_object(d1 + 1, (size_t)(d2 - d1 - 1), CLAIMS_MAX))) {
		aw_jws_clear(out);
		return aw_fail(err, AW_E_APPROVAL_TOKEN,
			       "the token's claims are not a base64url JSON object");
	}
	out->signed_len = (size_t)(d2 - tok);
	return AW_OK;
}

int aw_jws_check(const aw_jws *j, const char *tok, const void *key, size_t keylen)
{
	uint8_t mac[AW_SHA256_LEN];
	aw_hmac_sha256(key, keylen, tok, j->signed_len, mac);
	return aw_ct_equal(mac, j->sig, sizeof mac);
}

/* ---- the approval claims ---- */

static int copy_str(const json_t *o, const char *k, char *dst, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, k));
	if (!v || !*v || strlen(v) >= cap)
		return -1;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* A NumericDate (RFC 7519: seconds, possibly fractional) that fits int64. */
static int numeric_date(const json_t *o, const char *k, int64_t *out)
{
	json_t *v = json_object_get(o, k);
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return *out >= 0 ? 0 : -1;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9.2e18) {
		*out = (int64_t)floor(json_real_value(v));
		return 0;
	}
	return -1;
}

static int jti_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 16 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
			return 0;
	return 1;
}

static aw_err decode_claims(const json_t *c, aw_approval_claims *out, aw_error *err)
{
	if (numeric_date(c, "exp", &out->exp))
		return aw_fail_at(err, AW_E_APPROVAL_TIME, "exp",
				  "the token has no expiry (exp, a NumericDate)");
	if (numeric_date(c, "iat", &out->iat) || numeric_date(c, "nbf", &out->nbf))
		return aw_fail_at(err, AW_E_APPROVAL_TOKEN, "iat",
				  "iat and nbf must be NumericDates");
	if (copy_str(c, "iss", out->iss, sizeof out->iss) ||
	    copy_str(c, "aud", out->aud, sizeof out->aud) ||
	    copy_str(c, "sub", out->sub, sizeof out->sub))
		return aw_fail_at(err, AW_E_APPROVAL_TOKEN, "iss",
				  "iss, aud (one project) and sub must be strings");
	if (!aw_ident_name_ok(out->sub)) /* it becomes an audit actor: never an email */
		return aw_fail_at(err, AW_E_APPROVAL_TOKEN, "sub", "sub must be a principal name");
	if (copy_str(c, "run_id", out->run_id, sizeof out->run_id) || !aw_uuid_valid(out->run_id))
		return aw_fail_at(err, AW_E_APPROVAL_TOKEN, "run_id", "run_id must be a run id");
	if (copy_str(c, "action", out->action, sizeof out->action) ||
	    (strcmp(out->action, "approve") && strcmp(out->action, "deny")))
		return aw_fail_at(err, AW_E_APPROVAL_TOKEN, "action",
				  "action must be \"approve\" or \"deny\"");
	if (copy_str(c, "jti", out->jti, sizeof out->jti) || !jti_ok(out->jti))
		return aw_fail_at(err, AW_E_APPROVAL_TOKEN, "jti",
				  "jti must be 16..128 characters of [A-Za-z0-9_-]");
	return AW_OK;
}

aw_err aw_approval_verify(const aw_keyring *k, const char *tok, const char *issuer,
			  const char *project, int64_t now_s, aw_approval_claims *out,
			  aw_error *err)
{
	memset(out, 0, sizeof *out);
	aw_jws j;
	aw_err e = aw_jws_parse(tok, tok ? strlen(tok) : 0, &j, err);
	if (e)
		return e;
	uint8_t mac[AW_SHA256_LEN];
	const char *kid = json_string_value(json_object_get(j.header, "kid"));
	if (!kid || strlen(kid) >= sizeof out->kid)
		e = aw_fail_at(err, AW_E_APPROVAL_KID, "kid", "the token names no key (kid)");
	else if (aw_keyring_hmac(k, kid, tok, j.signed_len, mac))
		e = aw_fail_at(err, AW_E_APPROVAL_KID, "kid",
			       "the token's kid names no approval key of this server");
	else if (!aw_ct_equal(mac, j.sig, sizeof mac))
		e = aw_fail(err, AW_E_APPROVAL_SIGNATURE, "the token's signature does not verify");
	if (!e)
		e = decode_claims(j.claims, out, err);
	if (!e) {
		memcpy(out->kid, kid, strlen(kid) + 1);
		if (now_s > out->exp + AW_APPROVAL_LEEWAY_S)
			e = aw_fail_at(err, AW_E_APPROVAL_TIME, "exp", "the token expired");
		else if (now_s + AW_APPROVAL_LEEWAY_S < out->nbf ||
			 now_s + AW_APPROVAL_LEEWAY_S < out->iat)
			e = aw_fail_at(err, AW_E_APPROVAL_TIME, "nbf",
				       "the token is not valid yet");
		else if (out->exp < out->iat)
			e = aw_fail_at(err, AW_E_APPROVAL_TIME, "exp",
				       "the token expires before iat");
		else if (strcmp(out->iss, issuer) != 0)
			e = aw_fail_at(err, AW_E_APPROVAL_AUDIENCE, "iss",
				       "the token was issued by another issuer");
		else if (strcmp(out->aud, project) != 0)
			e = aw_fail_at(err, AW_E_APPROVAL_AUDIENCE, "aud",
				       "the token is for another audience");
	}
	aw_jws_clear(&j);
	if (e)
		memset(out, 0, sizeof *out);
	return e;
}

static char *b64_json(const json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	char *b = text ? aw_malloc(aw_base64url_len(strlen(text)) + 1) : NULL;
	if (b)
		aw_base64url((const uint8_t *)text, strlen(text), b);
	free(text);
	return b;
}

aw_err aw_approval_mint(const aw_keyring *k, aw_approval_claims *c, char **tok, aw_error *err)
{
	*tok = NULL;
	const char *kid = aw_keyring_current(k);
	if (!kid)
		return aw_fail(err, AW_E_APPROVAL_KEY,
			       "no approval key: set AWOOOP_APPROVAL_KEYS or --approval-keys");
	if (!c->jti[0]) {
		uint8_t raw[16];
		if (aw_random_bytes(raw, sizeof raw))
			return aw_fail(err, AW_E_INTERNAL, "no randomness available");
		aw_base64url(raw, sizeof raw, c->jti);
	}
	if (AW_STR_COPY(c->kid, kid) < 0) /* a key ring id: at most 63 */
		return aw_fail(err, AW_E_APPROVAL_KEY, "the approval key id is too long");
	json_t *h = json_pack("{s:s, s:s, s:s}", "alg", "HS256", "typ", "JWT", "kid", kid);
	json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "iss", c->iss, "aud",
			      c->aud, "sub", c->sub, "run_id", c->run_id, "action", c->action,
			      "jti", c->jti, "iat", (json_int_t)c->iat, "nbf", (json_int_t)c->nbf,
			      "exp", (json_int_t)c->exp);
	char *hb = h ? b64_json(h) : NULL, *pb = p ? b64_json(p) : NULL;
	json_decref(h);
	json_decref(p);
	size_t n = hb && pb ? strlen(hb) + strlen(pb) + 1 : 0;
	char *t = n ? aw_malloc(n + 1 + aw_base64url_len(32) + 1) : NULL;
	aw_err e = AW_OK;
	if (!t) {
		e = aw_fail(err, AW_E_NOMEM, "out of memory");
	} else {
		uint8_t mac[AW_SHA256_LEN];
		snprintf(t, n + 1, "%s.%s", hb, pb);
		aw_keyring_hmac(k, kid, t, n, mac);
		t[n] = '.';
		aw_base64url(mac, sizeof mac, t + n + 1);
		*tok = t;
	}
	free(hb);
	free(pb);
	return e;
}
