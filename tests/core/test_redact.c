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
#include <time.h>

#include <cmocka.h>

#include "support.h"

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
	/* domains that start with digits; an @ without a domain before one */
	caught("ops@123.example.com", "email", "to ", "");
	caught("x_y@1-2-3.4.example", "email", "<", ">");
	caught("a@b.io", "email", "meta@32473 ", "");
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
	/* GitHub's documentation example: the right shape, not its checksum */
	untouched("gho_16C7e42F292c6912E7710c838347Ae178B4a");
	/* a fine-grained token's shape filled with the alphabet in order */
	untouched(
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234");
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

/* ------------------------------------------------- generated credentials
 * Every token below is made here from its provider's documented shape:
 * random characters of the right alphabet and length, checksums computed.
 * None is a real key. Template: literal text, {Xn} = n random characters of
 * alphabet X, {C} = the base62 CRC32 of the 30 characters before it (GitHub,
 * npm). */
static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint32_t rnd(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static const char *alphabet(char x)
{
	switch (x) {
	case 'A': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	case 'l': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	case 'U': return "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	case 'h': return "0123456789abcdef";
	case 'H': return "0123456789ABCDEF";
	case 'u': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	case 'b': return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	case 'd': return "0123456789";
	case 'z': return "abcdefghijklmnopqrstuvwxyz0123456789";
	case 'B': return "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"; /* bech32, upper case */
	default: fail_msg("no alphabet %c", x); return "";
	}
}

/* out gets the token of template t (malloc'd) */
static char *gen_token(const char *t)
{
	char *out = malloc(8192);
	size_t n = 0;
	assert_non_null(out);
	for (const char *p = t; *p;) {
		if (p[0] == '{' && p[1] == 'C' && p[2] == '}') {
			char crc[7];
			assert_true(n >= 30);
			redact_base62_crc(out + n - 30, 30, crc);
			memcpy(out + n, crc, 6);
			n += 6;
			p += 3;
		} else if (p[0] == '{') {
			const char *a = alphabet(p[1]);
			size_t al = strlen(a);
			char *e;
			long k = strtol(p + 2, &e, 10);
			assert_true(*e == '}' && k > 0 && n + (size_t)k < 8000);
			for (long i = 0; i < k; i++)
				out[n++] = a[rnd() % al];
			p = e + 1;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

static char *b64(const unsigned char *in, size_t n, int pad)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc(n * 4 / 3 + 8);
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = a[v >> 6 & 63];
		else if (pad)
			out[o++] = '=';
		if (i + 2 < n)
			out[o++] = a[v & 63];
		else if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static const struct {
	const char *tmpl, *label, *before, *after;
} provider_cases[] = {
	/* AI providers */
	{"sk-proj-{u74}T3BlbkFJ{u74}", "openai_key", "OPENAI_API_KEY=", "\n"},
	{"sk-svcacct-{u74}T3BlbkFJ{u74}", "openai_key", "{\"key\": \"", "\"}"},
	{"sk-admin-{u58}T3BlbkFJ{u58}", "openai_key", "Authorization: Bearer ", "\r\n"},
	{"sk-{A20}T3BlbkFJ{A20}", "openai_key", "legacy ", " key"},
	{"sk-ant-api03-{u93}AA", "anthropic_key", "x-api-key: ", "\n"},
	{"sk-ant-admin01-{u93}AA", "anthropic_key", "admin ", ""},
	{"AIzaSy{u33}", "google_api_key",
	 "https://generativelanguage.googleapis.com/v1/models?key=", "&alt=sse"},
	{"GOCSPX-{u28}", "google_oauth", "client secret ", "."},
	{"ya29.a0{u150}", "google_oauth", "access ", " expires"},
	{"hf_{l34}", "huggingface_token", "HF_TOKEN=", ""},
	{"api_org_{l34}", "huggingface_token", "org ", ""},
	{"gsk_{A52}", "groq_key", "GROQ_API_KEY=", ""},
	{"pplx-{A48}", "perplexity_key", "key ", ""},
	{"r8_{A37}", "replicate_token", "REPLICATE_API_TOKEN=", ""},
	{"xai-{A80}", "xai_key", "xai ", ""},
	{"sk-or-v1-{h64}", "openrouter_key", "or ", ""},
	{"lsv2_pt_{h32}_{h10}", "langsmith_key", "LANGSMITH_API_KEY=", ""},
	/* clouds */
	{"ASIA{U16}", "aws_access_key_id", "session key ", ""},
	{"AKIA{U16}", "aws_access_key_id", "\"AccessKeyId\": \"", "\""},
	{"IQoJb3JpZ2luX2Vj{b300}", "aws_session_token", "AWS_SESSION_TOKEN=", "\n"},
	{"FwoGZXIvYXdzE{b200}", "aws_session_token", "token ", ""},
	{"{A3}8Q~{A34}", "azure_client_secret", "AZURE_CLIENT_SECRET=", ""},
	{"{b86}==", "azure_storage_key",
	 "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=",
	 ";EndpointSuffix=core.windows.net"},
	/* source hosts */
	{"ghp_{A30}{C}", "github_token", "token ", ""},
	{"gho_{A30}{C}", "github_token", "", ""},
	{"ghu_{A30}{C}", "github_token", "user ", ""},
	{"ghs_{A30}{C}", "github_token", "GITHUB_TOKEN=", ""},
	{"ghr_{A30}{C}", "github_token", "refresh ", ""},
	{"github_pat_11{U20}_{A59}", "github_token", "pat ", ""},
	{"glpat-{u20}", "gitlab_token", "PRIVATE-TOKEN: ", ""},
	{"glpat-{u27}.01.{z9}", "gitlab_token", "token ", " ok"},
	{"gldt-{u20}", "gitlab_token", "deploy ", ""},
	{"glrt-{u20}", "gitlab_token", "runner ", ""},
	{"glptt-{h40}", "gitlab_token", "trigger ", ""},
	{"ATBB{A28}{H8}", "bitbucket_token", "app password ", ""},
	{"ATCTT3xFfGN0{u100}={H8}", "bitbucket_token", "repo token ", ""},
	{"ATATT3xFfGF0{u170}={H8}", "atlassian_token", "jira ", ""},
	/* chat */
	{"xoxb-{d12}-{d13}-{A24}", "slack_token", "", ""},
	{"xoxe.xoxp-1-{A140}", "slack_token", "refresh ", ""},
	{"https://hooks.slack.com/workflows/T{U10}/A{U10}/{d18}/{A24}", "slack_webhook", "post ",
	 " now"},
	{"https://hooks.slack.com/triggers/T{U10}/{d13}/{h32}", "slack_webhook", "", ""},
	{"https://hooks.slack.com/services/T{U10}/B{U10}/{A24}", "slack_webhook", "", ""},
	{"https://discord.com/api/webhooks/1{d18}/{u68}", "discord_webhook", "hook ", ""},
	{"{d10}:AA{u33}", "telegram_bot_token", "TELEGRAM_BOT_TOKEN=", ""},
	{"{d9}:AA{u33}", "telegram_bot_token", "https://api.telegram.org/bot", "/getMe"},
	/* payments */
	{"sk_live_{A24}", "stripe_key", "STRIPE_SECRET_KEY=", ""},
	{"rk_live_{A99}", "stripe_key", "restricted ", ""},
	{"sk_test_{A99}", "stripe_key", "", ""},
	{"whsec_{A32}", "stripe_key", "webhook ", ""},
	{"EAAA{u60}", "square_token", "square ", ""},
	{"sq0csp-{u43}", "square_token", "", ""},
	{"access_token$production${z16}${h32}", "braintree_token", "bt ", ""},
	/* the rest of a scanner's list */
	{"npm_{A30}{C}", "npm_token", "//registry.npmjs.org/:_authToken=", "\n"},
	{"pypi-AgEIcHlwaS5vcmc{u120}", "pypi_token", "password = ", ""},
	{"SK{h32}", "twilio_key", "twilio ", ""},
	{"SG.{u22}.{u43}", "sendgrid_key", "SENDGRID_API_KEY=", ""},
	{"key-{h32}", "mailgun_key", "mailgun ", ""},
	{"{h32}", "datadog_key", "DD_API_KEY=", ""},
	{"{h40}", "datadog_key", "DD-APPLICATION-KEY: ", ""},
	{"NRAK-{U27}", "newrelic_key", "NEW_RELIC_API_KEY=", ""},
	{"{h36}NRAL", "newrelic_key", "license ", ""},
	{"https://{h32}@o{d6}.ingest.sentry.io/{d7}", "sentry_dsn", "SENTRY_DSN=", ""},
	{"http://{h32}:{h32}@sentry.internal:9000/{d3}", "sentry_dsn", "dsn ", " (legacy)"},
	{"sntryu_{h64}", "sentry_token", "", ""},
	{"sntrys_eyJ{b150}_{b43}", "sentry_token", "SENTRY_AUTH_TOKEN=", ""},
	{"shpat_{h32}", "shopify_token", "X-Shopify-Access-Token: ", ""},
	{"shpss_{h32}", "shopify_token", "", ""},
	{"dp.pt.{A43}", "doppler_token", "DOPPLER_TOKEN=", ""},
	{"hvs.CAES{u90}", "vault_token", "VAULT_TOKEN=", ""},
	{"hvb.AAAAAQ{u130}", "vault_token", "batch ", ""},
	{"ops_eyJ{u400}", "onepassword_token", "OP_SERVICE_ACCOUNT_TOKEN=", ""},
	{"AGE-SECRET-KEY-1{B58}", "age_secret_key", "# created: 2026-12-01\n", "\n"},
	{"dop_v1_{h64}", "digitalocean_token", "", ""},
	{"lin_api_{A40}", "linear_key", "", ""},
	{"PMAK-{h24}-{h34}", "postman_key", "", ""},
	{"glsa_{A32}_{h8}", "grafana_token", "", ""},
	{"glc_eyJ{b120}", "grafana_token", "", ""},
	{"dapi{h32}", "databricks_token", "DATABRICKS_TOKEN=", ""},
	{"sbp_{h40}", "supabase_token", "", ""},
	{"pul-{h40}", "pulumi_token", "PULUMI_ACCESS_TOKEN=", ""},
};

/* Every class on 20 generated tokens each, in the context it is leaked in
 * (the provider's class wins over secret_assignment / authorization). */
static void test_provider_credentials(void **state)
{
	for (size_t i = 0; i < sizeof provider_cases / sizeof *provider_cases; i++) {
		for (int r = 0; r < 20; r++) {
			char *tok = gen_token(provider_cases[i].tmpl);
			char *after = gen_token(provider_cases[i].after[0] ? provider_cases[i].after
									   : " ");
			caught(tok, provider_cases[i].label, provider_cases[i].before, after);
			free(after);
			free(tok);
		}
	}
	for (int r = 0; r < 20; r++) {
		/* AWS Bedrock API keys: long-term ABSK + base64("BedrockAPIKey-..."),
		 * short-term bedrock-api-key- + base64(a presigned URL) */
		char plain[512];
		char *id = gen_token("{z4}-at-{d12}"), *sec = gen_token("{b40}");
		int n = snprintf(plain, sizeof plain, "BedrockAPIKey-%s:%s", id, sec);
		char *enc = b64((unsigned char *)plain, (size_t)n, 1), key[1024];
		snprintf(key, sizeof key, "ABSK%s", enc);
		caught(key, "aws_bedrock_key", "AWS_BEARER_TOKEN_BEDROCK=", "\n");
		free(enc);
		n = snprintf(
			plain, sizeof plain,
			"bedrock.amazonaws.com/?Action=CallWithBearerToken&X-Amz-Algorithm="
			"AWS4-HMAC-SHA256&X-Amz-Credential=ASIA%s%%2F20261201&X-Amz-Signature=%s"
			"&Version=1",
			id, sec);
		enc = b64((unsigned char *)plain, (size_t)n, 1);
		snprintf(key, sizeof key, "bedrock-api-key-%s", enc);
		caught(key, "aws_bedrock_key", "", "");
		free(enc);
		free(id);
		free(sec);
		/* Discord bot token: base64(snowflake id).timestamp.hmac */
		char *snow = gen_token("1{d17}");
		enc = b64((unsigned char *)snow, strlen(snow), 0);
		char *rest = gen_token(".{u6}.{u38}");
		snprintf(key, sizeof key, "%s%s", enc, rest);
		caught(key, "discord_token", "DISCORD_TOKEN=", "");
		caught(key, "discord_token", "Authorization: Bot ", "");
		free(enc);
		free(rest);
		free(snow);
	}
	/* a GCP service account's JSON key, written into a log as it is */
	char *pk = gen_token("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{b64}\\n{b64}\\n{b20}==");
	char sa[2048];
	snprintf(sa, sizeof sa,
		 "{\"type\": \"service_account\", \"project_id\": \"acme\", \"private_key\": "
		 "\"-----BEGIN PRIVATE KEY-----\\n%s\\n-----END PRIVATE KEY-----\\n\", "
		 "\"client_email\": \"ci@acme.iam.gserviceaccount.com\"}",
		 pk);
	char *out = red(sa);
	assert_null(strstr(out, pk));
	assert_non_null(strstr(out, "[REDACTED:private_key]"));
	free(out);
	free(pk);
}

/* Shapes that look like credentials and are not: placeholders, documentation
 * stand-ins, hex hashes, a checksum that does not match. */
static void test_provider_lookalikes(void **state)
{
	static const char *const plain[] = {
		"use a key like sk-xxxx here",
		"set it to sk-... in your env",
		"sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"sk-proj-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
		"sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
		"hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
		"sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
		"sk_test_0123456789abcdefghijklmnop",
		"glpat-xxxxxxxxxxxxxxxxxxxx",
		"glpat-<your-token>",
		"xai-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
		"AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
		"pplx-<your-key> and gsk_... and r8_...",
		"curl -H \"Authorization: Bearer $OPENAI_API_KEY\"",
		"Authorization: Bearer <token>",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"etag d41d8cd98f00b204e9800998ecf8427e",
		"https://cdn.example.com/d41d8cd98f00b204e9800998ecf8427e/app.js",
		"model=gpt-4o-2024-08-06 task-runner disk-usage sk-learn",
		"MTk4NjIyNDgzNDcxOTI1MjQ4.no.discord", /* too short to be a token */
	};
	for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
		untouched(plain[i]);
	/* GitHub and npm 40-character tokens whose checksum is wrong */
	for (int r = 0; r < 50; r++) {
		char *t = gen_token("ghp_{A30}{C}");
		t[39] = t[39] == 'a' ? 'b' : 'a';
		untouched(t);
		memcpy(t, "npm_", 4);
		untouched(t);
		free(t);
	}
}

/* US SSNs: valid areas, groups and serials caught; the ranges the SSA never
 * issues, the voided numbers, and other dashed digits left alone. */
static void test_ssn(void **state)
{
	for (int r = 0; r < 200; r++) {
		int area;
		do
			area = 1 + (int)(rnd() % 899);
		while (area == 666);
		char ssn[16];
		snprintf(ssn, sizeof ssn, "%03d-%02d-%04d", area, 1 + (int)(rnd() % 99),
			 1 + (int)(rnd() % 9999));
		if (!strcmp(ssn, "078-05-1120") || !strcmp(ssn, "123-45-6789"))
			continue;
		caught(ssn, "us_ssn", "ssn ", " on file");
		caught(ssn, "us_ssn", "{\"ssn\":\"", "\"}");
	}
	untouched("000-12-3456 666-12-3456 900-12-3456 999-99-9999");
	untouched("219-00-4567 219-45-0000");
	untouched("078-05-1120 and 123-45-6789 are voided");
	untouched("released 2026-12-01, build 1234-56-7890, ticket ABC-123-45-6789");
	untouched("v1.219-45-6789 x219-45-6789 219-45-67890 219-45-6789-1");
}

static void iban_make(char out[64], const char *cc, int len, int letters)
{
	char bban[40], num[128];
	int n = len - 4;
	for (int i = 0; i < n; i++)
		bban[i] = i < letters ? (char)('A' + rnd() % 26) : (char)('0' + rnd() % 10);
	bban[n] = '\0';
	/* check digits: 98 - (BBAN + country + "00") mod 97 */
	snprintf(num, sizeof num, "%s%s00", bban, cc);
	unsigned rem = 0;
	for (char *p = num; *p; p++)
		rem = *p >= 'A' ? (rem * 100 + (unsigned)(*p - 'A' + 10)) % 97
				: (rem * 10 + (unsigned)(*p - '0')) % 97;
	snprintf(out, 64, "%s%02u%s", cc, 98 - rem, bban);
}

static void test_iban(void **state)
{
	static const struct {
		const char *cc;
		int len, letters;
	} c[] = {{"DE", 22, 0}, {"GB", 22, 4}, {"FR", 27, 0}, {"NL", 18, 4},
		 {"NO", 15, 0}, {"ES", 24, 0}, {"IT", 27, 1}, {"CH", 21, 0}};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		for (int r = 0; r < 20; r++) {
			char iban[64], spaced[80];
			iban_make(iban, c[i].cc, c[i].len, c[i].letters);
			caught(iban, "iban", "IBAN ", ", BIC DEUTDEFF");
			size_t o = 0;
			for (size_t k = 0; iban[k]; k++) {
				if (k && k % 4 == 0)
					spaced[o++] = ' ';
				spaced[o++] = iban[k];
			}
			spaced[o] = '\0';
			caught(spaced, "iban", "{\"iban\": \"", "\"}");
			/* one digit changed: mod 97 fails */
			iban[c[i].len - 1] = iban[c[i].len - 1] == '1' ? '2' : '1';
			untouched(iban);
			/* one character short: not this country's length */
			iban[c[i].len - 1] = '\0';
			untouched(iban);
		}
	}
	/* an IBAN at every offset after text without digits: its letters may
	   end one 48-byte step of the shape scanner and its digits begin the next */
	char iban[64];
	iban_make(iban, "DE", 22, 0);
	for (int pad = 0; pad < 100; pad++) {
		char before[160];
		memset(before, 'x', (size_t)pad);
		snprintf(before + pad, sizeof before - (size_t)pad, " it says ");
		caught(iban, "iban", before, "\"}");
	}
	untouched("ZZ12345678901234567890 and de89370400440532013000");
	untouched("ID42 [meta seq=1] AB12 CDEF GH");
}

/* A 16-digit Luhn-valid number is an id under an id-like name, a card
 * elsewhere: in text and in JSON mode. */
static void test_card_vs_id(void **state)
{
	const char *num = "4212201616914172"; /* Visa prefix, Luhn-valid */
	caught(num, "card", "{\"pan\": \"", "\"}");
	caught("4212 2016 1691 4172", "card", "{\"note\": \"paid with ", "\"}");
	untouched("{\"span\": \"4212201616914172\"}");
	untouched("{\"trace\":\"4212201616914172\",\"parent\":\"4212201616914172\"}");
	untouched("correlation=4212201616914172 request: 4212201616914172");
	untouched("X-Request-ID: 4212201616914172");
	untouched("{\"parentSpanId\" : \"4212201616914172\"}");
	untouched("blob Zm9v+4212201616914172+YmFy and Zm9v4212201616914172YmFy");
	untouched("sha ab4212201616914172cd");
	json_error_t je;
	json_t *doc = json_loads("{\"span\":\"4212201616914172\",\"trace_id\":\"4212201616914172\","
				 "\"card\":\"4212201616914172\",\"request\":\"paid 4212 2016 1691 "
				 "4172\"}",
				 0, &je);
	assert_non_null(doc);
	assert_int_equal(aw_redact_json(doc, NULL), AW_OK);
	assert_string_equal(json_string_value(json_object_get(doc, "span")), num);
	assert_string_equal(json_string_value(json_object_get(doc, "trace_id")), num);
	assert_string_equal(json_string_value(json_object_get(doc, "card")), "[REDACTED:card]");
	assert_string_equal(json_string_value(json_object_get(doc, "request")),
			    "paid [REDACTED:card]");
	json_decref(doc);
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

/* A stream flush ends after a line end (or a space or quote), not inside a
 * number or between a name and its value. "1234222222222222" is no card (no
 * network issues 1...), but cut after "123" its tail is a Luhn-valid Visa
 * number: the first chunk's size moves the flush boundary over every offset
 * of a line. */
static void test_stream_ids_not_cut(void **state)
{
	static char doc[300000];
	const char *line = "{\"span\":\"1234222222222222\",\"n\":1}\n";
	size_t ll = strlen(line), n = 0;
	while (n + ll < sizeof doc) {
		memcpy(doc + n, line, ll);
		n += ll;
	}
	for (size_t first = 131072; first < 131072 + ll; first++) {
		sinkbuf out = {0};
		aw_redact_stream *s = aw_redact_stream_new(sink, &out, NULL);
		assert_int_equal(aw_redact_stream_feed(s, doc, first), AW_OK);
		assert_int_equal(aw_redact_stream_feed(s, doc + first, n - first), AW_OK);
		assert_int_equal(aw_redact_stream_finish(s), AW_OK);
		if (out.len != n || memcmp(out.buf, doc, n) != 0)
			fail_msg("first chunk %zu: an id was cut and redacted", first);
		free(out.buf);
	}
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
		redact_test_force_scalar(1);
		char *scalar = red(in);
		redact_test_force_scalar(0);
		if (strcmp(simd, scalar) != 0)
			fail_msg("scalar and SIMD paths differ on:\n%s\nsimd:   %s\nscalar: %s", in,
				 simd, scalar);
		free(simd);
		free(scalar);
	}
}

/* ---- project-level custom patterns (redact_custom.c) ---- */

static int count_sink(void *ud, const char *d, size_t n)
{
	(void)d;
	*(size_t *)ud += n;
	return 0;
}

static aw_redact_custom *custom_of(const char *json)
{
	json_t *list = json_loads(json, 0, NULL);
	assert_non_null(list);
	aw_redact_custom *c = NULL;
	aw_error err = {0};
	aw_err e = aw_redact_custom_compile(list, &c, &err);
	json_decref(list);
	if (e)
		fail_msg("%s refused: %s at %s", json, err.msg, err.where);
	return c;
}

static void custom_refused(const char *json, const char *where, const char *why)
{
	json_t *list = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	assert_non_null(list);
	aw_redact_custom *c = NULL;
	aw_error err = {0};
	aw_err e = aw_redact_custom_compile(list, &c, &err);
	json_decref(list);
	if (e != AW_E_REDACT_PATTERN || c)
		fail_msg("%s: want E-REDACT-001, got %d", json, (int)e);
	assert_string_equal(err.where, where);
	if (!strstr(err.msg, why))
		fail_msg("%s: reason '%s' lacks '%s'", json, err.msg, why);
}

static char *red_for(const char *project, const char *in)
{
	char *out = aw_redact_str_for(project, in);
	assert_non_null(out);
	return out;
}

static void test_custom_validation(void **state)
{
	(void)state;
	custom_refused("{}", "", "array");
	custom_refused("[1]", "/0", "nothing else");
	custom_refused("[{\"name\":\"a\"}]", "/0", "nothing else");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"x\",\"group\":1}]", "/0", "nothing else");
	custom_refused("[{\"name\":\"Emp\",\"pattern\":\"x\"}]", "/0", "a name matches");
	custom_refused("[{\"name\":\"1a\",\"pattern\":\"x\"}]", "/0", "a name matches");
	custom_refused("[{\"name\":\"abcdefghijklmnopqrstuvwxyz0123456\",\"pattern\":\"x\"}]", "/0",
		       "a name matches");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"x\"},{\"name\":\"a\",\"pattern\":\"y\"}]",
		       "/1", "used twice");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"\"}]", "/0", "1 to 200 bytes");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"x\\u0000y\"}]", "/0", "without NUL");
	char big[400];
	snprintf(big, sizeof big, "[{\"name\":\"a\",\"pattern\":\"%0201d\"}]", 0);
	custom_refused(big, "/0", "1 to 200 bytes");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"(EMP\"}]", "/0", "does not compile");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"(a)\\\\1\"}]", "/0", "back references");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"a(?C1)b\"}]", "/0", "callouts");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"\\\\d*\"}]", "/0", "empty string");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"(?=x)\"}]", "/0", "empty string");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"x|\"}]", "/0", "empty string");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"x\\\\K\"}]", "/0", "look-behind");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"id=\\\\K\\\\d+\"}]", "/0", "look-behind");
	aw_redact_custom_free(
		custom_of("[{\"name\":\"a\",\"pattern\":\"\\\\\\\\K|\\\\Q\\\\K\\\\E\"}]"));
	custom_refused("[{\"name\":\"a\",\"pattern\":\"\\\\b\"}]", "/0", "empty string");
	custom_refused("[{\"name\":\"a\",\"pattern\":\"\\\\C\"}]", "/0", "does not compile");
	/* 17 entries */
	char many[2048] = "[";
	for (int i = 0; i < AW_REDACT_CUSTOM_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many),
			 "%s{\"name\":\"p%d\",\"pattern\":\"x%d\"}", i ? "," : "", i, i);
	strcat(many, "]");
	custom_refused(many, "", "at most 16");
	/* the largest list accepted; [] is a list of none */
	many[strrchr(many, '{') - many - 1] = ']';
	many[strrchr(many, '{') - many] = '\0';
	aw_redact_custom *c = custom_of(many);
	assert_int_equal(aw_redact_custom_count(c), AW_REDACT_CUSTOM_MAX);
	aw_redact_custom_free(c);
	c = custom_of("[]");
	assert_int_equal(aw_redact_custom_count(c), 0);
	aw_redact_custom_free(c);
}

static void test_custom_redacts_only_its_project(void **state)
{
	(void)state;
	aw_redact_custom_reset();
	const char *in = "hr: EMP-123456 filed INC-0042 for a@b.example, ref EMP-12345";
	assert_int_equal(
		aw_redact_custom_install(
			"tenant-a", 1,
			custom_of("[{\"name\":\"employee_id\",\"pattern\":\"EMP-[0-9]{6}\"},"
				  "{\"name\":\"incident\",\"pattern\":\"INC-\\\\d{4}\"}]")),
		1);
	char *a = red_for("tenant-a", in), *b = red_for("tenant-b", in);
	char *none = red_for(NULL, in), *plain = red(in);
	assert_string_equal(a, "hr: [REDACTED:custom:employee_id] filed [REDACTED:custom:incident]"
			       " for [REDACTED:email], ref EMP-12345");
	/* another project, no project, the old entry points: the built-ins only */
	assert_string_equal(b, "hr: EMP-123456 filed INC-0042 for [REDACTED:email], ref EMP-12345");
	assert_string_equal(none, b);
	assert_string_equal(plain, b);
	free(a);
	free(b);
	free(none);
	free(plain);
	/* stats count the custom class; JSON mode, keys too; a stream */
	aw_redact_stats st = {0};
	json_t *doc = json_pack("{s:s, s:[s], s:s}", "who", "EMP-000001", "list", "x EMP-999999 y",
				"EMP-111111", "key");
	assert_int_equal(aw_redact_json_for("tenant-a", doc, &st), AW_OK);
	char *dump = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(dump, "{\"[REDACTED:custom:employee_id]\":\"key\","
				  "\"list\":[\"x [REDACTED:custom:employee_id] y\"],"
				  "\"who\":\"[REDACTED:custom:employee_id]\"}");
	assert_int_equal(st.count[AW_RC_CUSTOM], 3);
	free(dump);
	json_decref(doc);
	/* a built-in finding wins an overlap: the card is a card */
	aw_redact_custom_install("tenant-c", 1,
				 custom_of("[{\"name\":\"digits\",\"pattern\":\"\\\\d{8,}\"}]"));
	char *c = red_for("tenant-c", "pay 4111111111111111 ref 12345678");
	assert_string_equal(c, "pay [REDACTED:card] ref [REDACTED:custom:digits]");
	free(c);
	aw_redact_custom_reset();
	char *after = red_for("tenant-a", in);
	assert_non_null(strstr(after, "EMP-123456"));
	free(after);
}

static void test_custom_registry_versions(void **state)
{
	(void)state;
	aw_redact_custom_reset();
	assert_int_equal(aw_redact_custom_version("p1"), 0);
	assert_int_equal(aw_redact_custom_install(
				 "p1", 2, custom_of("[{\"name\":\"two\",\"pattern\":\"TWO\"}]")),
			 1);
	/* an older or equal version never replaces a newer one */
	assert_int_equal(aw_redact_custom_install(
				 "p1", 1, custom_of("[{\"name\":\"one\",\"pattern\":\"TWO\"}]")),
			 0);
	assert_int_equal(aw_redact_custom_install(
				 "p1", 2, custom_of("[{\"name\":\"one\",\"pattern\":\"TWO\"}]")),
			 0);
	char *o = red_for("p1", "a TWO b");
	assert_string_equal(o, "a [REDACTED:custom:two] b");
	free(o);
	/* cleared: version 3 with no patterns */
	assert_int_equal(aw_redact_custom_install("p1", 3, custom_of("[]")), 1);
	assert_int_equal(aw_redact_custom_version("p1"), 3);
	o = red_for("p1", "a TWO b");
	assert_string_equal(o, "a TWO b");
	free(o);
	aw_redact_custom_reset();
}

/* A pattern that backtracks catastrophically, on text made for it: bounded
 * by the match limit (the pattern stops, counted) and the CPU budget, never
 * a hang; the built-in classes still work on the same text. */
static void test_custom_catastrophic_bounded(void **state)
{
	(void)state;
	aw_redact_custom_reset();
	aw_redact_custom_install("slow", 1,
				 custom_of("[{\"name\":\"exp\",\"pattern\":\"(a|aa)+$\"},"
					   "{\"name\":\"nested\",\"pattern\":\"(\\\\w+\\\\s?)*!\"},"
					   "{\"name\":\"ok\",\"pattern\":\"EMP-[0-9]{6}\"}]"));
	/* runs of 14 a's cost ~1,000 steps per start: under the match limit
	   everywhere, ~1 s a MB without the budget */
	size_t n = 1u << 20;
	char *in = malloc(n + 64);
	assert_non_null(in);
	strcpy(in, "EMP-123456 mail a@b.example ");
	size_t k = strlen(in);
	while (k < n) {
		memcpy(in + k, "aaaaaaaaaaaaaa!", 15);
		k += 15;
	}
	in[k] = '\0';
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	aw_redact_stats st = {0};
	char *out = NULL;
	size_t outlen = 0;
	assert_int_equal(aw_redact_text_for("slow", in, k, &out, &outlen, &st), AW_OK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* the budget: 10 ms + 50 ns a byte and pattern (~160 ms here); the
	   bound is generous for a loaded machine, far below the ~10 s a MB
	   the patterns would take unbounded */
	if (s > 2.0)
		fail_msg("custom patterns took %.2f s on 1 MB", s);
	assert_true(st.custom_limited >= 1);
	assert_non_null(strstr(out, "[REDACTED:custom:ok] mail [REDACTED:email]"));
	free(out);
	/* exponential per start: the match limit stops it at once */
	memset(in, 'a', 4000);
	memcpy(in + 4000, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b", 54);
	aw_redact_stats st2 = {0};
	assert_int_equal(aw_redact_text_for("slow", in, 4054, &out, &outlen, &st2), AW_OK);
	assert_true(st2.custom_limited >= 1);
	free(out);
	/* a stream: one budget a flush */
	aw_redact_stats st3 = {0};
	size_t emitted = 0;
	aw_redact_stream *sm = aw_redact_stream_new_for("slow", count_sink, &emitted, &st3);
	assert_non_null(sm);
	for (size_t off = 0; off < k; off += 65536)
		assert_int_equal(aw_redact_stream_feed(sm, in, k - off < 65536 ? k - off : 65536),
				 AW_OK);
	assert_int_equal(aw_redact_stream_finish(sm), AW_OK);
	assert_true(st3.custom_limited >= 1);
	free(in);
	aw_redact_custom_reset();
}

/* A match is searched up to AW_REDACT_CUSTOM_SPAN bytes past its window:
 * one shorter than that is whole wherever it falls; a longer one is cut at
 * its horizon (redacted up to there). */
static void test_custom_windows(void **state)
{
	(void)state;
	aw_redact_custom_reset();
	aw_redact_custom_install("w", 1,
				 custom_of("[{\"name\":\"id\",\"pattern\":\"ID<[a-z]{1,3000}>\"},"
					   "{\"name\":\"line\",\"pattern\":\"memo: [^\\\\n]+\"}]"));
	size_t n = 20000;
	char *in = malloc(n + 1), *want_id = malloc(3100);
	assert_non_null(in);
	assert_non_null(want_id);
	for (size_t at = 1000; at < 1100; at += 7) { /* across a window's end */
		memset(in, ' ', n);
		memcpy(in + at, "ID<", 3);
		memset(in + at + 3, 'q', 2500);
		in[at + 2503] = '>';
		in[n] = '\0';
		char *out = red_for("w", in);
		assert_int_equal(strlen(out), n - 2504 + strlen("[REDACTED:custom:id]"));
		assert_memory_equal(out + at, "[REDACTED:custom:id]", 20);
		free(out);
	}
	/* a 10 KB line: the match is cut at its horizon, the first SPAN bytes
	   at least are redacted, the rest is searched as any text */
	memset(in, 'x', n);
	memcpy(in, "memo: ", 6);
	in[10000] = '\n';
	in[n] = '\0';
	char *out = red_for("w", in);
	assert_memory_equal(out, "[REDACTED:custom:line]xxx", 25);
	assert_true(strlen(out) <= n - AW_REDACT_CUSTOM_SPAN);
	free(out);
	free(in);
	free(want_id);
	aw_redact_custom_reset();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalar_path_same_output),
		cmocka_unit_test(test_positive_each_class),
		cmocka_unit_test(test_negative_lookalikes),
		cmocka_unit_test(test_provider_credentials),
		cmocka_unit_test(test_provider_lookalikes),
		cmocka_unit_test(test_ssn),
		cmocka_unit_test(test_iban),
		cmocka_unit_test(test_card_vs_id),
		cmocka_unit_test(test_stats_and_idempotent),
		cmocka_unit_test(test_stream_split_secrets),
		cmocka_unit_test(test_stream_ids_not_cut),
		cmocka_unit_test(test_json_mode),
		cmocka_unit_test(test_binary_input),
		cmocka_unit_test(test_custom_validation),
		cmocka_unit_test(test_custom_redacts_only_its_project),
		cmocka_unit_test(test_custom_registry_versions),
		cmocka_unit_test(test_custom_catastrophic_bounded),
		cmocka_unit_test(test_custom_windows),
	};
	return AW_TEST_MAIN_PLAIN("redact", tests, NULL, NULL);
}
