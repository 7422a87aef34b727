# SPDX-License-Identifier: MIT
#
# Shared build settings, included by every sub-Makefile.
#
#   V=1        print full commands
#   CC=clang   build with clang (objects go to a folder of their own)
#   SAN=...    build with -fsanitize=... (address,undefined or thread)
#   O=DIR      put every output under DIR

TOPDIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
comma := ,

SAN ?=
ifeq ($(origin CC),default)
CC := gcc
endif
O ?= $(TOPDIR)/build/$(notdir $(CC))$(if $(SAN),-$(subst $(comma),-,$(SAN)))
export O

VERSION_MAJOR := $(shell sed -n 's/^\#define ORTMEM_VERSION_MAJOR \([0-9]*\)/\1/p' $(TOPDIR)/include/ortmem/core.h)
VERSION_MINOR := $(shell sed -n 's/^\#define ORTMEM_VERSION_MINOR \([0-9]*\)/\1/p' $(TOPDIR)/include/ortmem/core.h)
VERSION_PATCH := $(shell sed -n 's/^\#define ORTMEM_VERSION_PATCH \([0-9]*\)/\1/p' $(TOPDIR)/include/ortmem/core.h)
SONAME := libortmem.so.$(VERSION_MAJOR)
SOFILE := libortmem.so.$(VERSION_MAJOR).$(VERSION_MINOR)

CFLAGS ?= -O2 -g
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes \
	-Wstrict-prototypes -Wpointer-arith -Wformat=2 -Wno-format-nonliteral
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -I$(TOPDIR)/include $(WARNINGS) \
	-fno-omit-frame-pointer -MMD -MP
SAN_FLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-sanitize-recover=all)
ALL_CFLAGS = $(BASE_CFLAGS) $(SAN_FLAGS) $(CFLAGS) $(EXTRA_CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(patsubst $(O)/%,%,$(2))'
MAKEFLAGS += --no-print-directory
endif
