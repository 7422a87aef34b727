// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: any bytes through ortmem-plan's whole front end - the
 * wire check and protobuf-c decode, graph building (scopes, Kahn order,
 * bodies), shape inference with contents, and the plan (folding, views,
 * body peaks) with a tiny search budget.  Errors are fine; crashes, leaks
 * and sanitizer reports are not.
 *
 *   make -C tools fuzz CC=clang && build/clang/tools/fuzz-onnx -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>

#include "plan_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct md_pin pins[] = { { "x", 0, 1 }, { "input", 1, 64 } };
	Onnx__ModelProto *proto = NULL;
	struct md_model m;
	struct pm_result r;
	struct pm_opts o = { .fold = true, .views = true };
	char err[MD_ERR_LEN];
	FILE *null;
	int ret;

	if (md_load_mem(data, size, &proto, err, sizeof(err)))
		return 0;
	o.plan.sz = sizeof(o.plan);
	o.plan.align[ORTMEM_TIER_DEVICE] = 1;
	o.plan.max_iterations = 50;
	o.plan.threads = 1;
	/* Pins naming absent inputs fail cleanly; try with and without. */
	ret = md_build(&m, proto);
	/* Data-dependent sizes deferred, or at their most: both ways. */
	m.upper_bounds = size & 8;
	if (!ret && (!md_infer(&m, pins, size & 1 ? 2 : 0) || !md_infer(&m, NULL, 0))) {
		o.fold = !(size & 2);
		o.views = !(size & 4);
		pm_build(&m, &o, &r);
		null = fopen("/dev/null", "w");
		if (null) {
			out_json(null, &m, &r);
			out_table(null, &m, &r);
			if (r.status == 0)
				out_svg(null, &m, &r, "fuzz");
			fclose(null);
		}
		pm_free(&r);
	}
	md_free(&m);
	md_proto_free(proto);
	return 0;
}
