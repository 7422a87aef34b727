/* SPDX-License-Identifier: MIT */
/* What every host-tier test program uses: sizes and a checked call. */
#ifndef ORTMEM_SELFTESTS_HOST_TEST_H
#define ORTMEM_SELFTESTS_HOST_TEST_H

#include <ortmem/ortmem.h>

#include "../harness.h"

#define MIB (1024ull * 1024)

/* Assert success, saying the library's detailed error when there is none. */
#define OK(call)							\
	do {								\
		int ok_ret_ = (call);					\
		if (ok_ret_)						\
			TH_LOG("%s: %s", #call, ortmem_last_error_message()); \
		ASSERT_EQ(0, ok_ret_);					\
	} while (0)

#endif /* ORTMEM_SELFTESTS_HOST_TEST_H */
