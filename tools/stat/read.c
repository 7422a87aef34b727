// SPDX-License-Identifier: MIT
/*
 * ortmem-stat's input: the module's attributes, each process's fdinfo of
 * /dev/ortmem, and every governor's published file.  Whatever is read may
 * be hostile (a FIFO planted in --sysfs, a huge value): files are opened
 * non-blocking, only regular ones are read, and reads are bounded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stat.h"

/* ---- reading attributes: regular files only, never blocking ---- */

/* Up to @len - 1 bytes of @name in @dfd; -1 with a reason on stderr. */
int read_attr(int dfd, const char *dir, const char *name, char *buf,
	      size_t len)
{
	char full[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(full, sizeof(full), "%s/%s", dir, name);
	/* AT_FDCWD: @name is relative to @dir. */
	fd = openat(dfd, dfd == AT_FDCWD ? full : name,
		    O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s: not a regular file; skipped\n",
			prog, full);
		close(fd);
		return -1;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* ---- gathering the node ---- */

static struct proc *proc_get(struct node *nd, const struct cfg *c, int pid)
{
	struct proc *p;
	char dir[64], comm[256];
	int i;

	for (i = 0; i < nd->nprocs; i++)
		if (nd->procs[i].pid == pid)
			return &nd->procs[i];
	p = realloc(nd->procs, (nd->nprocs + 1) * sizeof(*p));
	if (!p)
		return NULL;
	nd->procs = p;
	p = &nd->procs[nd->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(dir, sizeof(dir), "%s/%d", c->proc, pid);
	if (read_attr(AT_FDCWD, dir, "comm", comm, sizeof(comm)) == 0)
		snprintf(p->name, sizeof(p->name), "%.63s", comm);
	return p;
}

/* "ortmem-KEY:\t123 KiB": add it to @p (summed over the process's files). */
static void fdinfo_line(struct proc *p, char *line)
{
	static const struct { const char *u; unsigned int shift; } units[] = {
		{ "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 }, { "", 0 },
	};
	char *colon, *end;
	unsigned long long v;
	int i, k;

	if (strncmp(line, "ortmem-", 7) || !(colon = strchr(line, ':')))
		return;
	*colon = '\0';
	line += 7;
	errno = 0;
	v = strtoull(colon + 1, &end, 10);
	if (errno || end == colon + 1 || strlen(line) >= sizeof(p->keys[0].key))
		return;
	while (*end == ' ' || *end == '\t')
		end++;
	for (i = 0; units[i].u[0] && strcmp(end, units[i].u); i++)
		;
	if (strcmp(end, units[i].u) || v > (UINT64_MAX >> units[i].shift))
		return;
	v <<= units[i].shift;
	for (k = 0; k < p->nkeys && strcmp(p->keys[k].key, line); k++)
		;
	if (k == p->nkeys) {
		if (k == KEYS_MAX)
			return;
		snprintf(p->keys[k].key, sizeof(p->keys[k].key), "%s", line);
		p->nkeys++;
	}
	p->keys[k].value += v;
}

static void gather_fdinfo_pid(struct node *nd, const struct cfg *c, int pid,
			      dev_t rdev)
{
	char path[PATH_MAX], buf[ATTR_MAX];
	struct dirent *de;
	struct proc *p = NULL;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%d/fd", c->proc, pid);
	d = opendir(path);
	if (!d)
		return;
	snprintf(path, sizeof(path), "%s/%d/fdinfo", c->proc, pid);
	while ((de = readdir(d))) {
		struct stat st;
		char *line, *save;

		if (de->d_name[0] == '.' ||
		    fstatat(dirfd(d), de->d_name, &st, 0) ||
		    !S_ISCHR(st.st_mode) || st.st_rdev != rdev)
			continue;
		if (!p && !(p = proc_get(nd, c, pid)))
			break;
		p->clients++;
		if (read_attr(AT_FDCWD, path, de->d_name, buf, sizeof(buf)))
			continue;
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			fdinfo_line(p, line);
	}
	closedir(d);
}

static void gather_fdinfo(struct node *nd, const struct cfg *c)
{
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (stat(c->dev, &st) || !S_ISCHR(st.st_mode))
		return;		/* no module: no clients */
	d = opendir(c->proc);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		gather_fdinfo_pid(nd, c, (int)pid, st.st_rdev);
	}
	closedir(d);
}

struct scan_ctx {
	struct node *nd;
	const struct cfg *c;
};

static int gov_found(const struct ortmem_gov_record *rec, void *arg)
{
	struct scan_ctx *sc = arg;
	struct proc *p = proc_get(sc->nd, sc->c, rec->pid);
	struct ortmem_gov_record *g;
	int i;

	if (!p)
		return -ENOMEM;
	for (i = 0; i < p->ngov; i++)
		if (p->gov[i].serial == rec->serial)
			return 0;	/* seen through another folder */
	g = realloc(p->gov, (p->ngov + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	p->gov = g;
	p->gov[p->ngov++] = *rec;
	if (rec->name[0])
		snprintf(p->name, sizeof(p->name), "%.63s", rec->name);
	return 0;
}

int gather(struct node *nd, const struct cfg *c)
{
	struct scan_ctx sc = { nd, c };
	DIR *d;
	struct dirent *de;
	int ret;

	memset(nd, 0, sizeof(*nd));
	gather_fdinfo(nd, c);
	ret = ortmem_gov_scan(c->run_dir, gov_found, &sc);
	if (ret)
		return ret;
	/* By default also every user's $XDG_RUNTIME_DIR/ortmem. */
	if (c->run_dir || !(d = opendir("/run/user")))
		return 0;
	while (!ret && (de = readdir(d))) {
		char dir[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "/run/user/%s/ortmem", de->d_name);
		ret = ortmem_gov_scan(dir, gov_found, &sc);
		if (ret == -EACCES)
			ret = 0;
	}
	closedir(d);
	return ret;
}

void node_free(struct node *nd)
{
	int i;

	for (i = 0; i < nd->nprocs; i++)
		free(nd->procs[i].gov);
	free(nd->procs);
}


/* ---- the module's attributes ---- */

/* Append every regular attribute file of @dir, sorted, named @prefix
 * and its name, to *@a (*@k of them); -1 when @dir cannot be read. */
static int read_attrs(const char *dir, const char *prefix, struct attr **a,
		      int *k)
{
	struct dirent **names;
	struct attr *grown;
	int n, i, dfd;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		close(dfd);
		return -1;
	}
	grown = realloc(*a, (size_t)(*k + n + 1) * sizeof(**a));
	if (grown)
		*a = grown;
	for (i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		struct attr *at = grown ? &grown[*k] : NULL;

		if (at && nm[0] != '.' &&
		    strlen(prefix) + strlen(nm) < sizeof(at->name) &&
		    names[i]->d_type != DT_DIR && names[i]->d_type != DT_LNK &&
		    !read_attr(dfd, dir, nm, at->value, sizeof(at->value))) {
			snprintf(at->name, sizeof(at->name), "%s%s", prefix, nm);
			(*k)++;
		}
		free(names[i]);
	}
	free(names);
	close(dfd);
	return grown ? 0 : -1;
}

/* The module's attributes, then its spill/ folder's as "spill/NAME";
 * -1: no module there. */
int read_sysfs(const char *dir, struct attr **out, int *np)
{
	char sub[PATH_MAX];
	struct attr *a = NULL;
	int k = 0;

	if (read_attrs(dir, "", &a, &k)) {
		free(a);
		return -1;
	}
	/* Absent from a module without the spill mapping: nothing to add. */
	snprintf(sub, sizeof(sub), "%s/spill", dir);
	read_attrs(sub, "spill/", &a, &k);
	*out = a;
	*np = k;
	return 0;
}

