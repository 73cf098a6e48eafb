/*
 * Unit tests of src/watch/watch_blocks*.c: instruction ranges counted from
 * the block hooks, on the hand-written functions of blocks_cases.S, whose
 * instruction counts are known (written beside each block there).  They
 * call libheritage's own __sanitizer_cov_trace_pc, as instrumented code
 * does; the counts go where the instrument backend puts them (insns, then
 * insns_pair[0..3]).  Covers blocks without hooks on edges (deferred paths),
 * recursion inside one, a loop whose every iteration defers, ranges that cut
 * blocks, two code pairs, a cold part, and each refusal with its reason.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "watch/watch.h"
#include "watch/watch_blocks.h"

void __asan_handle_no_return(void); /* the instrument backend's (watch_instrument.c) */

long bc_defer(long n);
long bc_rec(long n);
long bc_cold(long x);
long bc_ambiguous(long x);
long bc_orphan_loop(long n);
long bc_jump_table(long i);
long bc_entry_nohook(long n);
long bc_plain(long x);
extern char bc_defer_loop[], bc_defer_end[], bc_rec_end[], bc_cold_end[], bc_cold_part[], bc_ambiguous_end[],
	bc_orphan_loop_end[], bc_jump_table_end[], bc_entry_nohook_end[], bc_plain_end[];

static struct watch_request req1(const void *lo, const void *hi)
{
	struct watch_request r;
	memset(&r, 0, sizeof r);
	r.want_code = 1;
	r.ncode = 1;
	r.code_pair[0].start = (uintptr_t)lo;
	r.code_pair[0].end = (uintptr_t)hi;
	return r;
}

/* insns, insns_pair[0..3] of fn(arg) over r. */
static void count(const struct watch_request *r, long (*fn)(long), long arg, uint64_t c[5])
{
	char why[WATCH_ERRLEN];
	memset(c, 0, 5 * sizeof *c);
	/* As the backend does: fits first (it is told the no-return hook). */
	int err = watch_blocks_fits(r, (uintptr_t)__asan_handle_no_return, why, sizeof why);
	if (err == 0)
		err = watch_blocks_start(r, c, why, sizeof why);
	ck_assert_msg(err == 0, "start: %d %s", err, why);
	fn(arg);
	watch_blocks_stop();
}

static uint64_t count1(const void *lo, const void *hi, long (*fn)(long), long arg)
{
	struct watch_request r = req1(lo, hi);
	uint64_t c[5];
	count(&r, fn, arg, c);
	ck_assert_uint_eq(c[1], c[0]);
	return c[0];
}

START_TEST(deferred_paths_on_the_entry_edges)
{
	for (long n = -1; n <= 5; n++)
		ck_assert_uint_eq(count1(bc_defer, bc_defer_end, bc_defer, n), n >= 1 ? 13 + 4 * (uint64_t)n : 9);
	ck_assert_uint_eq(count1(bc_defer, bc_defer_end, bc_defer, 100000), 13 + 4 * 100000);
}
END_TEST

START_TEST(ranges_that_cut_blocks)
{
	/* From the loop on: L 4n, J 1, P 2, X 3 (n >= 1); B 1, X 3 (n = 0). */
	ck_assert_uint_eq(count1(bc_defer_loop, bc_defer_end, bc_defer, 7), 4 * 7 + 6);
	ck_assert_uint_eq(count1(bc_defer_loop, bc_defer_end, bc_defer, 0), 4);
	/* Without the push (the entry block's first instruction, 1 byte). */
	ck_assert_uint_eq(count1((char *)bc_defer + 1, bc_defer_end, bc_defer, 7), 13 + 4 * 7 - 1);
	/* Only the push and the mov (3 bytes) before the entry's hook. */
	ck_assert_uint_eq(count1(bc_defer, (char *)bc_defer + 4, bc_defer, 7), 2);
}
END_TEST

START_TEST(two_code_pairs)
{
	struct watch_request r = req1(bc_defer, bc_defer_loop);
	r.ncode = 2;
	r.code_pair[1].start = (uintptr_t)bc_defer_loop;
	r.code_pair[1].end = (uintptr_t)bc_defer_end;
	uint64_t c[5];
	count(&r, bc_defer, 3, c);
	ck_assert_uint_eq(c[0], 13 + 4 * 3);
	ck_assert_uint_eq(c[1], 7);               /* E, A */
	ck_assert_uint_eq(c[2], 4 * 3 + 6);       /* L, J, P, X */
	ck_assert_uint_eq(c[3], 0);
	/* Overlapping pairs: each counts its own, insns once. */
	r.code_pair[1].start = (uintptr_t)bc_defer;
	count(&r, bc_defer, 3, c);
	ck_assert_uint_eq(c[0], 13 + 4 * 3);
	ck_assert_uint_eq(c[1], 7);
	ck_assert_uint_eq(c[2], 13 + 4 * 3);
}
END_TEST

START_TEST(recursion_inside_a_deferred_path)
{
	for (long n = 0; n <= 6; n++)
		ck_assert_uint_eq(count1(bc_rec, bc_rec_end, bc_rec, n), 12 * (uint64_t)n + 10);
}
END_TEST

START_TEST(cold_part)
{
	/* The cold part alone, first: its function's entry is outside the range
	 * and not known yet (what jumps into the cold part is not). */
	char why[WATCH_ERRLEN];
	struct watch_request r = req1(bc_cold_part, (char *)bc_cold_part + 8);   /* call hook (5), neg (3) */
	ck_assert_int_eq(watch_blocks_fits(&r, (uintptr_t)__asan_handle_no_return, why, sizeof why), -ENOTSUP);
	ck_assert_msg(strstr(why, "cold part"), "%s", why);

	ck_assert_uint_eq(count1(bc_cold, bc_cold_end, bc_cold, 1), 8);
	ck_assert_uint_eq(count1(bc_cold, bc_cold_end, bc_cold, -1), 8);   /* the cold part is outside */
	r = req1(bc_cold, bc_cold_end);
	r.ncode = 2;
	r.code_pair[1].start = (uintptr_t)bc_cold_part;
	r.code_pair[1].end = (uintptr_t)bc_cold_part + 8;
	uint64_t c[5];
	count(&r, bc_cold, -1, c);
	ck_assert_uint_eq(c[0], 10);
	ck_assert_uint_eq(c[1], 8);
	ck_assert_uint_eq(c[2], 2);
	/* Once its function has been analysed, the cold part alone counts. */
	ck_assert_uint_eq(count1(bc_cold_part, (char *)bc_cold_part + 8, bc_cold, -1), 2);
	ck_assert_uint_eq(count1(bc_cold_part, (char *)bc_cold_part + 8, bc_cold, 1), 0);
}
END_TEST

static void refused(const void *lo, const void *hi, const char *because)
{
	char why[WATCH_ERRLEN];
	struct watch_request r = req1(lo, hi);
	ck_assert_int_eq(watch_blocks_fits(&r, (uintptr_t)__asan_handle_no_return, why, sizeof why), -ENOTSUP);
	ck_assert_msg(strstr(why, because), "want \"%s\" in: %s", because, why);
	ck_assert_msg(strstr(why, "pagetrap backend"), "%s", why);
}

START_TEST(refusals_say_why)
{
	refused(bc_ambiguous, bc_ambiguous_end, "different instruction counts");
	refused(bc_orphan_loop, bc_orphan_loop_end, "a loop with no block hook");
	refused(bc_jump_table, bc_jump_table_end, "jump table");
	refused(bc_entry_nohook, bc_entry_nohook_end, "entry block");
	refused(bc_plain, bc_plain_end, "no block hook is called");
	/* Not code. */
	static char data[64];
	char why[WATCH_ERRLEN];
	struct watch_request r = req1(data, data + 64);
	ck_assert_int_eq(watch_blocks_fits(&r, (uintptr_t)__asan_handle_no_return, why, sizeof why), -ENOTSUP);
	ck_assert_msg(strstr(why, "no code"), "%s", why);
	/* No range. */
	r.ncode = 0;
	ck_assert_int_eq(watch_blocks_fits(&r, (uintptr_t)__asan_handle_no_return, why, sizeof why), -ENOTSUP);
	ck_assert_msg(strstr(why, "not executed instructions"), "%s", why);
	/* Outside the blocks that make it refuse, the same function counts:
	 * [entry, +4) holds the push and the mov before its hook. */
	ck_assert_uint_eq(count1(bc_ambiguous, (char *)bc_ambiguous + 4, bc_ambiguous, 1), 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blocks");
	TCase *tc = tcase_create("blocks");
	tcase_add_test(tc, deferred_paths_on_the_entry_edges);
	tcase_add_test(tc, ranges_that_cut_blocks);
	tcase_add_test(tc, two_code_pairs);
	tcase_add_test(tc, recursion_inside_a_deferred_path);
	tcase_add_test(tc, cold_part);
	tcase_add_test(tc, refusals_say_why);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
