/* SPDX-License-Identifier: MIT */
/*
 * tools/run/cli.h - ortmem-run's command line (see ortmem-run(1)).
 */
#ifndef ORTMEM_TOOLS_RUN_CLI_H
#define ORTMEM_TOOLS_RUN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

struct opts {
	const char *mode;
	const char *path;
	uint64_t budget;
	const char *budget_arg;
	uint32_t batch;
	uint32_t passes;
	uint32_t prefetch_depth;
	uint64_t inject_nth;
	uint32_t threads;
	int device;		/* GPU ordinal for the hot buffers; -1 none */
	uint64_t device_budget;	/* 0: the host budget */
	uint64_t act_budget;	/* the activation arena's; 0: no limit */
	uint64_t act_host_budget;	/* their home's in RAM; 0: no limit */
	uint32_t skip;		/* span of the long skips; 0: none */
	int poison_evicted;	/* (testing) overwrite what leaves the arena */
	uint64_t drop_read_back;	/* (testing) skip this read-back, 1-based */
	uint64_t drop_move;	/* (testing) skip this move, 1-based */
	uint64_t inject_spill_nth;	/* (testing) fail this disk I/O */
	int json;
	int progress;
	struct model_cfg cfg;
};

void cli_usage(FILE *f);
/* Fill @o from the arguments (@create: the create command); 0, or -1
 * after saying what is wrong. */
int cli_parse(int argc, char **argv, struct opts *o, int *create);
/* After the passes: --inject-read-fault N with no failed read (@io_errors
 * 0) tested nothing, as N was past the run's read I/Os; -1 after saying
 * so, else 0.  (The weights file's statistics count reads, not the
 * I/Os the fault counts, so the message gives no figure.) */
int cli_check_read_fault(const struct opts *o, uint64_t io_errors);

#endif /* ORTMEM_TOOLS_RUN_CLI_H */
