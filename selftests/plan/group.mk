# SPDX-License-Identifier: MIT
#
# place_bound.sh runs bench/place/place_check, built here as the fixture
# $(O)/selftests/plan/fixtures/place_check: the bench's GLPK lower bound
# (the yardstick of make bench-place) against brute force on tiny graphs,
# so a broken bound fails make check.  It needs GLPK (libglpk-dev, which
# make deps installs); without it the fixture is not built and the script
# skips, saying why.

.DEFAULT_GOAL := all

PLACE_SRC := $(TOPDIR)/bench/place
PLACE_CHECK := $(O)/selftests/plan/fixtures/place_check
HAVE_GLPK := $(shell printf '\043include <glpk.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo y)

ifeq ($(HAVE_GLPK),y)
all: $(PLACE_CHECK)
endif

$(PLACE_CHECK): $(PLACE_SRC)/place_check.c $(PLACE_SRC)/place_bound.c \
		$(PLACE_SRC)/place_graph.c $(PLACE_SRC)/place_bench.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(ALL_LDFLAGS) -lglpk -lm
