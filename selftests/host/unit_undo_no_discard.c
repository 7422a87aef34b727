// SPDX-License-Identifier: MIT
/*
 * A promotion that fails half way, under a module without EVICT_DISCARD
 * (one built before it): the library's other undo gives the pages that
 * came back their own CRCs when evicting them again, so a touch there gets
 * SIGBUS, never zeroes or stale bytes, and the pages past the failure
 * still fault their right bytes back from disk.  The module under test
 * has the feature; the test hides it from the library's copy of the
 * module's version (internal state, hence a unit test), which is all the
 * library looks at.  Runs in the VM, with the debug module's fault knob.
 */
#include "host/host_internal.h"
#include "demote_util.h"

TEST_F(dm, a_failed_promotion_without_discard_never_reads_zeroes)
{
	uint64_t len = 12 * MIB + 3 * self->page, off;
	uint64_t probes[] = { MIB, 3 * MIB + 8 * self->page + 40,
			      4 * MIB + MIB / 2, 10 * MIB + 16, len - 8 };
	unsigned int i, bus = 0;
	void *p;

	if (self->mode != ORTMEM_HOST_SPILL_MAP)
		SKIP("needs the module's spill mapping");
	if (fail_knob("off"))
		SKIP("no /sys/kernel/debug/ortmem/fail (a production build of the module, or not root)");
	self->host->dev->version.features &= ~(uint64_t)ORTMEM_FEAT_EVICT_DISCARD;
	ASSERT_EQ(0, ortmem_host_alloc(self->host, len, -1, &p));
	fill(p, len, self->page, 13);
	OK(ortmem_host_demote(self->host, p));
	/* The 6th charge is in the second 4 MiB step: the first step came
	 * back, was read, and is evicted again by the undo. */
	ASSERT_EQ(0, fail_knob("charge_cap 6"));
	EXPECT_NE(0, ortmem_host_promote(self->host, p));
	ASSERT_EQ(0, fail_knob("off"));
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		uint64_t got = 0;

		off = probes[i];
		if (read_gets_sigbus((volatile uint64_t *)p + off / 8, &got)) {
			bus++;
			continue;
		}
		/* Not SIGBUS: then the right bytes, never zero. */
		EXPECT_EQ(word_at(off, self->page, 13), got);
	}
	/* The first step's pages were evicted with their read CRCs: those
	 * touches cannot verify against the extent and get SIGBUS. */
	EXPECT_GE(bus, 1);
	/* Past the failure nothing came back: the right bytes fault in. */
	EXPECT_TRUE(reads_right(_metadata, p, len - 8, self->page, 13));
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
}

TEST_HARNESS_MAIN
