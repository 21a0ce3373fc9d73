/*
 * test_contract.c - the contract registry on a real store (argv[1]: sqlite |
 * postgres): golden fixtures of all six families, lifecycle and illegal
 * transitions, signatures and key rotation, tampering in the database,
 * approval rules, fault injection inside activation, 8 threads activating
 * revisions of one contract, and rollback in one step (faster quorum, sock
 * puppets, stale and foreign targets, bodies today's schema refuses).
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "awooop/audit.h"
#include "awooop/contract.h"
#include "awooop/jcs.h"
#include "awooop/json.h"
#include "awooop/policy.h"
#include "awooop/tenancy.h"
#include "contract/contract_hooks.h"
#include "support.h"

#define K1 "k1:1111111111111111111111111111111111111111111111111111111111111111"
#define K2 "k2:2222222222222222222222222222222222222222222222222222222222222222"

#define S (aw_fx.s)
static aw_keyring *KR;
static aw_contracts *C;

static int setup(void **state)
{
	const char *const projects[] = {"ct-main", "ct-appr", "ct-conc", "ct-tamp", "ct-other",
					"ct-sock", "ct-rb",   "ct-rb2",	 NULL};
	if (aw_test_store_up(projects))
		return -1;
	aw_error err = {0};
	return aw_keyring_from_env(K1, &KR, &err) || aw_contracts_new(KR, &C, &err) ? -1 : 0;
}

static int teardown(void **state)
{
	aw_contracts_free(C);
	aw_keyring_free(KR);
	aw_test_store_down();
	return 0;
}

static void as(aw_ctx *c, const char *project, const char *who)
{
	aw_test_ctx(c, project, AW_SCOPE_OPERATOR, who);
}

static json_t *budget(int tokens)
{
	return json_pack("{s:s, s:i, s:s}", "period", "day", "token_limit", tokens,
			 "action_on_exceed", "kill");
}

static void raw(const char *sql)
{
	aw_test_raw_sql(&aw_fx.db, sql);
}

/* A published revision of (project, family, contract) with the given body. */
static void published(const char *project, const char *family, const char *cid, json_t *body,
		      char *rev)
{
	aw_ctx pub;
	as(&pub, project, "publisher");
	aw_error err = {0};
	aw_revision r = {0};
	aw_err e = aw_contract_create(C, S, &pub, family, cid, body, &r, &err);
	if (e)
		fail_msg("create: %s %s", aw_err_code(e), err.msg);
	strcpy(rev, r.revision_id);
	aw_revision_clear(&r);
	assert_int_equal(aw_contract_publish(C, S, &pub, family, cid, rev, &r, &err), AW_OK);
	assert_string_equal(r.state, "published");
	assert_string_equal(r.sign_key_id, "k1");
	assert_int_equal(strlen(r.signature), 64);
	aw_revision_clear(&r);
	json_decref(body);
}

static void approve(const char *project, const char *family, const char *cid, const char *rev,
		    const char *who, aw_err want)
{
	aw_ctx c;
	as(&c, project, who);
	aw_error err = {0};
	aw_err e = aw_contract_approve(C, S, &c, family, cid, rev, NULL, &err);
	if (e != want)
		fail_msg("approve by %s: got %s (%s), want %s", who, aw_err_code(e), err.msg,
			 aw_err_code(want));
}

static aw_err activate(const char *project, const char *family, const char *cid, const char *rev,
		       aw_activation *act)
{
	aw_ctx c;
	as(&c, project, "operator");
	aw_error err = {0};
	return aw_contract_activate(C, S, &c, family, cid, rev, act, &err);
}

/* ---- fixtures: every file under contracts/fixtures/<family>/{valid,invalid} */

static int walk_dir(const char *family, const char *kind)
{
	char dir[512];
	snprintf(dir, sizeof dir, AWOOOP_SOURCE_DIR "/contracts/fixtures/%s/%s", family, kind);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	const char *project = strcmp(family, "platform_resource") ? "ct-main" : AW_PLATFORM_PROJECT;
	const char *cid = strcmp(family, "platform_resource") ? "fixture" : AW_TOPOLOGY_CONTRACT;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		json_error_t je;
		json_t *doc = json_load_file(path, 0, &je);
		if (!doc)
			fail_msg("%s: %s", path, je.text);
		aw_error err = {0};
		json_t *body = strcmp(kind, "valid") ? json_object_get(doc, "body") : doc;
		const char *k = json_string_value(json_object_get(body, "kind"));
		aw_err got = aw_contract_validate(
			C, project, family,
			k && !strcmp(k, AW_UPSTREAMS_CONTRACT) ? AW_UPSTREAMS_CONTRACT : cid, body,
			&err);
		if (!strcmp(kind, "valid")) {
			if (got)
				fail_msg("%s should be valid: %s", path, err.msg);
		} else {
			json_t *x = json_object_get(doc, "expect");
			aw_err want;
			aw_err_from_code(json_string_value(json_object_get(x, "code")), &want);
			if (got != want ||
			    strcmp(err.where, json_string_value(json_object_get(x, "pointer"))))
				fail_msg("%s: got %s at '%s' (%s), want %s at '%s'", path,
					 aw_err_code(got), err.where, err.msg,
					 json_string_value(json_object_get(x, "code")),
					 json_string_value(json_object_get(x, "pointer")));
		}
		json_decref(doc);
		n++;
	}
	closedir(d);
	return n;
}

static void test_fixtures_all_families(void **state)
{
	const char *fams[] = {"policy_routing", "channel_event", "mcp_tool",
			      "budget",		"approval",	 "platform_resource"};
	for (int i = 0; i < 6; i++) {
		assert_true(walk_dir(fams[i], "valid") >= 2);
		assert_true(walk_dir(fams[i], "invalid") >= 3);
	}
	/* an unknown field anywhere is refused with its pointer */
	aw_error err = {0};
	json_t *b = json_loads("{\"routes\":[{\"name\":\"r\",\"match\":{\"task\":\"t\",\"x\":1},"
			       "\"candidates\":[{\"provider\":\"ollama\",\"model\":\"m\"}]}]}",
			       0, NULL);
	assert_int_equal(aw_contract_validate(C, "ct-main", "policy_routing", "p", b, &err),
			 AW_E_CONTRACT_SCHEMA);
	assert_string_equal(err.where, "/routes/0/match/x");
	json_decref(b);
}

static void test_lifecycle_and_illegal_transitions(void **state)
{
	aw_ctx op;
	as(&op, "ct-main", "publisher");
	aw_error err = {0};
	aw_revision r = {0};
	json_t *b1 = budget(100);
	assert_int_equal(aw_contract_create(C, S, &op, "budget", "daily", b1, &r, &err), AW_OK);
	json_decref(b1);
	char rev[40];
	strcpy(rev, r.revision_id);
	aw_revision_clear(&r);
	/* drafts are editable, invalid edits are refused and change nothing */
	json_t *bad = json_pack("{s:s}", "period", "day");
	assert_int_equal(aw_contract_update(C, S, &op, "budget", "daily", rev, bad, NULL, &err),
			 AW_E_CONTRACT_SCHEMA);
	json_decref(bad);
	json_t *b2 = budget(200);
	assert_int_equal(aw_contract_update(C, S, &op, "budget", "daily", rev, b2, &r, &err),
			 AW_OK);
	json_decref(b2);
	assert_non_null(strstr(r.body, "200"));
	aw_revision_clear(&r);
	/* cannot activate or revoke a draft */
	aw_activation act;
	assert_int_equal(activate("ct-main", "budget", "daily", rev, &act), AW_E_CONTRACT_STATE);
	assert_int_equal(aw_contract_revoke(C, S, &op, "budget", "daily", rev, &err),
			 AW_E_CONTRACT_STATE);
	assert_int_equal(aw_contract_publish(C, S, &op, "budget", "daily", rev, &r, &err), AW_OK);
	aw_revision_clear(&r);
	/* published is immutable and cannot be published twice */
	b2 = budget(300);
	assert_int_equal(aw_contract_update(C, S, &op, "budget", "daily", rev, b2, NULL, &err),
			 AW_E_CONTRACT_STATE);
	json_decref(b2);
	assert_int_equal(aw_contract_publish(C, S, &op, "budget", "daily", rev, NULL, &err),
			 AW_E_CONTRACT_STATE);
	/* activation needs an approval (platform default: 1, not the publisher) */
	assert_int_equal(activate("ct-main", "budget", "daily", rev, &act),
			 AW_E_CONTRACT_APPROVALS);
	approve("ct-main", "budget", "daily", rev, "alice", AW_OK);
	assert_int_equal(activate("ct-main", "budget", "daily", rev, &act), AW_OK);
	assert_true(act.activated);
	assert_string_equal(act.old_revision_id, "");
	aw_ctx rd;
	as(&rd, "ct-main", "reader");
	assert_int_equal(aw_contract_active(C, S, &rd, "budget", "daily", &r, &err), AW_OK);
	assert_string_equal(r.revision_id, rev);
	assert_string_equal(r.state, "active");
	aw_revision_clear(&r);
	/* a second revision supersedes the first */
	char rev2[40];
	published("ct-main", "budget", "daily", budget(400), rev2);
	approve("ct-main", "budget", "daily", rev2, "alice", AW_OK);
	assert_int_equal(activate("ct-main", "budget", "daily", rev2, &act), AW_OK);
	assert_string_equal(act.old_revision_id, rev);
	assert_int_equal(aw_contract_get(C, S, &rd, "budget", "daily", rev, &r, &err), AW_OK);
	assert_string_equal(r.state, "superseded");
	aw_revision_clear(&r);
	assert_int_equal(activate("ct-main", "budget", "daily", rev, &act), AW_E_CONTRACT_STATE);
	/* revoking the active one removes the pointer (fail closed) with an event */
	assert_int_equal(aw_contract_revoke(C, S, &op, "budget", "daily", rev2, &err), AW_OK);
	assert_int_equal(aw_contract_active(C, S, &rd, "budget", "daily", &r, &err),
			 AW_E_CONTRACT_NOT_FOUND);
	aw_txn *t = NULL;
	aw_outbox_event *ev = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &rd, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_outbox_list(t, "budget", "daily", &ev, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 3);
	assert_string_equal(ev[0].event_type, "revision_activated");
	assert_string_equal(ev[1].old_revision_id, rev);
	assert_string_equal(ev[1].new_revision_id, rev2);
	assert_string_equal(ev[2].event_type, "revision_revoked");
	free(ev);
	/* every change is in the audit trail */
	aw_audit_report rep;
	assert_int_equal(aw_audit_verify(S, &rd, &rep, &err), AW_OK);
	assert_true(rep.ok);
	/* another project sees none of it */
	aw_ctx other;
	as(&other, "ct-other", "publisher");
	assert_int_equal(aw_contract_get(C, S, &other, "budget", "daily", rev, &r, &err),
			 AW_E_CONTRACT_NOT_FOUND);
	/* platform_resource only in __platform__ */
	json_t *topo = json_loads(
		"{\"kind\":\"ollama_topology\",\"primary\":{\"url\":\"http://a\"}}", 0, NULL);
	assert_int_equal(aw_contract_create(C, S, &op, "platform_resource", "ollama_topology", topo,
					    NULL, &err),
			 AW_E_CONTRACT_ID);
	json_decref(topo);
	assert_int_equal(aw_contract_create(C, S, &op, "nonsense", "x", NULL, NULL, &err),
			 AW_E_CONTRACT_FAMILY);
}

static void test_approval_rules(void **state)
{
	/* policy: alice, bob, carol; 2 of them; 1 hour */
	char prev[40];
	json_t *pol = json_loads("{\"approvers\":[\"alice\",\"bob\",\"carol\"],\"threshold\":2,"
				 "\"window_s\":3600,\"mode\":\"enforce\"}",
				 0, NULL);
	published("ct-appr", "approval", AW_APPROVAL_CONTRACT, pol, prev);
	approve("ct-appr", "approval", AW_APPROVAL_CONTRACT, prev, "dave",
		AW_OK); /* default policy */
	aw_activation act;
	assert_int_equal(activate("ct-appr", "approval", AW_APPROVAL_CONTRACT, prev, &act), AW_OK);

	char rev[40];
	published("ct-appr", "budget", "b", budget(5), rev);
	approve("ct-appr", "budget", "b", rev, "publisher", AW_E_CONTRACT_SELF_APPROVAL);
	approve("ct-appr", "budget", "b", rev, "mallory", AW_E_CONTRACT_APPROVER);
	approve("ct-appr", "budget", "b", rev, "alice", AW_OK);
	approve("ct-appr", "budget", "b", rev, "alice", AW_E_CONTRACT_DUP_APPROVAL);
	assert_int_equal(activate("ct-appr", "budget", "b", rev, &act), AW_E_CONTRACT_APPROVALS);
	/* an expired approval does not count */
	approve("ct-appr", "budget", "b", rev, "bob", AW_OK);
	char sql[512];
	snprintf(sql, sizeof sql,
		 "UPDATE %%Tcontract_approvals SET expires_at = '2020-01-01T00:00:00.000Z'"
		 " WHERE principal = 'bob' AND revision_id = '%s'",
		 rev);
	raw(sql);
	assert_int_equal(activate("ct-appr", "budget", "b", rev, &act), AW_E_CONTRACT_APPROVALS);
	assert_int_equal(act.approvals, 1);
	assert_int_equal(act.threshold, 2);
	approve("ct-appr", "budget", "b", rev, "carol", AW_OK);
	assert_int_equal(activate("ct-appr", "budget", "b", rev, &act), AW_OK);
	assert_int_equal(act.approvals, 2);

	/* suggest mode: below threshold records and changes nothing */
	char p2[40], rev2[40];
	pol = json_loads("{\"approvers\":[\"alice\",\"bob\"],\"threshold\":2,\"window_s\":3600,"
			 "\"mode\":\"suggest\"}",
			 0, NULL);
	published("ct-appr", "approval", AW_APPROVAL_CONTRACT, pol, p2);
	approve("ct-appr", "approval", AW_APPROVAL_CONTRACT, p2, "alice", AW_OK);
	approve("ct-appr", "approval", AW_APPROVAL_CONTRACT, p2, "bob", AW_OK);
	assert_int_equal(activate("ct-appr", "approval", AW_APPROVAL_CONTRACT, p2, &act), AW_OK);
	published("ct-appr", "budget", "b", budget(6), rev2);
	approve("ct-appr", "budget", "b", rev2, "alice", AW_OK);
	assert_int_equal(activate("ct-appr", "budget", "b", rev2, &act), AW_OK);
	assert_true(act.suggested);
	assert_false(act.activated);
	aw_ctx rd;
	as(&rd, "ct-appr", "reader");
	aw_revision r = {0};
	aw_error err = {0};
	assert_int_equal(aw_contract_active(C, S, &rd, "budget", "b", &r, &err), AW_OK);
	assert_string_equal(r.revision_id, rev); /* unchanged */
	aw_revision_clear(&r);
}

static void test_signature_rotation_and_tamper(void **state)
{
	char rev[40];
	published("ct-tamp", "budget", "t", budget(7), rev);
	approve("ct-tamp", "budget", "t", rev, "alice", AW_OK);
	/* rotate: k2 current, k1 retired but still verifies */
	aw_keyring *kr2 = NULL;
	aw_contracts *c2 = NULL;
	aw_error err = {0};
	assert_int_equal(aw_keyring_from_env(K2 "," K1, &kr2, &err), AW_OK);
	assert_int_equal(aw_contracts_new(kr2, &c2, &err), AW_OK);
	aw_ctx op;
	as(&op, "ct-tamp", "operator");
	aw_activation act;
	assert_int_equal(aw_contract_activate(c2, S, &op, "budget", "t", rev, &act, &err), AW_OK);
	aw_revision r = {0};
	assert_int_equal(aw_contract_active(c2, S, &op, "budget", "t", &r, &err), AW_OK);
	assert_string_equal(r.sign_key_id, "k1");
	aw_revision_clear(&r);
	/* new publishes are signed with k2 */
	aw_revision nr = {0};
	json_t *b = budget(8);
	assert_int_equal(aw_contract_create(c2, S, &op, "budget", "t2", b, &nr, &err), AW_OK);
	json_decref(b);
	char rev2[40];
	strcpy(rev2, nr.revision_id);
	aw_revision_clear(&nr);
	assert_int_equal(aw_contract_publish(c2, S, &op, "budget", "t2", rev2, &nr, &err), AW_OK);
	assert_string_equal(nr.sign_key_id, "k2");
	aw_revision_clear(&nr);
	/* a ring without the signing key refuses to load it */
	aw_keyring *only2 = NULL;
	aw_contracts *c3 = NULL;
	assert_int_equal(aw_keyring_from_env(K2, &only2, &err), AW_OK);
	assert_int_equal(aw_contracts_new(only2, &c3, &err), AW_OK);
	assert_int_equal(aw_contract_active(c3, S, &op, "budget", "t", &r, &err),
			 AW_E_CONTRACT_SIG);

	/* tamper with the stored body, then with the stored hash: both refused */
	char sql[512];
	snprintf(
		sql, sizeof sql,
		"UPDATE %%Tcontract_revisions SET body = '{\"period\":\"day\",\"token_limit\":999999,"
		"\"action_on_exceed\":\"kill\"}' WHERE revision_id = '%s'",
		rev);
	raw(sql);
	assert_int_equal(aw_contract_active(c2, S, &op, "budget", "t", &r, &err),
			 AW_E_CONTRACT_SIG);
	snprintf(
		sql, sizeof sql,
		"UPDATE %%Tcontract_revisions SET body_hash = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'"
		" WHERE revision_id = '%s'",
		rev);
	raw(sql);
	assert_int_equal(aw_contract_active(c2, S, &op, "budget", "t", &r, &err),
			 AW_E_CONTRACT_SIG);
	/* the detection is audited */
	aw_txn *t = NULL;
	aw_audit_row *rows = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &op, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(
		aw_store_audit_list(t, 0, "contract.tamper_detected", "", 10, &rows, &n, &err),
		AW_OK);
	aw_store_rollback(t);
	assert_true(n >= 2);
	aw_audit_rows_free(rows, n);
	aw_contracts_free(c3);
	aw_keyring_free(only2);
	aw_contracts_free(c2);
	aw_keyring_free(kr2);
}

static int fail_after_pointer(const char *point)
{
	return strcmp(point, "after_pointer") == 0;
}

static void test_fault_after_pointer_rolls_back(void **state)
{
	char rev[40];
	published("ct-main", "budget", "fault", budget(9), rev);
	approve("ct-main", "budget", "fault", rev, "alice", AW_OK);
	aw_contract_fault_hook = fail_after_pointer;
	aw_activation act;
	assert_int_equal(activate("ct-main", "budget", "fault", rev, &act), AW_E_INTERNAL);
	aw_contract_fault_hook = NULL;
	aw_ctx rd;
	as(&rd, "ct-main", "reader");
	aw_error err = {0};
	aw_revision r = {0};
	/* neither the pointer nor the event exists, the revision is still published */
	assert_int_equal(aw_contract_active(C, S, &rd, "budget", "fault", &r, &err),
			 AW_E_CONTRACT_NOT_FOUND);
	aw_txn *t = NULL;
	aw_outbox_event *ev = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &rd, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_outbox_list(t, "budget", "fault", &ev, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, 0);
	free(ev);
	assert_int_equal(aw_contract_get(C, S, &rd, "budget", "fault", rev, &r, &err), AW_OK);
	assert_string_equal(r.state, "published");
	aw_revision_clear(&r);
	assert_int_equal(activate("ct-main", "budget", "fault", rev, &act), AW_OK);
}

#define NT 8
static char conc_revs[NT][40];

static void *activator(void *arg)
{
	int i = (int)(long)arg;
	aw_activation act;
	for (int attempt = 0; attempt < 50; attempt++) {
		aw_err e = activate("ct-conc", "budget", "shared", conc_revs[i], &act);
		if (e != AW_E_STORE_BUSY)
			return (void *)(long)e;
	}
	return (void *)(long)AW_E_STORE_BUSY;
}

static void test_concurrent_activations(void **state)
{
	for (int i = 0; i < NT; i++) {
		published("ct-conc", "budget", "shared", budget(1000 + i), conc_revs[i]);
		approve("ct-conc", "budget", "shared", conc_revs[i], "alice", AW_OK);
	}
	pthread_t th[NT];
	for (long i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, activator, (void *)i);
	for (int i = 0; i < NT; i++) {
		void *rc;
		pthread_join(th[i], &rc);
		assert_int_equal((long)rc, AW_OK);
	}
	/* the outbox is one chain: each event's old revision is the previous new */
	aw_ctx rd;
	as(&rd, "ct-conc", "reader");
	aw_error err = {0};
	aw_txn *t = NULL;
	aw_outbox_event *ev = NULL;
	int n = 0;
	assert_int_equal(aw_store_begin(S, &rd, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_outbox_list(t, "budget", "shared", &ev, &n, &err), AW_OK);
	aw_store_rollback(t);
	assert_int_equal(n, NT);
	assert_string_equal(ev[0].old_revision_id, "");
	int seen[NT] = {0};
	for (int i = 0; i < n; i++) {
		if (i)
			assert_string_equal(ev[i].old_revision_id, ev[i - 1].new_revision_id);
		for (int k = 0; k < NT; k++)
			seen[k] += !strcmp(ev[i].new_revision_id, conc_revs[k]);
	}
	for (int k = 0; k < NT; k++)
		assert_int_equal(seen[k], 1); /* none lost, none duplicated */
	aw_revision r = {0};
	assert_int_equal(aw_contract_active(C, S, &rd, "budget", "shared", &r, &err), AW_OK);
	assert_string_equal(r.revision_id, ev[n - 1].new_revision_id);
	aw_revision_clear(&r);
	/* exactly one active revision, the others superseded */
	aw_revision *all = NULL;
	int na = 0, active = 0, superseded = 0;
	assert_int_equal(aw_contract_list(S, &rd, "budget", "shared", &all, &na, &err), AW_OK);
	for (int i = 0; i < na; i++) {
		active += !strcmp(all[i].state, "active");
		superseded += !strcmp(all[i].state, "superseded");
	}
	aw_revisions_free(all, na);
	assert_int_equal(active, 1);
	assert_int_equal(superseded, NT - 1);
	free(ev);
}

static void test_diff(void **state)
{
	aw_ctx op;
	as(&op, "ct-main", "publisher");
	aw_error err = {0};
	aw_revision a = {0}, b = {0};
	json_t *ba =
		json_loads("{\"period\":\"day\",\"token_limit\":1,\"action_on_exceed\":\"kill\","
			   "\"alert_at_percent\":[50,80]}",
			   0, NULL);
	json_t *bb =
		json_loads("{\"period\":\"month\",\"token_limit\":1,\"action_on_exceed\":\"kill\","
			   "\"alert_at_percent\":[50],\"cost_limit_usd\":3}",
			   0, NULL);
	assert_int_equal(aw_contract_create(C, S, &op, "budget", "d", ba, &a, &err), AW_OK);
	assert_int_equal(aw_contract_create(C, S, &op, "budget", "d", bb, &b, &err), AW_OK);
	json_t *patch = NULL;
	assert_int_equal(
		aw_contract_diff(S, &op, "budget", "d", a.revision_id, b.revision_id, &patch, &err),
		AW_OK);
	char *s = json_dumps(patch, JSON_COMPACT);
	assert_string_equal(s, "[{\"op\":\"remove\",\"path\":\"/alert_at_percent/1\"},"
			       "{\"op\":\"replace\",\"path\":\"/period\",\"value\":\"month\"},"
			       "{\"op\":\"add\",\"path\":\"/cost_limit_usd\",\"value\":3}]");
	free(s);
	json_decref(patch);
	json_decref(ba);
	json_decref(bb);
	aw_revision_clear(&a);
	aw_revision_clear(&b);
}

/* ---- the number policy and the round trip: what is accepted reads back equal,
 * on SQLite (canonical text) and PostgreSQL (jsonb) alike */
static uint64_t rt_rng = 0x2545F4914F6CDD1DULL;
static uint64_t rnd64(void)
{
	rt_rng ^= rt_rng << 13;
	rt_rng ^= rt_rng >> 7;
	rt_rng ^= rt_rng << 17;
	return rt_rng;
}

static json_t *gen_value(int depth);

static json_t *gen_string(void)
{
	static const char *const pieces[] = {"a",    "Z", "0",	  " ", "\"", "\\", "/",	 "\t", "\n",
					     "\x01", "é", "日本", "😀", "~1", "-",  "{}", "%00"};
	char buf[128] = "";
	size_t o = 0, n = rnd64() % 8;
	for (size_t i = 0; i < n; i++) {
		const char *p = pieces[rnd64() % (sizeof pieces / sizeof *pieces)];
		size_t k = strlen(p);
		memcpy(buf + o, p, k);
		o += k;
	}
	buf[o] = '\0';
	return json_string(buf);
}

static json_t *gen_number(void)
{
	switch (rnd64() % 6) {
	case 0: return json_integer((json_int_t)(rnd64() % (1ULL << 53)) * (rnd64() % 2 ? 1 : -1));
	case 1: return json_integer((1LL << 53) * (rnd64() % 2 ? 1 : -1)); /* the edge */
	case 2: return json_real((double)(rnd64() % 1000000) / 1000.0);
	case 3: return json_real(1e-300 * (double)(1 + rnd64() % 1000));
	case 4: { /* any finite double within the policy, from raw bits */
		double d;
		uint64_t bits = rnd64();
		memcpy(&d, &bits, sizeof d);
		if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0))
			d = 0.5;
		return json_real(d);
	}
	default: return json_integer((json_int_t)(rnd64() % 100));
	}
}

static json_t *gen_value(int depth)
{
	int kind = (int)(rnd64() % (depth > 3 ? 5 : 7));
	if (kind == 0)
		return json_null();
	if (kind == 1)
		return json_boolean(rnd64() % 2);
	if (kind == 2 || kind == 3)
		return gen_number();
	if (kind == 4)
		return gen_string();
	json_t *v = kind == 5 ? json_array() : json_object();
	for (int i = 0, n = (int)(rnd64() % 5); i < n; i++) {
		if (kind == 5) {
			json_array_append_new(v, gen_value(depth + 1));
		} else {
			json_t *k = gen_string();
			json_object_set_new(v, json_string_value(k), gen_value(depth + 1));
			json_decref(k);
		}
	}
	return v;
}

static json_t *tool_body(json_t *schema)
{
	return json_pack("{s:{s:{s:s, s:s}}, s:[{s:s, s:s, s:s, s:o}]}", "upstreams", "p",
			 "transport", "http", "url", "http://127.0.0.1:9/mcp", "tools", "name", "t",
			 "provider", "p", "mode", "read_only", "args_schema", schema);
}

static void test_number_policy_round_trip(void **state)
{
	aw_ctx op;
	aw_test_ctx(&op, "ct-main", AW_SCOPE_OPERATOR, "alice");
	aw_error err = {0};
	for (int i = 0; i < 300; i++) {
		json_t *doc = json_object(); /* an annotation holds any value */
		json_object_set_new(doc, "default", gen_value(0));
		json_t *body = tool_body(json_incref(doc));
		aw_revision r = {0}, got = {0};
		aw_err e = aw_contract_create(C, S, &op, "mcp_tool", "rt", body, &r, &err);
		if (e)
			fail_msg("round %d: create %s %s (%s)", i, aw_err_code(e), err.msg,
				 err.where);
		assert_int_equal(
			aw_contract_get(C, S, &op, "mcp_tool", "rt", r.revision_id, &got, &err),
			AW_OK);
		json_t *back = json_loads(got.body, 0, NULL);
		json_t *args = json_object_get(json_array_get(json_object_get(back, "tools"), 0),
					       "args_schema");
		if (!back || !aw_json_same(doc, args)) {
			char *want = json_dumps(doc, JSON_ENCODE_ANY);
			fail_msg("round %d: read back differs\n in:  %s\n out: %s", i, want,
				 got.body);
		}
		json_decref(back);
		json_decref(doc);
		json_decref(body);
		aw_revision_clear(&r);
		aw_revision_clear(&got);
	}
	/* beyond +-2^53 (or not finite): refused with the pointer, nothing stored */
	const double bad[] = {1e19, 1.5e20, 1e21, 1e300, -9007199254740994.0};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *body = tool_body(json_pack("{s:{s:f}}", "default", "limit", bad[i]));
		aw_revision r = {0};
		assert_int_equal(
			aw_contract_create(C, S, &op, "mcp_tool", "rt-bad", body, &r, &err),
			AW_E_REQ_INVALID);
		assert_string_equal(err.where, "/tools/0/args_schema/default/limit");
		json_decref(body);
	}
	json_t *big =
		tool_body(json_pack("{s:{s:I}}", "default", "n", (json_int_t)9007199254740993LL));
	aw_revision r = {0};
	assert_int_equal(aw_contract_create(C, S, &op, "mcp_tool", "rt-bad", big, &r, &err),
			 AW_E_REQ_INVALID);
	json_decref(big);
	aw_revision *list = NULL;
	int n = 0;
	aw_err le = aw_contract_list(S, &op, "mcp_tool", "rt-bad", &list, &n, &err);
	assert_true(le == AW_OK || le == AW_E_CONTRACT_NOT_FOUND);
	assert_int_equal(n, 0);
	aw_revisions_free(list, n);
}

/* ---- approvals by sock puppet: a key the publisher minted (directly or
 * through its own keys) never approves the publisher's revision, a key name is
 * never reused, and the approval policy is only replaced by its signers */
static void mint(const char *by, aw_scope by_scope, const char *name, aw_scope scope,
		 aw_apikey *out)
{
	aw_ctx c;
	aw_test_ctx(&c, "ct-sock", by_scope, by);
	aw_error err = {0};
	char secret[AW_KEY_SECRET_LEN + 1];
	aw_err e = aw_key_create(S, &c, name, scope, out, secret, &err);
	if (e)
		fail_msg("mint %s by %s: %s %s", name, by, aw_err_code(e), err.msg);
}

static aw_err approve_as(const char *who, const char *family, const char *cid, const char *rev)
{
	aw_ctx c;
	aw_test_ctx(&c, "ct-sock", AW_SCOPE_OPERATOR, who);
	aw_error err = {0};
	return aw_contract_approve(C, S, &c, family, cid, rev, NULL, &err);
}

static void publish_as(const char *who, const char *family, const char *cid, json_t *body,
		       char *rev)
{
	aw_ctx c;
	aw_test_ctx(&c, "ct-sock", AW_SCOPE_PROJECT_ADMIN, who);
	aw_error err = {0};
	aw_revision r = {0};
	assert_int_equal(aw_contract_create(C, S, &c, family, cid, body, &r, &err), AW_OK);
	strcpy(rev, r.revision_id);
	aw_revision_clear(&r);
	assert_int_equal(aw_contract_publish(C, S, &c, family, cid, rev, NULL, &err), AW_OK);
	json_decref(body);
}

static void test_sock_puppet_approvals(void **state)
{
	aw_apikey k;
	mint("root", AW_SCOPE_PLATFORM_ADMIN, "padmin", AW_SCOPE_PROJECT_ADMIN, &k);
	mint("root", AW_SCOPE_PLATFORM_ADMIN, "carol", AW_SCOPE_OPERATOR, &k);
	mint("root", AW_SCOPE_PLATFORM_ADMIN, "dave", AW_SCOPE_OPERATOR, &k);
	mint("padmin", AW_SCOPE_PROJECT_ADMIN, "sock-puppet", AW_SCOPE_PROJECT_ADMIN, &k);
	mint("sock-puppet", AW_SCOPE_PROJECT_ADMIN, "sock-2", AW_SCOPE_OPERATOR, &k);

	/* the default policy (no approval contract): not the publisher's puppets */
	char rev[40];
	publish_as("padmin", "budget", "b", budget(9), rev);
	assert_int_equal(approve_as("sock-puppet", "budget", "b", rev),
			 AW_E_CONTRACT_SELF_APPROVAL);
	assert_int_equal(approve_as("sock-2", "budget", "b", rev), AW_E_CONTRACT_SELF_APPROVAL);
	aw_ctx op;
	aw_test_ctx(&op, "ct-sock", AW_SCOPE_OPERATOR, "padmin");
	aw_activation act;
	aw_error err = {0};
	assert_int_equal(aw_contract_activate(C, S, &op, "budget", "b", rev, &act, &err),
			 AW_E_CONTRACT_APPROVALS);
	assert_int_equal(approve_as("carol", "budget", "b", rev), AW_OK);
	assert_int_equal(aw_contract_activate(C, S, &op, "budget", "b", rev, &act, &err), AW_OK);
	assert_int_equal(act.approvals, 1);

	/* a name is never reused: revoke "sock-puppet", and it cannot be minted again */
	aw_ctx admin;
	aw_test_ctx(&admin, "ct-sock", AW_SCOPE_PROJECT_ADMIN, "padmin");
	aw_apikey *keys = NULL;
	int n = 0;
	assert_int_equal(aw_key_list(S, &admin, &keys, &n, &err), AW_OK);
	for (int i = 0; i < n; i++)
		if (!strcmp(keys[i].name, "sock-puppet"))
			assert_int_equal(aw_key_revoke(S, &admin, keys[i].key_id, &err), AW_OK);
	free(keys);
	char secret[AW_KEY_SECRET_LEN + 1];
	assert_int_equal(
		aw_key_create(S, &admin, "sock-puppet", AW_SCOPE_OPERATOR, &k, secret, &err),
		AW_E_KEY_EXISTS);

	/* with an approval contract: its signers only, puppets still never count,
	 * and the policy is replaced - never revoked - with its current signers */
	char pol[40];
	publish_as("padmin", "approval", AW_APPROVAL_CONTRACT,
		   json_pack("{s:[s,s], s:i, s:i, s:s}", "approvers", "carol", "dave", "threshold",
			     1, "window_s", 3600, "mode", "enforce"),
		   pol);
	assert_int_equal(approve_as("dave", "approval", AW_APPROVAL_CONTRACT, pol), AW_OK);
	assert_int_equal(
		aw_contract_activate(C, S, &op, "approval", AW_APPROVAL_CONTRACT, pol, &act, &err),
		AW_OK);
	aw_test_ctx(&admin, "ct-sock", AW_SCOPE_PROJECT_ADMIN, "padmin");
	assert_int_equal(
		aw_contract_revoke(C, S, &admin, "approval", AW_APPROVAL_CONTRACT, pol, &err),
		AW_E_CONTRACT_STATE);
	char weaker[40];
	publish_as("padmin", "approval", AW_APPROVAL_CONTRACT,
		   json_pack("{s:[s], s:i, s:i, s:s}", "approvers", "sock-2", "threshold", 1,
			     "window_s", 3600, "mode", "enforce"),
		   weaker);
	assert_int_equal(approve_as("sock-2", "approval", AW_APPROVAL_CONTRACT, weaker),
			 AW_E_CONTRACT_SELF_APPROVAL);
	mint("root", AW_SCOPE_PLATFORM_ADMIN, "erin", AW_SCOPE_OPERATOR, &k);
	assert_int_equal(approve_as("erin", "approval", AW_APPROVAL_CONTRACT, weaker),
			 AW_E_CONTRACT_APPROVER); /* not a current signer */
	assert_int_equal(aw_contract_activate(C, S, &op, "approval", AW_APPROVAL_CONTRACT, weaker,
					      &act, &err),
			 AW_E_CONTRACT_APPROVALS);
	assert_int_equal(approve_as("carol", "approval", AW_APPROVAL_CONTRACT, weaker), AW_OK);
	assert_int_equal(aw_contract_activate(C, S, &op, "approval", AW_APPROVAL_CONTRACT, weaker,
					      &act, &err),
			 AW_OK);
}

/* ---- rollback in one step */

static aw_err rb_approve(const char *who, const char *rev, aw_approve_result *res)
{
	aw_ctx c;
	as(&c, "ct-rb", who);
	aw_error err = {0};
	return aw_contract_approve_ex(C, S, &c, "budget", "b", rev, NULL, res, &err);
}

static aw_err rb_request(const char *to, aw_rollback *out, aw_error *err)
{
	aw_ctx c;
	aw_test_ctx(&c, "ct-rb", AW_SCOPE_PROJECT_ADMIN, "oncall");
	memset(out, 0, sizeof *out);
	return aw_contract_rollback(C, S, &c, "budget", "b", to, out, err);
}

/* A budget revision of ct-rb contract b, approved by alice and bob, active. */
static void rb_active(int tokens, char *rev)
{
	published("ct-rb", "budget", "b", budget(tokens), rev);
	approve("ct-rb", "budget", "b", rev, "alice", AW_OK);
	approve("ct-rb", "budget", "b", rev, "bob", AW_OK);
	aw_activation act;
	assert_int_equal(activate("ct-rb", "budget", "b", rev, &act), AW_OK);
}

static int64_t served_tokens(aw_policy_cache *pc, char *rev_out)
{
	aw_ctx c;
	as(&c, "ct-rb", "worker");
	aw_policy pol;
	aw_error err = {0};
	aw_err e = aw_policy_effective(pc, &c, "budget", "b", &pol, &err);
	if (e)
		fail_msg("effective: %s %s", aw_err_code(e), err.msg);
	strcpy(rev_out, pol.revision_id);
	int64_t n = json_integer_value(json_object_get(pol.body, "token_limit"));
	aw_policy_release(&pol);
	return n;
}

static int audit_has(const char *action, const char *target, const char *member, const char *value)
{
	aw_audit_row *rows = NULL;
	int n = 0, found = 0;
	aw_test_audit_rows("ct-rb", action, 1000, &rows, &n);
	for (int i = 0; i < n && !found; i++) {
		json_t *pl = json_loads(rows[i].payload, 0, NULL);
		found = !strcmp(rows[i].target, target) &&
			(!member ||
			 !strcmp(json_string_value(json_object_get(pl, member)) ?: "", value));
		json_decref(pl);
	}
	aw_audit_rows_free(rows, n);
	return found;
}

static void test_rollback(void **state)
{
	aw_apikey k;
	aw_ctx root;
	aw_test_ctx(&root, "ct-rb", AW_SCOPE_PLATFORM_ADMIN, "root");
	aw_error err = {0};
	char secret[AW_KEY_SECRET_LEN + 1];
	assert_int_equal(
		aw_key_create(S, &root, "oncall", AW_SCOPE_PROJECT_ADMIN, &k, secret, &err), AW_OK);
	aw_ctx oncall;
	aw_test_ctx(&oncall, "ct-rb", AW_SCOPE_PROJECT_ADMIN, "oncall");
	assert_int_equal(aw_key_create(S, &oncall, "oncall-2", AW_SCOPE_OPERATOR, &k, secret, &err),
			 AW_OK);

	/* policy: 2 of alice, bob, carol, oncall-2; a rollback needs 1 */
	char pol[40];
	published("ct-rb", "approval", AW_APPROVAL_CONTRACT,
		  json_pack("{s:[s,s,s,s], s:i, s:i, s:i, s:s}", "approvers", "alice", "bob",
			    "carol", "oncall-2", "threshold", 2, "rollback_threshold", 1,
			    "window_s", 3600, "mode", "enforce"),
		  pol);
	approve("ct-rb", "approval", AW_APPROVAL_CONTRACT, pol, "dave", AW_OK);
	aw_activation act;
	assert_int_equal(activate("ct-rb", "approval", AW_APPROVAL_CONTRACT, pol, &act), AW_OK);

	aw_policy_opts po = {.mode = AW_GUARD_STRICT};
	aw_policy_cache *pc = NULL;
	assert_int_equal(aw_policy_cache_new(S, C, NULL, &po, &pc, &err), AW_OK);
	char a[40], b[40], served[40];
	aw_rollback rb;
	/* nothing earlier to roll back to */
	assert_int_equal(rb_request(NULL, &rb, &err), AW_E_CONTRACT_RB_TARGET);
	rb_active(5, a);
	assert_int_equal(rb_request(NULL, &rb, &err), AW_E_CONTRACT_RB_TARGET);
	rb_active(6, b);
	assert_int_equal(served_tokens(pc, served), 6);
	assert_string_equal(served, b);

	/* one call: a published revision with a's body, from b to a */
	assert_int_equal(rb_request(NULL, &rb, &err), AW_OK);
	char r1[40];
	strcpy(r1, rb.revision.revision_id);
	assert_string_equal(rb.revision.state, "published");
	assert_string_equal(rb.revision.rollback_of, a);
	assert_string_equal(rb.revision.rollback_from, b);
	assert_string_equal(rb.revision.published_by, "oncall");
	assert_int_equal(rb.needed, 1);
	aw_revision ra = {0};
	assert_int_equal(aw_contract_get(C, S, &oncall, "budget", "b", a, &ra, &err), AW_OK);
	json_t *jr = json_loads(rb.revision.body, 0, NULL), *ja = json_loads(ra.body, 0, NULL);
	assert_true(json_equal(jr, ja));
	json_decref(jr);
	json_decref(ja);
	assert_string_equal(rb.revision.body_hash, ra.body_hash);
	aw_revision_clear(&ra);
	aw_revision_clear(&rb.revision);

	/* the same guarantees: no approval, no activation; never the requester,
	 * its puppet or a stranger */
	assert_int_equal(activate("ct-rb", "budget", "b", r1, &act), AW_E_CONTRACT_APPROVALS);
	assert_int_equal(act.threshold, 1);
	aw_approve_result res;
	assert_int_equal(rb_approve("oncall", r1, &res), AW_E_CONTRACT_SELF_APPROVAL);
	assert_int_equal(rb_approve("oncall-2", r1, &res), AW_E_CONTRACT_SELF_APPROVAL);
	assert_int_equal(rb_approve("mallory", r1, &res), AW_E_CONTRACT_APPROVER);
	assert_int_equal(served_tokens(pc, served), 6);
	/* the faster quorum: carol's approval activates it at once */
	assert_int_equal(rb_approve("carol", r1, &res), AW_OK);
	assert_true(res.rollback);
	assert_int_equal(res.approvals, 1);
	assert_int_equal(res.needed, 1);
	assert_int_equal(res.act_err.err, AW_OK);
	assert_true(res.act.activated);
	assert_string_equal(res.act.old_revision_id, b);
	assert_int_equal(served_tokens(pc, served), 5);
	assert_string_equal(served, r1);
	aw_revision cur = {0};
	assert_int_equal(aw_contract_get(C, S, &oncall, "budget", "b", b, &cur, &err), AW_OK);
	assert_string_equal(cur.state, "superseded");
	aw_revision_clear(&cur);
	/* the outbox carries it like any activation */
	aw_txn *t = NULL;
	aw_outbox_event *ev = NULL;
	int nev = 0;
	assert_int_equal(aw_store_begin(S, &oncall, AW_TXN_READ, &t, &err), AW_OK);
	assert_int_equal(aw_store_outbox_list(t, "budget", "b", &ev, &nev, &err), AW_OK);
	aw_store_rollback(t);
	assert_true(nev >= 3);
	assert_string_equal(ev[nev - 1].event_type, "revision_activated");
	assert_string_equal(ev[nev - 1].old_revision_id, b);
	assert_string_equal(ev[nev - 1].new_revision_id, r1);
	free(ev);
	/* audited as a rollback, and as the usual steps */
	assert_true(audit_has("contract.rollback", r1, "to_revision_id", a));
	assert_true(audit_has("contract.rollback", r1, "from_revision_id", b));
	assert_true(audit_has("contract.draft", r1, "rollback_of", a));
	assert_true(audit_has("contract.publish", r1, NULL, NULL));
	assert_true(audit_has("contract.approve", r1, NULL, NULL));
	assert_true(audit_has("contract.activate", r1, "rollback_of", a));

	/* stale: another activation lands between request and approval */
	assert_int_equal(rb_request(NULL, &rb, &err), AW_OK); /* back to b */
	char r2[40], c3[40];
	strcpy(r2, rb.revision.revision_id);
	assert_string_equal(rb.revision.rollback_of, b);
	aw_revision_clear(&rb.revision);
	rb_active(7, c3);
	assert_int_equal(rb_approve("carol", r2, &res), AW_OK);
	assert_int_equal(res.act_err.err, AW_E_CONTRACT_RB_STALE);
	assert_false(res.act.activated);
	assert_int_equal(activate("ct-rb", "budget", "b", r2, &act), AW_E_CONTRACT_RB_STALE);
	assert_int_equal(served_tokens(pc, served), 7);

	/* targets: an explicit earlier one works; never a revision that was not
	 * active, the active one, another contract's or another tenant's */
	assert_int_equal(rb_request(b, &rb, &err), AW_OK);
	assert_string_equal(rb.revision.rollback_of, b);
	assert_string_equal(rb.revision.rollback_from, c3);
	aw_revision_clear(&rb.revision);
	char never[40], other[40], foreign[40];
	published("ct-rb", "budget", "b", budget(8), never);
	assert_int_equal(rb_request(never, &rb, &err), AW_E_CONTRACT_RB_TARGET);
	assert_int_equal(rb_request(r2, &rb, &err), AW_E_CONTRACT_RB_TARGET);
	assert_int_equal(rb_request(c3, &rb, &err), AW_E_CONTRACT_RB_TARGET);
	published("ct-rb", "budget", "b2", budget(9), other);
	assert_int_equal(rb_request(other, &rb, &err), AW_E_CONTRACT_NOT_FOUND);
	published("ct-rb2", "budget", "b", budget(9), foreign);
	assert_int_equal(rb_request(foreign, &rb, &err), AW_E_CONTRACT_NOT_FOUND);
	assert_int_equal(rb_request("not-a-uuid", &rb, &err), AW_E_REQ_ID);

	/* an ordinary revision marked a rollback in the database (not signed
	 * as one) earns no faster quorum: its signature does not verify */
	char mark[512];
	snprintf(mark, sizeof mark,
		 "UPDATE %%Tcontract_revisions SET rollback_of = '%s', rollback_from = '%s'"
		 " WHERE revision_id = '%s'",
		 b, c3, never);
	raw(mark);
	memset(&res, 0, sizeof res);
	aw_err me = rb_approve("carol", never, &res);
	assert_true(me == AW_E_CONTRACT_SIG ||
		    (me == AW_OK && res.act_err.err == AW_E_CONTRACT_SIG));
	assert_false(res.act.activated);
	assert_int_equal(served_tokens(pc, served), 7);

	/* a body today's schema refuses (written, signed and active before the
	 * schema changed) is refused with its pointer */
	char sql[1024], hash[65], kid[64], sig[65];
	json_t *old = json_pack("{s:s, s:i, s:s, s:i}", "period", "day", "token_limit", 4,
				"action_on_exceed", "kill", "legacy_limit", 1);
	char *text = aw_jcs(old);
	assert_int_equal(aw_jcs_sha256(old, hash), 0);
	json_t *tj = json_pack("[s,s,s,s,s]", "ct-rb", "budget", "b", a, hash);
	char *tuple = aw_jcs(tj);
	assert_int_equal(aw_keyring_sign(KR, tuple, strlen(tuple), kid, sizeof kid, sig, &err),
			 AW_OK);
	snprintf(sql, sizeof sql,
		 "UPDATE %%Tcontract_revisions SET body = '%s', body_hash = '%s',"
		 " signature = '%s' WHERE revision_id = '%s'",
		 text, hash, sig, a);
	raw(sql);
	free(text);
	free(tuple);
	json_decref(tj);
	json_decref(old);
	assert_int_equal(rb_request(a, &rb, &err), AW_E_CONTRACT_RB_INVALID);
	assert_string_equal(err.where, "/legacy_limit");
	aw_policy_cache_free(pc);

	/* after an emergency revoke: back to the revision before the revoked one */
	char xy[2][40];
	aw_ctx admin;
	aw_test_ctx(&admin, "ct-rb", AW_SCOPE_PROJECT_ADMIN, "root");
	for (int i = 0; i < 2; i++) {
		published("ct-rb", "budget", "b3", budget(20 + i), xy[i]);
		approve("ct-rb", "budget", "b3", xy[i], "alice", AW_OK);
		approve("ct-rb", "budget", "b3", xy[i], "bob", AW_OK);
		assert_int_equal(activate("ct-rb", "budget", "b3", xy[i], &act), AW_OK);
	}
	assert_int_equal(aw_contract_revoke(C, S, &admin, "budget", "b3", xy[1], &err), AW_OK);
	assert_int_equal(aw_contract_rollback(C, S, &oncall, "budget", "b3", NULL, &rb, &err),
			 AW_OK);
	assert_string_equal(rb.revision.rollback_of, xy[0]);
	assert_string_equal(rb.revision.rollback_from, "");
	aw_ctx carol;
	as(&carol, "ct-rb", "carol");
	assert_int_equal(aw_contract_approve_ex(C, S, &carol, "budget", "b3",
						rb.revision.revision_id, NULL, &res, &err),
			 AW_OK);
	assert_true(res.act.activated);
	assert_string_equal(res.act.old_revision_id, "");
	aw_revision_clear(&rb.revision);

	/* restoring an older approval policy needs the full threshold */
	char pol2[40];
	published("ct-rb", "approval", AW_APPROVAL_CONTRACT,
		  json_pack("{s:[s,s,s], s:i, s:i, s:i, s:s}", "approvers", "alice", "bob", "carol",
			    "threshold", 2, "rollback_threshold", 1, "window_s", 3600, "mode",
			    "enforce"),
		  pol2);
	approve("ct-rb", "approval", AW_APPROVAL_CONTRACT, pol2, "alice", AW_OK);
	approve("ct-rb", "approval", AW_APPROVAL_CONTRACT, pol2, "bob", AW_OK);
	assert_int_equal(activate("ct-rb", "approval", AW_APPROVAL_CONTRACT, pol2, &act), AW_OK);
	assert_int_equal(aw_contract_rollback(C, S, &oncall, "approval", AW_APPROVAL_CONTRACT, NULL,
					      &rb, &err),
			 AW_OK);
	assert_int_equal(rb.needed, 2);
	aw_ctx alice;
	as(&alice, "ct-rb", "alice");
	assert_int_equal(aw_contract_approve_ex(C, S, &alice, "approval", AW_APPROVAL_CONTRACT,
						rb.revision.revision_id, NULL, &res, &err),
			 AW_OK);
	assert_false(res.act.activated);
	assert_int_equal(res.needed, 2);
	aw_revision_clear(&rb.revision);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_all_families),
		cmocka_unit_test(test_lifecycle_and_illegal_transitions),
		cmocka_unit_test(test_approval_rules),
		cmocka_unit_test(test_signature_rotation_and_tamper),
		cmocka_unit_test(test_fault_after_pointer_rolls_back),
		cmocka_unit_test(test_concurrent_activations),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_number_policy_round_trip),
		cmocka_unit_test(test_sock_puppet_approvals),
		cmocka_unit_test(test_rollback),
	};
	return AW_TEST_MAIN("contracts", tests, setup, teardown);
}
