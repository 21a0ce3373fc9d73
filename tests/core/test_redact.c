/*
 * test_redact.c - the redaction engine: every class caught (positive cases),
 * look-alikes left alone (negative cases), secrets split across stream chunks,
 * JSON mode always valid JSON with sensitive fields replaced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "awooop/redact.h"
#include "core/redact_hook.h"

static char *red(const char *in)
{
	char *out = aw_redact_str(in);
	assert_non_null(out);
	return out;
}

/* The secret must vanish, the marker of its class must appear, and the text
 * around it (prefix and suffix markers) must survive. */
static void caught(const char *secret, const char *label, const char *before, const char *after)
{
	char in[16384], want[128];
	snprintf(in, sizeof in, "%s%s%s", before, secret, after);
	char *out = red(in);
	snprintf(want, sizeof want, "[REDACTED:%s]", label);
	if (strstr(out, secret) || !strstr(out, want))
		fail_msg("not redacted as %s:\n in:  %s\n out: %s", label, in, out);
	if (strncmp(out, before, strlen(before)) != 0)
		fail_msg("prefix damaged:\n in:  %s\n out: %s", in, out);
	free(out);
}

static void untouched(const char *text)
{
	char *out = red(text);
	if (strcmp(out, text) != 0)
		fail_msg("false positive:\n in:  %s\n out: %s", text, out);
	free(out);
}

static void test_positive_each_class(void **state)
{
	caught("jane.doe+ops@example.co.uk", "email", "contact ", " today");
	caught("+14155552671", "phone", "call ", " now");
	caught("+44 20 7946 0958", "phone", "tel: ", ".");
	caught("(415) 555-2671", "phone", "office ", " ext");
	caught("415-555-2671", "phone", "cell ", "");
	caught("020 7946 0958", "phone", "uk ", "");
	caught("4111 1111 1111 1111", "card", "card ", " exp 12/29");
	caught("5500-0000-0000-0004", "card", "mc ", "");
	caught("378282246310005", "card", "amex ", "");
	caught("3782 822463 10005", "card", "amex ", ""); /* 4-6-5 */
	caught("4111111111111111", "card", "{\"pan\":\"", "\"}");
	caught("4111111111111111", "card", "{\"card\":\"", "\"}");
	caught("6011-1111-1111-1117", "card", "discover ", ".");
	caught("2223003122003222", "card", "mc2 ", " ok"); /* Mastercard 2-series */
	/* a phone whose '+' (or '(') ends a 48-byte scan step and whose digits come
	 * in the next one, after text without any digit: every offset */
	for (int pad = 0; pad < 100; pad++) {
		char before[160];
		memset(before, 'x', (size_t)pad);
		snprintf(before + pad, sizeof before - (size_t)pad, " note = '");
		caught("+14155552671", "phone", before, "' AND id > 1931369057");
		caught("(415) 555-2671", "phone", before, "' end");
	}
	caught("192.168.10.254", "ipv4", "from ", ":443");
	caught("2001:db8:85a3::8a2e:370:7334", "ipv6", "from ", " port");
	caught("fe80::1", "ipv6", "link ", ".");
	caught("2001:0db8:0000:0000:0000:ff00:0042:8329", "ipv6", "[", "]");
	caught("AKIAIOSFODNN7EXAMPLE", "aws_access_key_id", "key=", "");
	caught("ASIAY34FZKBOKMUTVV7A", "aws_access_key_id", "id ", " ");
	caught("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_key",
	       "aws_secret_access_key = ", "\n");
	caught("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", "github_token", "token ", "");
	caught("gho_16C7e42F292c6912E7710c838347Ae178B4a", "github_token", "", "");
	caught("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234",
	       "github_token", "pat ", "");
	caught("xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token", "slack ",
	       "");
	caught("xapp-1-A0123456789-1234567890123-abcdef0123456789", "slack_token", "", "");
	caught("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
	       "slack_webhook", "post to ", " please");
	caught("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
	       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	       "jwt", "token ", " end");
	caught("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
	       "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n"
	       "-----END RSA PRIVATE KEY-----",
	       "private_key", "key:\n", "\nafter");
	caught("c2VjcmV0LXRva2VuLXZhbHVlLTEyMw", "authorization", "Authorization: Bearer ", "\r\n");
	caught("dXNlcjpwYXNzd29yZA==", "authorization", "authorization: Basic ", "");
	caught("alice:s3cr3t-pw", "url_credentials", "postgres://", "@db.internal:5432/app");
	caught("hunter2hunter2", "secret_assignment", "password=", " next");
	caught("sk-live-abc123", "secret_assignment", "{\"api_key\": \"", "\"}");
	caught("Zx9!qw", "secret_assignment", "DB_PASSWORD: ", "\n");
	caught("awk_HZpoKRzdLSXUjhp3JiTUc66JzdXmJiHlaCOpJqXZw14", "awooop_key", "key ", ".");
}

static void test_negative_lookalikes(void **state)
{
	untouched("4111 1111 1111 1112");	  /* Luhn-invalid */
	untouched("order 1234567890123 shipped"); /* 13 digits, not Luhn, starts 1 */
	untouched("ts=1795946067123 ok");	  /* epoch ms */
	untouched("2026-11-29T09:54:27.123Z INFO request handled in 3ms status=200");
	untouched("version 10.0.1 released; 999.1.2.3 is not an address");
	untouched("at 10:00:00 the job ran; ratio 3:2:1");
	untouched("std::vector<int> and foo::bar()");
	untouched("AKIAIOSFODNN7EXAMPL"); /* 19 chars */
	untouched("ghp_short");
	untouched("xoxb-short");
	untouched("eyJhbGciOiJIUzI1NiJ9 alone"); /* one segment */
	untouched("-----BEGIN PUBLIC KEY-----");
	untouched("user@localhost"); /* no TLD */
	untouched("prompt_tokens=1234 max_tokens: 4096 tokenizer=bpe");
	untouched("https://example.com/path?q=1");
	untouched("password policy: [REDACTED:x]");
	untouched("");
	/* ids and numbers that contain Luhn-valid digit runs but are no card */
	untouched("run 01a23090-7224-7278-8c84-81841237ee3d done");	  /* UUIDv7 */
	untouched("{\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\"}"); /* hex */
	untouched("{\"trace_id\":\"a4111111111111111b36a3ce929d0e0e\"}"); /* hex, digit run */
	untouched("request_id=01a[0-9]-a741-9b139ef31201 4111111111111111abc");
	untouched("http_requests_total{code=\"200\"} 4027 1395066363000"); /* value + ts */
	untouched("http_requests_total 4111 111111111111");		   /* not 4-4-4-4 */
	untouched("amount 4111111111111111.25 EUR");			   /* a decimal */
	untouched("span 4111-1111-1111-1111-9999");			   /* a longer id */
	untouched("id 9111111111111111 and 1111111111111111 no issuer");
	untouched("digits 4111 1111-1111 1111 mixed separators");
	untouched("sha 4111111111111111_suffix");
	untouched("{\"span_id\":\"4111111111111111\"}"); /* an all-digit hex id */
	untouched("order_id=4111111111111111 traceId: 4111111111111111");
}

static void test_stats_and_idempotent(void **state)
{
	aw_redact_stats st = {0};
	const char *in = "a@b.io and c@d.io and 4111111111111111";
	char *out = NULL;
	size_t n;
	assert_int_equal(aw_redact_text(in, strlen(in), &out, &n, &st), AW_OK);
	assert_int_equal(st.count[AW_RC_EMAIL], 2);
	assert_int_equal(st.count[AW_RC_CARD], 1);
	assert_int_equal(n, strlen(out));
	char *again = red(out); /* redacting redacted text changes nothing */
	assert_string_equal(again, out);
	free(again);
	free(out);
}

typedef struct {
	char *buf;
	size_t len;
} sinkbuf;

static int sink(void *ud, const char *d, size_t n)
{
	sinkbuf *s = ud;
	s->buf = realloc(s->buf, s->len + n + 1);
	memcpy(s->buf + s->len, d, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return 0;
}

static void test_stream_split_secrets(void **state)
{
	/* every secret at every split point across two chunks, plus tiny chunks */
	const char *secrets[] = {"AKIAIOSFODNN7EXAMPLE", "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",
				 "jane@example.com", "4111 1111 1111 1111",
				 "awk_HZpoKRzdLSXUjhp3JiTUc66JzdXmJiHlaCOpJqXZw14"};
	/* Documents longer than the stream's flush threshold (128 KiB). A flush
	 * emits all but the last 10 KiB (HOLD), so cutting the first chunk HOLD
	 * bytes after a point inside the secret puts the flush boundary there;
	 * also cut around the secret itself. */
	static char doc[200000];
	const size_t hold = 10240, pre = 140000;
	for (size_t si = 0; si < sizeof secrets / sizeof secrets[0]; si++) {
		const char *sec = secrets[si];
		size_t sl = strlen(sec);
		memset(doc, 'x', sizeof doc);
		doc[pre] = ' ';
		memcpy(doc + pre + 1, sec, sl);
		doc[pre + 1 + sl] = ' ';
		size_t total = pre + sl + 2 + 30000;
		for (int variant = 0; variant < 2; variant++) {
			for (size_t j = 0; j <= sl + 2; j++) {
				size_t cut = pre + j + (variant ? 0 : hold);
				sinkbuf out = {0};
				aw_redact_stream *s = aw_redact_stream_new(sink, &out, NULL);
				assert_int_equal(aw_redact_stream_feed(s, doc, cut), AW_OK);
				assert_int_equal(aw_redact_stream_feed(s, doc + cut, total - cut),
						 AW_OK);
				assert_int_equal(aw_redact_stream_finish(s), AW_OK);
				/* no piece of the secret (its first 8 bytes) may survive */
				if (memmem(out.buf, out.len, sec, 8) ||
				    !strstr(out.buf, "[REDACTED:"))
					fail_msg("cut %zu (variant %d) leaked %s", cut, variant,
						 sec);
				free(out.buf);
			}
		}
	}
	/* byte-at-a-time feeding, with a private key block far larger than a chunk */
	char kdoc[8192];
	int n = snprintf(kdoc, sizeof kdoc, "start %s end\n-----BEGIN PRIVATE KEY-----\n",
			 secrets[0]);
	for (int i = 0; i < 60; i++)
		n += snprintf(kdoc + n, sizeof kdoc - (size_t)n,
			      "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo%02d\n", i);
	n += snprintf(kdoc + n, sizeof kdoc - (size_t)n, "-----END PRIVATE KEY-----\ntail");
	sinkbuf out = {0};
	aw_redact_stream *s = aw_redact_stream_new(sink, &out, NULL);
	for (int i = 0; i < n; i++)
		assert_int_equal(aw_redact_stream_feed(s, kdoc + i, 1), AW_OK);
	assert_int_equal(aw_redact_stream_finish(s), AW_OK);
	assert_null(strstr(out.buf, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo"));
	assert_null(strstr(out.buf, secrets[0]));
	assert_non_null(strstr(out.buf, "start [REDACTED:aws_access_key_id] end"));
	assert_non_null(strstr(out.buf, "\ntail"));
	free(out.buf);
	/* an unterminated key block is redacted to the end, never emitted raw */
	out = (sinkbuf){0};
	s = aw_redact_stream_new(sink, &out, NULL);
	const char *open = "x -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yBhUDf";
	assert_int_equal(aw_redact_stream_feed(s, open, strlen(open)), AW_OK);
	assert_int_equal(aw_redact_stream_finish(s), AW_OK);
	assert_string_equal(out.buf, "x [REDACTED:private_key]");
	free(out.buf);
}

static void test_json_mode(void **state)
{
	json_error_t je;
	json_t *doc = json_loads(
		"{\"user\":\"jane@example.com\",\"password\":\"x\",\"db_password\":{\"nested\":1},"
		"\"Authorization\":\"Bearer abcdefghijklmnop\",\"prompt_tokens\":123,"
		"\"list\":[\"AKIAIOSFODNN7EXAMPLE\",5,null],\"note\":\"quote \\\" and \\\\ kept\","
		"\"jane@example.com\":\"key holds pii\",\"token\":null}",
		0, &je);
	assert_non_null(doc);
	aw_redact_stats st = {0};
	assert_int_equal(aw_redact_json(doc, &st), AW_OK);
	char *s = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT);
	json_t *back = json_loads(s, 0, &je); /* still valid JSON */
	assert_non_null(back);
	json_decref(back);
	assert_null(strstr(s, "jane@example.com"));
	assert_null(strstr(s, "AKIAIOSFODNN7EXAMPLE"));
	assert_null(strstr(s, "abcdefghijklmnop"));
	assert_string_equal(json_string_value(json_object_get(doc, "password")),
			    "[REDACTED:sensitive_field]");
	assert_string_equal(json_string_value(json_object_get(doc, "db_password")),
			    "[REDACTED:sensitive_field]");
	assert_int_equal(json_integer_value(json_object_get(doc, "prompt_tokens")), 123);
	assert_true(json_is_null(json_object_get(doc, "token")));
	assert_string_equal(json_string_value(json_object_get(doc, "note")),
			    "quote \" and \\ kept");
	assert_non_null(json_object_get(doc, "[REDACTED:email]"));
	assert_int_equal(st.count[AW_RC_SENSITIVE_FIELD], 3);
	free(s);
	json_decref(doc);
	assert_true(aw_redact_sensitive_key("X-Api-Key"));
	assert_true(aw_redact_sensitive_key("client_secret"));
	assert_false(aw_redact_sensitive_key("max_tokens"));
	assert_false(aw_redact_sensitive_key("token_count"));
}

static void test_binary_input(void **state)
{
	char buf[4096];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (char)(i * 131 + 7);
	memcpy(buf + 1000, " AKIAIOSFODNN7EXAMPLE ", 22);
	char *out = NULL;
	size_t n = 0;
	assert_int_equal(aw_redact_text(buf, sizeof buf, &out, &n, NULL), AW_OK);
	assert_null(memmem(out, n, "AKIAIOSFODNN7EXAMPLE", 20));
	free(out);
}

/* The SIMD mask builder and the portable scalar one (non-x86 targets) must
 * give the same output on every input: digit-, separator- and colon-rich text
 * with secrets at every alignment. */
static void test_scalar_path_same_output(void **state)
{
	static const char *const pieces[] = {"4111 1111 1111 1111",
					     "+14155552671",
					     "(415) 555-2671",
					     "415-555-2671",
					     "020 7946 0958",
					     "10.20.30.40",
					     "2001:db8::8a2e:370:7334",
					     "fe80::1",
					     "378282246310005",
					     "12345 678901",
					     " ",
					     "-",
					     ".",
					     ":",
					     "\n",
					     "a",
					     "_",
					     "2026-12-01T10:11:12.123Z",
					     "01a23090-7224-7278-8c84-81841237ee3d",
					     "(",
					     ")",
					     "+0",
					     "jane@example.com"};
	const size_t np = sizeof pieces / sizeof pieces[0];
	uint64_t x = 88172645463325252ULL;
	for (int round = 0; round < 200; round++) {
		char in[4096];
		size_t n = 0;
		while (n < sizeof in - 64) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			const char *p = pieces[x % np];
			size_t k = strlen(p);
			memcpy(in + n, p, k);
			n += k;
		}
		in[n] = '\0';
		char *simd = red(in);
		aw_redact_test_force_scalar(1);
		char *scalar = red(in);
		aw_redact_test_force_scalar(0);
		if (strcmp(simd, scalar) != 0)
			fail_msg("scalar and SIMD paths differ on:\n%s\nsimd:   %s\nscalar: %s", in,
				 simd, scalar);
		free(simd);
		free(scalar);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalar_path_same_output),
		cmocka_unit_test(test_positive_each_class),
		cmocka_unit_test(test_negative_lookalikes),
		cmocka_unit_test(test_stats_and_idempotent),
		cmocka_unit_test(test_stream_split_secrets),
		cmocka_unit_test(test_json_mode),
		cmocka_unit_test(test_binary_input),
	};
	return cmocka_run_group_tests_name("redact", tests, NULL, NULL);
}
