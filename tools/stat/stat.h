/* SPDX-License-Identifier: MIT */
/*
 * tools/stat/stat.h - the parts of ortmem-stat: read.c gathers the node
 * (module attributes, /proc fdinfo, governors' files), output.c prints it.
 */
#ifndef ORTMEM_TOOLS_STAT_H
#define ORTMEM_TOOLS_STAT_H

#include <stdbool.h>
#include <stdint.h>

#include <ortmem/ortmem.h>

#define SYSFS_DEFAULT "/sys/class/misc/ortmem"
#define DEV_DEFAULT "/dev/ortmem"
#define ATTR_MAX 4096
#define KEYS_MAX 16

extern const char *const prog;

enum fmt { FMT_TABLE, FMT_JSON, FMT_PROM };

struct mod_key {
	char key[48];		/* without the "ortmem-" prefix */
	uint64_t value;		/* bytes when the line had a unit */
};

struct proc {
	int pid;
	char name[64];
	int clients;		/* open files of the device */
	int nkeys;
	struct mod_key keys[KEYS_MAX];
	int ngov;
	struct ortmem_gov_record *gov;
};

struct node {
	struct proc *procs;
	int nprocs;
};

struct cfg {
	enum fmt fmt;
	const char *sysfs, *proc, *dev, *run_dir;
	int probe, heap;
	double watch;
};

struct attr {
	char name[64];
	char value[ATTR_MAX];
};

/* read.c */
int read_attr(int dfd, const char *dir, const char *name, char *buf,
	      size_t len);
int gather(struct node *nd, const struct cfg *c);
void node_free(struct node *nd);
int read_sysfs(const char *dir, struct attr **out, int *np);

/* output.c */
void json_str(const char *s);
void print_table(const struct node *nd, const struct attr *a, int na,
		 const char *sysfs);
void print_json(const struct node *nd, const struct attr *a, int na);
void print_prom(const struct node *nd, const struct attr *a, int na);

#endif /* ORTMEM_TOOLS_STAT_H */
