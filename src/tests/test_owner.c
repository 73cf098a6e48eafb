/*
 * Unit tests of src/common/heritage_owner.c: the thread an event set's
 * counting belongs to.  The owner is who called heritage_owner_set; another
 * live thread is refused with a message naming both threads; an owner that
 * exited is known to have exited as soon as pthread_join returns (its
 * thread-specific-data destructor ran), and in a forked child only the
 * forking thread exists.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_owner.h"

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

START_TEST(the_caller_becomes_the_owner)
{
	struct heritage_owner o;

	memset(&o, 0, sizeof o);
	heritage_owner_set(&o);
	ck_assert_int_eq(o.tid, my_tid());
	ck_assert_int_eq(heritage_owner_is_self(&o), 1);
	ck_assert_int_eq(heritage_owner_gone(&o), 0);
	ck_assert_int_eq(heritage_owner_check(&o, "itanium2", "PAPI_read", 0), 0);
	/* 1: the owner stops, and must undo what its thread holds. */
	ck_assert_int_eq(heritage_owner_stop(&o, "itanium2", 0), 1);
	ck_assert_int_eq(heritage_owner_stop(&o, "itanium2", 1), 1);
}
END_TEST

/* ---- another live thread -------------------------------------------------- */

struct call {
	const struct heritage_owner *o;
	int gone_ok;
	int is_self, check, stop, gone;
	pid_t tid;
	char msg[1024];
};

static void *call_from_other(void *arg)
{
	struct call *c = arg;
	c->tid = my_tid();
	c->is_self = heritage_owner_is_self(c->o);
	c->gone = heritage_owner_gone(c->o);
	c->check = heritage_owner_check(c->o, "itanium2", "PAPI_reset", c->gone_ok);
	snprintf(c->msg, sizeof c->msg, "%s", heritage_last_error());
	c->stop = heritage_owner_stop(c->o, "itanium2", c->gone_ok);
	return NULL;
}

START_TEST(another_live_thread_is_refused_with_both_ids)
{
	struct heritage_owner o;
	heritage_owner_set(&o);

	for (int gone_ok = 0; gone_ok <= 1; gone_ok++) {
		struct call c = { .o = &o, .gone_ok = gone_ok };
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, call_from_other, &c), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(c.is_self, 0);
		ck_assert_int_eq(c.gone, 0);
		/* gone_ok only excuses an owner that exited; this one is alive. */
		ck_assert_int_eq(c.check, -EINVAL);
		ck_assert_int_eq(c.stop, -EINVAL);
		char want[128];
		snprintf(want, sizeof want, "itanium2: PAPI_reset from thread %d: the event set was started by thread %d",
		         (int)c.tid, (int)my_tid());
		ck_assert_msg(strncmp(c.msg, want, strlen(want)) == 0, "message: %s", c.msg);
		ck_assert_msg(strstr(c.msg, "call PAPI_reset there") != NULL, "message: %s", c.msg);
	}
}
END_TEST

/* ---- an owner that exited ------------------------------------------------- */

static void *own_and_exit(void *arg)
{
	heritage_owner_set(arg);
	return NULL;
}

START_TEST(an_exited_owner_is_gone_as_soon_as_it_is_joined)
{
	/* Repeated: before the destructor recorded exits, a check right after
	 * the join saw the thread alive in 1 run of a few under load. */
	for (int i = 0; i < 200; i++) {
		struct heritage_owner o;
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, own_and_exit, &o), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_ne(o.tid, my_tid());
		ck_assert_int_eq(heritage_owner_is_self(&o), 0);
		ck_assert_msg(heritage_owner_gone(&o) == 1, "run %d: thread %d joined but not gone", i, (int)o.tid);
		/* Nothing left to undo: accepted with gone_ok, stop says 0. */
		ck_assert_int_eq(heritage_owner_check(&o, "alpha21064", "PAPI_stop", 1), 0);
		ck_assert_int_eq(heritage_owner_stop(&o, "alpha21064", 1), 0);
		/* Refused without, saying the counts went with the thread. */
		heritage_clear_error();
		ck_assert_int_eq(heritage_owner_check(&o, "alpha21064", "PAPI_read", 0), -EINVAL);
		char want[160];
		snprintf(want, sizeof want, "alpha21064: PAPI_read from thread %d: the event set was started by thread %d, "
		         "which has exited", (int)my_tid(), (int)o.tid);
		ck_assert_msg(strncmp(heritage_last_error(), want, strlen(want)) == 0, "message: %s",
		              heritage_last_error());
		ck_assert_int_eq(heritage_owner_stop(&o, "alpha21064", 0), -EINVAL);
	}
}
END_TEST

START_TEST(a_thread_that_sets_again_is_alive_again)
{
	/* heritage_owner_set from the main thread after others exited: the
	 * main thread never exited, whatever the exit ring holds. */
	struct heritage_owner gone, me;
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, own_and_exit, &gone), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	heritage_owner_set(&me);
	ck_assert_int_eq(heritage_owner_gone(&me), 0);
	ck_assert_int_eq(heritage_owner_gone(&gone), 1);
}
END_TEST

/* ---- fork ----------------------------------------------------------------- */

static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
/* Set once the thread owns its struct.  The test polled the struct's tid
 * itself, atomically, while heritage_owner_set writes it plainly (its
 * owner thread writes it before anyone may read it): ThreadSanitizer
 * reported the race (make check-tsan, test_owner.c:159). */
static int owner_ready;

static void *own_and_wait(void *arg)
{
	heritage_owner_set(arg);
	__atomic_store_n(&owner_ready, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&hold);
	pthread_mutex_unlock(&hold);
	return NULL;
}

START_TEST(in_a_forked_child_only_the_forking_thread_exists)
{
	struct heritage_owner other = { 0 }, me;
	pthread_t t;

	heritage_owner_set(&me);
	pthread_mutex_lock(&hold);
	ck_assert_int_eq(pthread_create(&t, NULL, own_and_wait, &other), 0);
	while (!__atomic_load_n(&owner_ready, __ATOMIC_ACQUIRE))
		sched_yield();
	ck_assert_int_eq(heritage_owner_gone(&other), 0);

	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int bad = 0;
		/* The other owner thread was not copied: gone, nothing to undo. */
		bad |= heritage_owner_gone(&other) != 1;
		bad |= heritage_owner_check(&other, "itanium2", "PAPI_stop", 1) != 0;
		bad |= (heritage_owner_stop(&other, "itanium2", 0) != -EINVAL) << 1;
		/* The child is a copy of the forking thread: its thread-local
		 * address, so the owner's set is its own (is_self), and a stop
		 * undoes what the copied thread holds. */
		bad |= (heritage_owner_is_self(&me) != 1) << 2;
		bad |= (heritage_owner_stop(&me, "itanium2", 0) != 1) << 3;
		_exit(bad);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	pthread_mutex_unlock(&hold);
	pthread_join(t, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("owner");
	TCase *tc = tcase_create("heritage_owner");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, the_caller_becomes_the_owner);
	tcase_add_test(tc, another_live_thread_is_refused_with_both_ids);
	tcase_add_test(tc, an_exited_owner_is_gone_as_soon_as_it_is_joined);
	tcase_add_test(tc, a_thread_that_sets_again_is_alive_again);
	tcase_add_test(tc, in_a_forked_child_only_the_forking_thread_exists);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
