/*
 * range_threads: four threads, each with its own itanium2 event set and the
 * same exact range, sweep the SAME watched pages at the same time, each
 * touching every fourth element.  Every thread must count exactly its own
 * accesses: the page-trap backend must not let one thread's open page hide
 * another thread's access, nor count it for the wrong thread.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"

#define NTHREADS 4
#define N 4096          /* ints: four pages */
#define ROUNDS 2

static int *shared;
static pthread_barrier_t barrier;

struct result {
	long long loads, stores;
	int rc;
	char backend[32];
};

__attribute__((noinline)) static void sweep(int t)
{
	long sum = 0;

	for (int r = 0; r < ROUNDS; r++) {
		for (int i = t; i < N; i += NTHREADS)
			shared[i] = i;
		for (int i = t; i < N; i += NTHREADS)
			sum += shared[i];
	}
	__asm__ volatile("" : : "r"(sum));
}


static struct result results[NTHREADS];

static void *run(void *arg)
{
	int t = (int)(intptr_t)arg;
	struct result *res = &results[t];
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long v[2];

	res->rc = PAPI_register_thread();
	if (res->rc == PAPI_OK) res->rc = PAPI_create_eventset(&set);
	if (res->rc == PAPI_OK) res->rc = PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1");
	if (res->rc == PAPI_OK) res->rc = PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1");
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)shared;
	opt.addr.end = (vptr_t)(shared + N);
	if (res->rc == PAPI_OK) res->rc = PAPI_set_opt(PAPI_DATA_ADDRESS, &opt);
	pthread_barrier_wait(&barrier);
	if (res->rc == PAPI_OK) res->rc = PAPI_start(set);
	pthread_barrier_wait(&barrier);
	if (res->rc == PAPI_OK) {
		sweep(t);
		res->rc = PAPI_stop(set, v);
		res->loads = v[0];
		res->stores = v[1];
		papi_heritage_itanium2_backend(set, res->backend, sizeof res->backend);
	}
	if (res->rc != PAPI_OK)
		fprintf(stderr, "thread %d: %s (%s)\n", t, PAPI_strerror(res->rc), papi_heritage_last_error());
	PAPI_cleanup_eventset(set);
	PAPI_destroy_eventset(&set);
	PAPI_unregister_thread();
	return NULL;
}

int main(void)
{
	pthread_t tid[NTHREADS];

	heritage_test_init();
	if (!HERITAGE_TEST_INSTRUMENTED) /* multi-page ranges: only page traps count them */
		heritage_test_require_backend("itanium2", "pagetrap");
	CHECK_PAPI(PAPI_thread_init(pthread_self));
	shared = aligned_alloc(4096, N * sizeof(int));
	memset(shared, 0, N * sizeof(int));
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (int attempt = 0; attempt < 3; attempt++) {
		memset(results, 0, sizeof results);
		for (int t = 0; t < NTHREADS; t++)
			pthread_create(&tid[t], NULL, run, (void *)(intptr_t)t);
		for (int t = 0; t < NTHREADS; t++)
			pthread_join(tid[t], NULL);
		for (int t = 0; t < NTHREADS; t++) {
			EXPECT_EQ("PAPI calls", results[t].rc, PAPI_OK);
			EXPECT_EQ("loads of this thread", results[t].loads, ROUNDS * N / NTHREADS);
			EXPECT_EQ("stores of this thread", results[t].stores, ROUNDS * N / NTHREADS);
		}
		printf("attempt %d: backend %s, thread 0: %lld loads %lld stores\n", attempt, results[0].backend,
		       results[0].loads, results[0].stores);
	}
	free(shared);
	PAPI_shutdown();
	return heritage_test_done("range_threads");
}
