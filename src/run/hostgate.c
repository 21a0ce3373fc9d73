/*
 * hostgate.c - places shared by the run workers of every process of one user
 * on one host (see worker.h): a System V semaphore, taken and given back with
 * SEM_UNDO, so the kernel returns the places of a process that dies holding
 * them (a SIGKILL in the middle of a batch leaks nothing).
 *
 * Why a host and not a process: a batch's store work is CPU on both sides of
 * the connection, and the cores are the host's. Two worker processes with
 * two places each kept four batches (and four PostgreSQL backends) busy on
 * two cores: burn-downs ran at 20,000-24,000 runs/s against 27,000-28,000
 * with one place each, and a quiet tenant's p99 beside the flood doubled,
 * since every hop of its run waited for a core - and for locks whose holders
 * had been preempted.
 *
 * The key is a hash of the user, a name and the number of places: processes
 * configured alike share one set; a different count is a different set.
 * The set is created with its value 0 and then raised to `places` by one
 * semop, which sets its sem_otime: a process that finds the set waits for
 * that before it uses it.
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
	char id[160];
	snprintf(id, sizeof id, "awooop-store-gate/1/%u/%s/%d", (unsigned)getuid(), name, places);
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

int aw_hostgate_open(const char *name, int places)
{
	key_t key = gate_key(name, places);
	int id = semget(key, 1, IPC_CREAT | IPC_EXCL | 0600);
	if (id >= 0) {
		struct sembuf give = {0, (short)places, 0}; /* no undo: the places stay */
		if (semop(id, &give, 1) == 0)
			return id;
	} else if (errno == EEXIST && (id = semget(key, 1, 0600)) >= 0) {
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

int aw_hostgate_enter(int id, const atomic_int *stop)
{
	struct sembuf take = {0, -1, SEM_UNDO};
	while (!atomic_load(stop)) {
		struct timespec wait = {0, 50000000}; /* to see a stop */
		if (semtimedop(id, &take, 1, &wait) == 0)
			return 1;
		if (errno != EAGAIN && errno != EINTR)
			return -1; /* removed under us: go on without it */
	}
	return 0;
}

void aw_hostgate_leave(int id)
{
	struct sembuf give = {0, 1, SEM_UNDO};
	semop(id, &give, 1);
}

void aw_hostgate_remove(int id)
{
	semctl(id, 0, IPC_RMID);
}
