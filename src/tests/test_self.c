/*
 * Unit tests of src/common/heritage_self.c: where libheritage lives (the
 * loaded segments of the object that holds it: this executable, which
 * links libheritage.a statically) and whether a range is mapped.  Ranges
 * PAPI_set_opt accepts are checked with both.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_self.h"
#include "watch/watch.h"

static int holds(const struct heritage_segment *seg, int n, uintptr_t a)
{
	int found = 0;
	for (int i = 0; i < n; i++)
		found += a >= seg[i].start && a < seg[i].end;
	return found;
}

static int writable_global = 1;
int main(void);

START_TEST(segments_hold_libheritage_and_only_its_object)
{
	struct heritage_segment seg[HERITAGE_SELF_MAX_SEGMENTS];
	int n = heritage_self_segments(seg);

	/* At least code and data; no more than the array holds. */
	ck_assert_int_ge(n, 2);
	ck_assert_int_le(n, HERITAGE_SELF_MAX_SEGMENTS);
	for (int i = 0; i < n; i++) {
		ck_assert_uint_lt(seg[i].start, seg[i].end);
		for (int j = 0; j < i; j++)
			ck_assert_msg(seg[i].end <= seg[j].start || seg[j].end <= seg[i].start, "segments %d and %d overlap", i, j);
	}
	/* libheritage's code and data, exactly once each. */
	ck_assert_int_eq(holds(seg, n, (uintptr_t)&heritage_self_segments), 1);
	ck_assert_int_eq(holds(seg, n, (uintptr_t)&heritage_fail), 1);
	ck_assert_int_eq(holds(seg, n, (uintptr_t)&watch_pagetrap_ops), 1);
	/* Statically linked: the executable is that object. */
	ck_assert_int_eq(holds(seg, n, (uintptr_t)&main), 1);
	ck_assert_int_eq(holds(seg, n, (uintptr_t)&writable_global), 1);
	/* Not the heap, the stack, or a fresh mapping. */
	int local;
	void *heap = malloc(64);
	void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(holds(seg, n, (uintptr_t)&local), 0);
	ck_assert_int_eq(holds(seg, n, (uintptr_t)map), 0);
	ck_assert_int_eq(holds(seg, n, (uintptr_t)heap), 0);
	free(heap);
	munmap(map, 4096);
	/* The same answer twice. */
	struct heritage_segment again[HERITAGE_SELF_MAX_SEGMENTS];
	ck_assert_int_eq(heritage_self_segments(again), n);
	for (int i = 0; i < n; i++) {
		ck_assert_uint_eq(again[i].start, seg[i].start);
		ck_assert_uint_eq(again[i].end, seg[i].end);
	}
}
END_TEST

START_TEST(range_mapped_checks_every_page)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	uintptr_t a = (uintptr_t)p;

	ck_assert_int_eq(heritage_range_mapped(a, a + 3 * page), 0);
	ck_assert_int_eq(heritage_range_mapped(a + 1, a + 5), 0);           /* inside one page */
	ck_assert_int_eq(heritage_range_mapped(a + page - 1, a + page + 1), 0); /* across two */
	/* PROT_NONE pages are mapped. */
	ck_assert_int_eq(mprotect(p, page, PROT_NONE), 0);
	ck_assert_int_eq(heritage_range_mapped(a, a + page), 0);

	/* A hole in the middle. */
	ck_assert_int_eq(munmap(p + page, page), 0);
	ck_assert_int_eq(heritage_range_mapped(a, a + 3 * page), -ENOMEM);
	ck_assert_int_eq(heritage_range_mapped(a + page - 1, a + page + 1), -ENOMEM);
	ck_assert_int_eq(heritage_range_mapped(a + page + 8, a + page + 16), -ENOMEM);
	ck_assert_int_eq(heritage_range_mapped(a, a + page), 0);
	ck_assert_int_eq(heritage_range_mapped(a + 2 * page, a + 3 * page), 0);
	/* end is exclusive: up to the hole is fine. */
	ck_assert_int_eq(heritage_range_mapped(a + 8, a + page), 0);
	munmap(p, page);
	munmap(p + 2 * page, page);
}
END_TEST

/* mincore is asked in chunks of 256 pages: a hole in the last page of a
 * 300-page range is found, and one of 256 pages exactly needs one call. */
START_TEST(range_mapped_beyond_one_chunk)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 300 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	uintptr_t a = (uintptr_t)p;

	ck_assert_int_eq(heritage_range_mapped(a, a + 300 * page), 0);
	ck_assert_int_eq(heritage_range_mapped(a, a + 256 * page), 0);
	ck_assert_int_eq(munmap(p + 299 * page, page), 0);
	ck_assert_int_eq(heritage_range_mapped(a, a + 300 * page), -ENOMEM);
	ck_assert_int_eq(heritage_range_mapped(a, a + 299 * page), 0);
	ck_assert_int_eq(munmap(p + 256 * page, page), 0);
	ck_assert_int_eq(heritage_range_mapped(a, a + 257 * page), -ENOMEM);
	ck_assert_int_eq(heritage_range_mapped(a, a + 256 * page), 0);
	munmap(p, 300 * page);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("self");
	TCase *tc = tcase_create("heritage_self");
	tcase_add_test(tc, segments_hold_libheritage_and_only_its_object);
	tcase_add_test(tc, range_mapped_checks_every_page);
	tcase_add_test(tc, range_mapped_beyond_one_chunk);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
