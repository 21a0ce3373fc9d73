/*
 * hostgate.c - places shared by the run workers of every process of one user
 * on one host that serve one database (see worker.h, pool.c): a System V
 * semaphore, taken and given back with SEM_UNDO, so the kernel returns the
 * places of a process that dies holding them (a SIGKILL in the middle of a
 * batch leaks nothing).
 *
 * Why a host and not a process: a batch's store work is CPU on both sides of
 * the connection, and the cores are the host's. Two worker processes with
 * two places each kept four batches (and four PostgreSQL backends) busy on
 * two cores: burn-downs ran at 20,000-24,000 runs/s against 27,000-28,000
 * with one place each, and a quiet tenant's p99 beside the flood doubled,
 * since every hop of its run waited for a core - and for locks whose holders
 * had been preempted.
 *
 * The set holds three semaphores: the places; one token for the reserve
 * (pool.c: a place kept from the batch threads while an idle-tenant lane of
 * the host has work - one reserve per set, whichever process has it); and
 * 1 while the reserve waits for its place, which tells the batch threads,
 * who keep their places from batch to batch, to give one back.
 *
 * The key is a hash of the user, a name (the database the workers serve,
 * pool.c) and the number of places: processes configured alike share one
 * set; a different count is a different set.
 * The set is created with its values 0 and then raised to `places` and 1
 * (the token) by one semop, which sets its sem_otime: a process that finds
 * the set waits for that before it uses it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/sem.h>
#include <time.h>
#include <unistd.h>

#include "awooop/log.h"
#include "worker.h"

static key_t gate_key(const char *name, int places)
{
	char id[400];
	snprintf(id, sizeof id, "awooop-store-gate/3/%u/%d/%s", (unsigned)getuid(), places, name);
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const char *p = id; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return (key_t)(h == (uint32_t)IPC_PRIVATE ? 1 : h);
}

/* sem_otime set: the creator's first semop gave the places. */
static int ready(int id)
{
	struct semid_ds ds;
	return semctl(id, 0, IPC_STAT, &ds) == 0 && ds.sem_otime != 0;
}

int hostgate_open(const char *name, int places)
{
	key_t key = gate_key(name, places);
	int id = semget(key, 3, IPC_CREAT | IPC_EXCL | 0600);
	if (id >= 0) {
		/* no undo: the places and the token stay */
		struct sembuf give[] = {{0, (short)places, 0}, {1, 1, 0}};
		if (semop(id, give, 2) == 0)
			return id;
	} else if (errno == EEXIST && (id = semget(key, 3, 0600)) >= 0) {
		/* made by another process: wait (up to a second) for its places */
		for (int i = 0; i < 1000 && !ready(id); i++) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
		if (ready(id))
			return id;
		errno = ETIMEDOUT;
	}
	aw_log(AW_LOG_WARN, NULL, "run workers: no host-wide store gate, each process counts alone",
	       "detail", strerror(errno), NULL);
	return -1;
}

/* Takes ops (a place; for a batch thread, only while no reserve waits for
 * one), waiting 50 ms at a time to see a stop. */
static int take(int id, struct sembuf *ops, int n, const atomic_int *stop)
{
	while (!atomic_load(stop)) {
		struct timespec wait = {0, 50000000}; /* to see a stop */
		if (semtimedop(id, ops, (size_t)n, &wait) == 0)
			return 1;
		if (errno != EAGAIN && errno != EINTR)
			return -1; /* removed under us: go on without it */
	}
	return 0;
}

int hostgate_enter(int id, const atomic_int *stop)
{
	/* atomically: no reserve waits (it goes first), and a place */
	struct sembuf ops[] = {{2, 0, 0}, {0, -1, SEM_UNDO}};
	return take(id, ops, 2, stop);
}

void hostgate_leave(int id)
{
	struct sembuf give = {0, 1, SEM_UNDO};
	semop(id, &give, 1);
}

int hostgate_wanted(int id)
{
	return semctl(id, 2, GETVAL) > 0;
}

int hostgate_token(int id)
{
	struct sembuf take = {1, -1, SEM_UNDO | IPC_NOWAIT};
	return semop(id, &take, 1) == 0;
}

int hostgate_reserve(int id, const atomic_int *stop)
{
	struct sembuf want = {2, 1, SEM_UNDO}, got = {2, -1, SEM_UNDO};
	struct sembuf place = {0, -1, SEM_UNDO};
	semop(id, &want, 1);
	int r = take(id, &place, 1, stop);
	semop(id, &got, 1);
	return r;
}

void hostgate_token_give(int id)
{
	struct sembuf give = {1, 1, SEM_UNDO};
	semop(id, &give, 1);
}

void hostgate_remove(int id)
{
	semctl(id, 0, IPC_RMID);
}
