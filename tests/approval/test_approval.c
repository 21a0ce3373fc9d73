/*
 * test_approval.c - approval tokens and waiting runs on a real store (argv[1]:
 * sqlite | postgres; postgres also with Redis for the jti SET NX):
 * RFC 7515 A.1 byte for byte, the token pitfalls refused with stable codes,
 * key rotation, a run parked and resumed, deny, N of M with the approval
 * policy, 32 concurrent approvals -> one transition, replay, suggest mode
 * executing nothing, the window closing, and tenant isolation.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "awooop/approval.h"
#include "awooop/clock.h"
#include "awooop/contract.h"
#include "awooop/egress.h"
#include "awooop/crypto.h"
#include "awooop/kv.h"
#include "awooop/run.h"
#include "awooop/worker.h"
#include "awooop/tenancy.h"
#include "counter.h"
#include "support.h"

#define S (aw_fx.s)
#define KEYS                                                                   \
	"k2:2222222222222222222222222222222222222222222222222222222222222222," \
	"k1:1111111111111111111111111111111111111111111111111111111111111111"
#define K1 "1111111111111111111111111111111111111111111111111111111111111111"

static aw_keyring *KR;
static aw_contracts *C;
static aw_approvals *A;
static aw_worker *W;
static aw_kv *KV;
static aw_counter *CNT;

static int64_t now_s(void)
{
	return aw_clock_wall_ms() / 1000;
}

/* ------------------------------------------------------------ JWS layer */

/* RFC 7515 appendix A.1: the example JWS and its key, byte for byte. */
static void test_rfc7515_a1(void **state)
{
	(void)state;
	static const char tok[] =
		"eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
		".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb"
		"290Ijp0cnVlfQ"
		".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
	static const char jwk_k[] = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtM"
				    "N3Yj0iPS4hcgUuTwjAzZr1Z9CAow";
	uint8_t key[64];
	size_t klen = 0;
	assert_int_equal(aw_base64url_decode(jwk_k, strlen(jwk_k), key, sizeof key, &klen), 0);
	assert_int_equal(klen, 64);
	aw_jws j;
	aw_error err = {0};
	assert_int_equal(aw_jws_parse(tok, strlen(tok), &j, &err), AW_OK);
	assert_int_equal(aw_jws_check(&j, tok, key, klen), 1);
	/* the clock set to its time: exp 1300819380 has not passed at 1300819380 */
	assert_int_equal(json_integer_value(json_object_get(j.claims, "exp")), 1300819380);
	assert_true(json_is_true(json_object_get(j.claims, "http://example.com/is_root")));
	assert_string_equal(json_string_value(json_object_get(j.claims, "iss")), "joe");
	aw_jws_clear(&j);
	/* one byte of the signing input changed: the signature no longer holds */
	char bad[sizeof tok];
	memcpy(bad, tok, sizeof tok);
	bad[60] = bad[60] == 'A' ? 'B' : 'A';
	if (aw_jws_parse(bad, strlen(bad), &j, &err) == AW_OK) {
		assert_int_equal(aw_jws_check(&j, bad, key, klen), 0);
		aw_jws_clear(&j);
	}
}

/* A token with any header and claims, signed with key (hex) or unsigned. */
static char *forge(const char *header, const char *claims, const char *hexkey)
{
	char hb[2048], cb[4096];
	aw_base64url((const uint8_t *)header, strlen(header), hb);
	aw_base64url((const uint8_t *)claims, strlen(claims), cb);
	char *t = malloc(strlen(hb) + strlen(cb) + 64);
	snprintf(t, strlen(hb) + strlen(cb) + 64, "%s.%s", hb, cb);
	if (hexkey) {
		uint8_t k[64], mac[32];
		size_t n = strlen(hexkey) / 2;
		for (size_t i = 0; i < n; i++)
			k[i] = (uint8_t)(aw_hex_digit(hexkey[2 * i]) << 4 |
					 aw_hex_digit(hexkey[2 * i + 1]));
		aw_hmac_sha256(k, n, t, strlen(t), mac);
		strcat(t, ".");
		aw_base64url(mac, sizeof mac, t + strlen(t));
	} else {
		strcat(t, ".");
	}
	return t;
}

static char *claims_text(const char *aud, const char *iss, int64_t iat, int64_t exp, int with_exp)
{
	char *s = malloc(1024);
	snprintf(s, 1024,
		 "{\"iss\":\"%s\",\"aud\":\"%s\",\"sub\":\"alice\","
		 "\"run_id\":\"0190d1e4-0000-7000-8000-000000000001\",\"action\":\"approve\","
		 "\"iat\":%lld,\"nbf\":%lld%s%lld,\"jti\":\"abcdefghijklmnop0123\"}",
		 iss, aud, (long long)iat, (long long)iat,
		 with_exp ? ",\"exp\":" : ",\"x\":", (long long)exp);
	return s;
}

static aw_err check(const char *tok, aw_error *err)
{
	aw_approval_claims c;
	return aw_approval_verify(KR, tok, "awooop", "ap-main", now_s(), &c, err);
}

static void expect(const char *header, const char *claims, const char *key, aw_err want)
{
	char *t = forge(header, claims, key);
	aw_error err = {0};
	aw_err e = check(t, &err);
	if (e != want)
		fail_msg("%s . %s: want %s, got %s (%s)", header, claims, aw_err_code(want),
			 aw_err_code(e), err.msg);
	free(t);
}

static void test_pitfalls(void **state)
{
	(void)state;
	int64_t n = now_s();
	char *good = claims_text("ap-main", "awooop", n, n + 600, 1);
	const char *hs = "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"k1\"}";
	expect(hs, good, K1, AW_OK);
	/* the algorithm is pinned, before any key is looked at */
	expect("{\"alg\":\"none\",\"typ\":\"JWT\",\"kid\":\"k1\"}", good, NULL, AW_E_APPROVAL_ALG);
	expect("{\"alg\":\"none\",\"typ\":\"JWT\",\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG);
	expect("{\"alg\":\"HS512\",\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG);
	expect("{\"alg\":\"HS384\",\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG);
	expect("{\"alg\":\"RS256\",\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG); /* confusion */
	expect("{\"alg\":\"ES256\",\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG);
	expect("{\"alg\":\"hs256\",\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG);
	expect("{\"kid\":\"k1\"}", good, K1, AW_E_APPROVAL_ALG);
	expect("{\"alg\":\"HS256\",\"kid\":\"k1\",\"crit\":[\"exp\"]}", good, K1,
	       AW_E_APPROVAL_ALG);
	/* keys */
	expect("{\"alg\":\"HS256\",\"kid\":\"k9\"}", good, K1, AW_E_APPROVAL_KID);
	expect("{\"alg\":\"HS256\"}", good, K1, AW_E_APPROVAL_KID);
	expect(hs, good, "2222222222222222222222222222222222222222222222222222222222222223",
	       AW_E_APPROVAL_SIGNATURE);
	/* claims: exp missing, expired, not yet valid, other audience, issuer */
	char *c = claims_text("ap-main", "awooop", n, n, 0);
	expect(hs, c, K1, AW_E_APPROVAL_TIME);
	free(c);
	c = claims_text("ap-main", "awooop", n - 1000, n - 100, 1);
	expect(hs, c, K1, AW_E_APPROVAL_TIME);
	free(c);
	c = claims_text("ap-main", "awooop", n + 600, n + 1200, 1);
	expect(hs, c, K1, AW_E_APPROVAL_TIME);
	free(c);
	c = claims_text("ap-main", "awooop", n - AW_APPROVAL_LEEWAY_S + 5, n - 5, 1);
	expect(hs, c, K1, AW_OK); /* within the leeway */
	free(c);
	c = claims_text("ap-other", "awooop", n, n + 600, 1);
	expect(hs, c, K1, AW_E_APPROVAL_AUDIENCE);
	free(c);
	c = claims_text("ap-main", "mallory", n, n + 600, 1);
	expect(hs, c, K1, AW_E_APPROVAL_AUDIENCE);
	free(c);
	expect(hs, "{\"exp\":99999999999}", K1, AW_E_APPROVAL_TOKEN); /* no iat */
	expect(hs, "[1,2]", K1, AW_E_APPROVAL_TOKEN);
	/* shapes */
	aw_error err = {0};
	const char *bad[] = {"",     "a",	 "a.b",	       "a.b.c.d",
			     "....", "e30.e30.", "e30=.e30.x", "!!.e30.x"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		aw_err e = check(bad[i], &err);
		if (e != AW_E_APPROVAL_TOKEN && e != AW_E_APPROVAL_ALG)
			fail_msg("'%s': got %s", bad[i], aw_err_code(e));
	}
	/* duplicate claim names are refused, not resolved */
	expect(hs,
	       "{\"aud\":\"ap-main\",\"aud\":\"ap-main\",\"iss\":\"awooop\",\"sub\":\"a\","
	       "\"run_id\":\"0190d1e4-0000-7000-8000-000000000001\",\"action\":\"approve\","
	       "\"iat\":1,\"nbf\":1,\"exp\":99999999999,\"jti\":\"abcdefghijklmnop\"}",
	       K1, AW_E_APPROVAL_TOKEN);
	free(good);
	/* short keys never enter a ring */
	aw_keyring *k = NULL;
	assert_int_equal(aw_keyring_from_env("s:00112233445566778899aabbccddeeff", &k, &err),
			 AW_E_CONFIG);
	assert_null(k);
}

/* Minted with the current key (k2), verified; a token of the retired k1 still
 * verifies after the rotation; the claims read back. */
static void test_mint_rotation(void **state)
{
	(void)state;
	aw_approval_claims c = {0}, out;
	snprintf(c.iss, sizeof c.iss, "awooop");
	snprintf(c.aud, sizeof c.aud, "ap-main");
	snprintf(c.sub, sizeof c.sub, "alice");
	snprintf(c.run_id, sizeof c.run_id, "0190d1e4-0000-7000-8000-000000000001");
	snprintf(c.action, sizeof c.action, "deny");
	c.iat = c.nbf = now_s();
	c.exp = c.iat + 60;
	char *tok = NULL;
	aw_error err = {0};
	assert_int_equal(aw_approval_mint(KR, &c, &tok, &err), AW_OK);
	assert_string_equal(c.kid, "k2");
	assert_true(strlen(c.jti) >= 16);
	assert_int_equal(check(tok, &err), AW_OK);
	assert_int_equal(aw_approval_verify(KR, tok, "awooop", "ap-main", now_s(), &out, &err),
			 AW_OK);
	assert_string_equal(out.action, "deny");
	assert_string_equal(out.jti, c.jti);
	free(tok);
	int64_t n = now_s();
	char *cl = claims_text("ap-main", "awooop", n, n + 60, 1);
	char *old = forge("{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"k1\"}", cl, K1);
	assert_int_equal(check(old, &err), AW_OK);
	free(old);
	free(cl);
	aw_keyring *empty = NULL;
	c.jti[0] = 0;
	assert_int_equal(aw_approval_mint(empty, &c, &tok, &err), AW_E_APPROVAL_KEY);
}

/* ------------------------------------------------------------ runs */

static void as(aw_ctx *c, const char *project)
{
	aw_test_ctx(c, project, AW_SCOPE_OPERATOR, "tester");
}

static void submit(const char *p, const char *body, char *id)
{
	aw_ctx c;
	as(&c, p);
	aw_run_request req;
	aw_error err = {0};
	aw_err e = aw_run_request_decode(body, strlen(body), &req, &err);
	if (e)
		fail_msg("decode: %s %s", aw_err_code(e), err.msg);
	aw_run run;
	int replayed = 0;
	e = aw_run_submit(S, &c, &req, NULL, &run, &replayed, &err);
	aw_run_request_free(&req);
	if (e)
		fail_msg("submit: %s %s", aw_err_code(e), err.msg);
	snprintf(id, 40, "%s", run.run_id);
	aw_run_free(&run);
}

static void get(const char *p, const char *id, aw_run *r, aw_run_step **st, int *n)
{
	aw_ctx c;
	as(&c, p);
	aw_error err = {0};
	assert_int_equal(aw_run_get(S, &c, id, r, st, n, &err), AW_OK);
}

typedef struct {
	const char *p, *id, *want;
} state_wait;

static int in_state(void *ud)
{
	const state_wait *w = ud;
	aw_run r;
	get(w->p, w->id, &r, NULL, NULL);
	int ok = strcmp(r.state, w->want) == 0;
	aw_run_free(&r);
	return ok;
}

/* 1 once the run is in state want, 0 if it is not within ms. */
static int wait_state(const char *p, const char *id, const char *want, int ms)
{
	state_wait w = {p, id, want};
	return aw_test_wait_until(in_state, &w, ms);
}

/* A member of a journal entry's result (jsonb on PostgreSQL respaces it). */
static json_int_t result_int(const char *result, const char *key)
{
	json_t *o = json_loads(result, 0, NULL);
	json_int_t v = json_integer_value(json_object_get(o, key));
	json_decref(o);
	return v;
}

/* A token is its minter's own decision: sub mints it with its own key. */
static char *mint(const char *p, const char *run, const char *sub, const char *action, int ttl)
{
	aw_ctx c;
	aw_test_ctx(&c, p, AW_SCOPE_READER, sub);
	char *tok = NULL;
	aw_error err = {0};
	aw_err e = aw_approvals_mint(A, &c, run, sub, action, ttl, &tok, NULL, &err);
	if (e)
		fail_msg("mint: %s %s", aw_err_code(e), err.msg);
	return tok;
}

static aw_err decide(const char *p, const char *run, const char *tok, json_t **out)
{
	aw_ctx c;
	as(&c, p);
	aw_error err = {0};
	json_t *o = NULL;
	aw_err e = aw_approvals_decide_token(A, &c, run, tok, &o, &err);
	if (out)
		*out = o;
	else
		json_decref(o);
	return e;
}

static const char PARK[] =
	"{\"workflow\":[{\"kind\":\"noop\"},{\"kind\":\"approval\",\"args\":{\"summary\":"
	"\"ship it\"}},{\"kind\":\"noop\"}]}";

static void test_park_approve_resume(void **state)
{
	(void)state;
	char id[40];
	submit("ap-main", PARK, id);
	assert_true(wait_state("ap-main", id, "waiting_approval", 5000));
	aw_run r;
	aw_run_step *st = NULL;
	int n = 0;
	get("ap-main", id, &r, &st, &n);
	assert_int_equal(n, 2);
	assert_string_equal(st[1].state, "waiting");
	assert_int_equal(result_int(st[1].result, "threshold"), 1);
	assert_int_equal(r.attempts, 0); /* parking does not count an attempt */
	aw_run_free(&r);
	aw_run_steps_free(st, n);
	/* a token for another run of the project is refused */
	char other[40];
	submit("ap-main", PARK, other);
	char *wrong = mint("ap-main", other, "alice", "approve", 60);
	assert_int_equal(decide("ap-main", id, wrong, NULL), AW_E_APPROVAL_AUDIENCE);
	char *tok = mint("ap-main", id, "alice", "approve", 60);
	json_t *out = NULL;
	assert_int_equal(decide("ap-main", id, tok, &out), AW_OK);
	assert_true(json_is_true(json_object_get(out, "moved")));
	json_decref(out);
	assert_true(wait_state("ap-main", id, "succeeded", 5000));
	get("ap-main", id, &r, &st, &n);
	assert_int_equal(n, 3);
	assert_string_equal(st[1].state, "succeeded");
	assert_non_null(strstr(st[1].result, "alice"));
	assert_string_equal(st[2].state, "succeeded");
	assert_int_equal(r.attempts, 1);
	aw_run_free(&r);
	aw_run_steps_free(st, n);
	/* the token is used up: a replay is refused, even while the run waits
	 * again (the other run) or after it moved on */
	assert_int_equal(decide("ap-main", id, tok, NULL), AW_E_APPROVAL_REPLAY);
	if (KV) { /* the cluster shape remembered the jti in Redis too */
		aw_approval_claims c;
		aw_error err = {0};
		assert_int_equal(
			aw_approval_verify(KR, tok, "awooop", "ap-main", now_s(), &c, &err), AW_OK);
		char field[160], *v = NULL;
		snprintf(field, sizeof field, "jti.%s", c.jti);
		const char *vals[] = {id, field};
		aw_ctx ctx;
		as(&ctx, "ap-main");
		assert_int_equal(aw_kv_get(KV, &ctx, "approval", vals, 2, &v, &err), AW_OK);
		assert_non_null(v);
		assert_string_equal(v, "alice");
		free(v);
	}
	/* the audit trail: parked, approved (by alice, via the api), finished */
	aw_audit_row *rows = NULL;
	int nr = 0;
	aw_test_audit_rows("ap-main", "run.queued", 1000, &rows, &nr);
	int approved = 0;
	for (int i = 0; i < nr; i++)
		approved += strcmp(rows[i].target, id) == 0 &&
			    strstr(rows[i].payload, "\"approved\"") &&
			    strstr(rows[i].payload, "\"approver\":\"alice\"");
	aw_audit_rows_free(rows, nr);
	assert_int_equal(approved, 1);
	/* the other run: denied -> failed E-RUN-009 */
	assert_true(wait_state("ap-main", other, "waiting_approval", 5000));
	char *deny = mint("ap-main", other, "bob", "deny", 60);
	assert_int_equal(decide("ap-main", other, deny, NULL), AW_OK);
	get("ap-main", other, &r, NULL, NULL);
	assert_string_equal(r.state, "failed");
	assert_string_equal(r.error_code, "E-RUN-009");
	aw_run_free(&r);
	/* a decided run takes no more decisions */
	char *late = mint("ap-main", other, "carol", "approve", 60);
	assert_int_equal(decide("ap-main", other, late, NULL), AW_E_APPROVAL_STATE);
	free(wrong);
	free(tok);
	free(deny);
	free(late);
}

/* Another project's token and run are out of reach. */
static void test_isolation(void **state)
{
	(void)state;
	char id[40];
	submit("ap-main", PARK, id);
	assert_true(wait_state("ap-main", id, "waiting_approval", 5000));
	char *tok = mint("ap-main", id, "alice", "approve", 60);
	assert_int_equal(decide("ap-other", id, tok, NULL), AW_E_APPROVAL_AUDIENCE);
	char *theirs = mint("ap-other", id, "alice", "approve", 60);
	assert_int_equal(decide("ap-other", id, theirs, NULL), AW_E_RUN_NOT_FOUND);
	assert_int_equal(decide("ap-main", id, theirs, NULL), AW_E_APPROVAL_AUDIENCE);
	assert_int_equal(decide("ap-main", id, tok, NULL), AW_OK);
	free(tok);
	free(theirs);
}

/* Activates an approval policy for project (published by one principal,
 * approved by another under the platform default). */
static void set_policy(const char *project, const char *body_text)
{
	aw_ctx pub, appr, op;
	aw_test_ctx(&pub, project, AW_SCOPE_OPERATOR, "publisher");
	aw_test_ctx(&appr, project, AW_SCOPE_OPERATOR, "alice");
	aw_test_ctx(&op, project, AW_SCOPE_OPERATOR, "operator");
	json_t *body = json_loads(body_text, 0, NULL);
	aw_revision r = {0};
	aw_error err = {0};
	aw_activation act;
	aw_err e = aw_contract_create(C, S, &pub, "approval", AW_APPROVAL_CONTRACT, body, &r, &err);
	if (!e)
		e = aw_contract_publish(C, S, &pub, "approval", AW_APPROVAL_CONTRACT, r.revision_id,
					NULL, &err);
	if (!e)
		e = aw_contract_approve(C, S, &appr, "approval", AW_APPROVAL_CONTRACT,
					r.revision_id, NULL, &err);
	if (!e)
		e = aw_contract_activate(C, S, &op, "approval", AW_APPROVAL_CONTRACT, r.revision_id,
					 &act, &err);
	json_decref(body);
	aw_revision_clear(&r);
	if (e)
		fail_msg("policy: %s %s", aw_err_code(e), err.msg);
}

static void test_n_of_m(void **state)
{
	(void)state;
	set_policy("ap-nofm", "{\"approvers\":[\"alice\",\"bob\",\"carol\"],\"threshold\":2,"
			      "\"window_s\":3600,\"mode\":\"enforce\"}");
	char id[40];
	submit("ap-nofm", PARK, id);
	assert_true(wait_state("ap-nofm", id, "waiting_approval", 5000));
	char *m = mint("ap-nofm", id, "mallory", "approve", 60);
	assert_int_equal(decide("ap-nofm", id, m, NULL), AW_E_APPROVAL_APPROVER);
	char *a1 = mint("ap-nofm", id, "alice", "approve", 60);
	json_t *out = NULL;
	assert_int_equal(decide("ap-nofm", id, a1, &out), AW_OK);
	assert_false(json_is_true(json_object_get(out, "moved")));
	assert_int_equal(json_integer_value(json_object_get(out, "approvals")), 1);
	json_decref(out);
	char *a2 = mint("ap-nofm", id, "alice", "approve", 60);
	assert_int_equal(decide("ap-nofm", id, a2, NULL), AW_E_APPROVAL_DUP);
	/* a token living longer than the policy's window is refused: minting
	 * says so, and a hand-made one is refused at the decision */
	aw_ctx c;
	aw_test_ctx(&c, "ap-nofm", AW_SCOPE_READER, "bob");
	char *tok = NULL;
	aw_error err = {0};
	assert_int_equal(aw_approvals_mint(A, &c, id, "bob", "approve", 7200, &tok, NULL, &err),
			 AW_E_REQ_INVALID);
	/* the run reads while a vote is in (it answered 500: its history's last
	 * record, the vote, moved nothing) */
	json_t *view = NULL;
	as(&c, "ap-nofm");
	assert_int_equal(aw_run_view(S, &c, id, &view, &err), AW_OK);
	assert_string_equal(json_string_value(json_object_get(view, "state")), "waiting_approval");
	json_decref(view);
	aw_approval_claims cl = {0};
	snprintf(cl.iss, sizeof cl.iss, "awooop");
	snprintf(cl.aud, sizeof cl.aud, "ap-nofm");
	snprintf(cl.sub, sizeof cl.sub, "bob");
	snprintf(cl.run_id, sizeof cl.run_id, "%s", id);
	snprintf(cl.action, sizeof cl.action, "approve");
	cl.iat = cl.nbf = now_s();
	cl.exp = cl.iat + 7200;
	assert_int_equal(aw_approval_mint(KR, &cl, &tok, &err), AW_OK);
	assert_int_equal(decide("ap-nofm", id, tok, NULL), AW_E_APPROVAL_TIME);
	free(tok);
	assert_true(wait_state("ap-nofm", id, "waiting_approval", 10));
	char *b = mint("ap-nofm", id, "bob", "approve", 60);
	assert_int_equal(decide("ap-nofm", id, b, &out), AW_OK);
	assert_true(json_is_true(json_object_get(out, "moved")));
	assert_int_equal(json_integer_value(json_object_get(out, "approvals")), 2);
	json_decref(out);
	assert_true(wait_state("ap-nofm", id, "succeeded", 5000));
	free(m);
	free(a1);
	free(a2);
	free(b);
}

/* ---- the approvers themselves (issue 40): a decision counts for whoever
 * presents it, never for a name another wrote; a key minted by the submitter
 * or by another approver (down a chain) is that person's puppet */
static void key_by(const char *project, const char *by, const char *name)
{
	aw_ctx c;
	aw_test_ctx(&c, project, AW_SCOPE_PROJECT_ADMIN, by);
	aw_apikey k;
	char secret[AW_KEY_SECRET_LEN + 1];
	aw_error err = {0};
	if (aw_key_create(S, &c, name, AW_SCOPE_OPERATOR, &k, secret, &err))
		fail_msg("key %s by %s: %s", name, by, err.msg);
}

static void test_sock_puppets(void **state)
{
	(void)state;
	set_policy("ap-sock", "{\"approvers\":[\"alice\",\"bob\",\"carol\",\"dave\"],"
			      "\"threshold\":2,\"window_s\":3600,\"mode\":\"enforce\"}");
	key_by("ap-sock", "root", "alice");
	key_by("ap-sock", "alice", "bob");    /* alice's puppet */
	key_by("ap-sock", "tester", "carol"); /* the submitter's (as() submits) */
	key_by("ap-sock", "root", "dave");
	char id[40];
	submit("ap-sock", PARK, id);
	assert_true(wait_state("ap-sock", id, "waiting_approval", 5000));
	/* the attack: a project-admin mints two approvers' votes */
	aw_ctx adm;
	aw_test_ctx(&adm, "ap-sock", AW_SCOPE_PROJECT_ADMIN, "mallory");
	char *tok = NULL;
	aw_error err = {0};
	assert_int_equal(aw_approvals_mint(A, &adm, id, "alice", "approve", 60, &tok, NULL, &err),
			 AW_E_APPROVAL_OTHER);
	assert_null(tok);
	/* a token presented with another principal's key */
	char *a = mint("ap-sock", id, "alice", "approve", 60);
	aw_ctx keyed;
	aw_test_ctx(&keyed, "ap-sock", AW_SCOPE_OPERATOR, "dave");
	snprintf(keyed.key_id, sizeof keyed.key_id, "%s", "01a24285-d60a-7345-bccd-e7e5248a597e");
	json_t *out = NULL;
	assert_int_equal(aw_approvals_decide_token(A, &keyed, id, a, &out, &err),
			 AW_E_APPROVAL_OTHER);
	/* puppets of an approver and of the submitter do not decide */
	char *b = mint("ap-sock", id, "bob", "approve", 60);
	char *c = mint("ap-sock", id, "carol", "approve", 60);
	assert_int_equal(decide("ap-sock", id, a, &out), AW_OK);
	assert_false(json_is_true(json_object_get(out, "moved")));
	json_decref(out);
	assert_int_equal(decide("ap-sock", id, b, NULL), AW_E_APPROVAL_APPROVER);
	assert_int_equal(decide("ap-sock", id, c, NULL), AW_E_APPROVAL_APPROVER);
	assert_true(wait_state("ap-sock", id, "waiting_approval", 10));
	/* a second person: moved */
	aw_approval_decision d = {.run_id = id, .principal = "dave", .decision = "approve"};
	assert_int_equal(aw_approvals_decide(A, &keyed, &d, &out, &err), AW_OK);
	assert_true(json_is_true(json_object_get(out, "moved")));
	assert_int_equal(json_integer_value(json_object_get(out, "approvals")), 2);
	json_decref(out);
	assert_true(wait_state("ap-sock", id, "succeeded", 5000));
	free(a);
	free(b);
	free(c);
}

typedef struct {
	const char *run;
	char *tok;
	aw_err e;
	int moved;
} racer;

static void *race(void *p)
{
	racer *r = p;
	json_t *out = NULL;
	r->e = decide("ap-race", r->run, r->tok, &out);
	r->moved = json_is_true(json_object_get(out, "moved"));
	json_decref(out);
	return NULL;
}

/* 32 approvers decide one run (threshold 1) at once: one transition. */
static void test_32_concurrent(void **state)
{
	(void)state;
	char id[40];
	submit("ap-race", PARK, id);
	assert_true(wait_state("ap-race", id, "waiting_approval", 5000));
	racer rs[32];
	pthread_t th[32];
	for (int i = 0; i < 32; i++) {
		char sub[16];
		snprintf(sub, sizeof sub, "u%d", i);
		rs[i] = (racer){id, mint("ap-race", id, sub, "approve", 60), AW_OK, 0};
	}
	for (int i = 0; i < 32; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race, &rs[i]), 0);
	int moved = 0, refused = 0;
	for (int i = 0; i < 32; i++) {
		pthread_join(th[i], NULL);
		moved += rs[i].e == AW_OK && rs[i].moved;
		refused += rs[i].e == AW_E_APPROVAL_STATE || rs[i].e == AW_E_STORE_BUSY;
		if (rs[i].e && rs[i].e != AW_E_APPROVAL_STATE && rs[i].e != AW_E_STORE_BUSY)
			fail_msg("racer %d: %s", i, aw_err_code(rs[i].e));
		free(rs[i].tok);
	}
	assert_int_equal(moved, 1);
	assert_int_equal(refused, 31);
	aw_audit_row *rows = NULL;
	int nr = 0;
	aw_test_audit_rows("ap-race", "run.queued", 1000, &rows, &nr);
	int approved = 0;
	for (int i = 0; i < nr; i++)
		approved +=
			strcmp(rows[i].target, id) == 0 && strstr(rows[i].payload, "\"approved\"");
	aw_audit_rows_free(rows, nr);
	assert_int_equal(approved, 1);
	assert_true(wait_state("ap-race", id, "succeeded", 5000));
}

/* Suggest mode: the suggestion and what would have run are recorded, the
 * http step is never executed, the run ends `suggested`. */
static void test_suggest(void **state)
{
	(void)state;
	set_policy("ap-sugg", "{\"approvers\":[\"alice\"],\"threshold\":1,\"window_s\":600,"
			      "\"mode\":\"suggest\"}");
	char body[512], id[40];
	snprintf(body, sizeof body,
		 "{\"workflow\":[{\"kind\":\"approval\",\"args\":{\"summary\":\"pay\"}},"
		 "{\"kind\":\"http\",\"args\":{\"method\":\"POST\",\"url\":"
		 "\"http://127.0.0.1:%d/pay\"}}]}",
		 aw_counter_port(CNT));
	submit("ap-sugg", body, id);
	assert_true(wait_state("ap-sugg", id, "suggested", 5000));
	int64_t req = 0, keys = 0, unkeyed = 0;
	aw_counter_totals(CNT, &req, &keys, &unkeyed);
	assert_int_equal(req, 0);
	aw_run r;
	aw_run_step *st = NULL;
	int n = 0;
	get("ap-sugg", id, &r, &st, &n);
	assert_int_equal(n, 1);
	json_t *res = json_loads(st[0].result, 0, NULL);
	assert_true(json_is_true(json_object_get(res, "suggested")));
	json_decref(res);
	assert_non_null(strstr(st[0].result, "\"would_run\""));
	assert_non_null(strstr(st[0].result, "/pay"));
	assert_non_null(r.finished_at[0] ? r.finished_at : NULL);
	aw_run_free(&r);
	aw_run_steps_free(st, n);
}

/* A run whose approval window closed while it waited fails (E-RUN-010) at
 * the next reaper pass; no decision moves it afterwards. */
static void test_window_expiry(void **state)
{
	(void)state;
	char id[40];
	submit("ap-main", PARK, id);
	assert_true(wait_state("ap-main", id, "waiting_approval", 5000));
	char sql[512];
	if (aw_fx.db.pg)
		snprintf(
			sql, sizeof sql,
			"UPDATE %%Trun_steps SET result = jsonb_set(result, '{expires_at}',"
			" '\"2000-01-01T00:00:00.000Z\"') WHERE run_id = '%s' AND state = 'waiting'",
			id);
	else
		snprintf(sql, sizeof sql,
			 "UPDATE %%Trun_steps SET result = json_set(result, '$.expires_at',"
			 " '2000-01-01T00:00:00.000Z') WHERE run_id = '%s' AND state = 'waiting'",
			 id);
	aw_test_raw_sql(&aw_fx.db, sql);
	int n = 0;
	aw_error err = {0};
	assert_int_equal(aw_run_reap(S, 1000, 60000, &n, &err), AW_OK);
	assert_true(wait_state("ap-main", id, "failed", 5000));
	aw_run r;
	aw_run_step *st = NULL;
	int ns = 0;
	get("ap-main", id, &r, &st, &ns);
	assert_string_equal(r.error_code, "E-RUN-010");
	assert_string_equal(st[ns - 1].state, "failed");
	assert_string_equal(st[ns - 1].error_code, "E-RUN-010");
	aw_run_free(&r);
	aw_run_steps_free(st, ns);
	char *tok = mint("ap-main", id, "alice", "approve", 60);
	assert_int_equal(decide("ap-main", id, tok, NULL), AW_E_APPROVAL_STATE);
	free(tok);
}

/* ------------------------------------------------------------ fixture */

static int setup(void **state)
{
	(void)state;
	const char *const projects[] = {"ap-main", "ap-other", "ap-nofm", "ap-race",
					"ap-sugg", "ap-sock",  NULL};
	if (aw_test_store_up(projects))
		return -1;
	aw_error err = {0};
	if (aw_keyring_from_env(KEYS, &KR, &err) || aw_contracts_new(KR, &C, &err))
		return -1;
	const char *redis = getenv("AWOOOP_TEST_REDIS_URL");
	if (aw_fx.db.pg && !redis)
		aw_test_skip_suite("the postgres variant needs Redis: AWOOOP_TEST_REDIS_URL is not "
				   "set (`make test` starts one)");
	if (aw_fx.db.pg && aw_kv_open(redis, S, NULL, &KV, &err)) {
		fprintf(stderr, "the Redis of AWOOOP_TEST_REDIS_URL: %s\n", err.msg);
		return -1;
	}
	aw_approvals_opts o = {.store = S, .contracts = C, .kv = KV};
	if (aw_approvals_new(&o, KR, &A, &err))
		return -1;
	aw_approvals_register_executor(A);
	aw_egress_grant("ap-sugg", NULL);
	CNT = aw_counter_start(0, 0);
	aw_worker_opts wo = {.concurrency = 2, .batch = 8, .poll_ms = 50};
	return CNT && aw_worker_start(S, &wo, &W, &err) == AW_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	aw_worker_stop(W);
	aw_approvals_free(A);
	aw_kv_close(KV);
	aw_counter_stop(CNT);
	aw_contracts_free(C);
	aw_keyring_free(KR);
	aw_test_store_down();
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7515_a1),    cmocka_unit_test(test_pitfalls),
		cmocka_unit_test(test_mint_rotation), cmocka_unit_test(test_park_approve_resume),
		cmocka_unit_test(test_isolation),     cmocka_unit_test(test_n_of_m),
		cmocka_unit_test(test_sock_puppets),  cmocka_unit_test(test_32_concurrent),
		cmocka_unit_test(test_suggest),	      cmocka_unit_test(test_window_expiry),
	};
	return AW_TEST_MAIN("approval", tests, setup, teardown);
}
