// SPDX-License-Identifier: GPL-2.0
/*
 * offsets.c - the per-file mmap offset space that ALLOC gives regions from.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/rbtree.h>

#include "ortmem.h"

/**
 * DOC: mmap offsets
 *
 * Each open file of /dev/ortmem has an offset space of its own, as DRM's
 * fake offsets are: ALLOC gives the new region a range of page offsets as
 * long as the region, and returns its start in mmap_offset.  The space
 * starts at one page (offset 0 never names a region, so a caller that
 * forgot the offset gets -EINVAL, not some region) and ends below
 * %ORTMEM_MMAP_OFFSET_LIMIT (16 TiB), so the offset of every region fits
 * the 32-bit page offset of mmap2(), the only mmap a 32-bit process has:
 * 32-bit and 64-bit processes map every region the same way.  Ranges are
 * given next-fit: the search starts after the range given last and wraps
 * around, so the range of a freed region is not given again soon, and a
 * stale mmap of its offset fails instead of mapping a newer region.  The
 * regions sit in an rbtree keyed by offset, under the file's xarray lock.
 */

#define OFFSET_FIRST 1UL
#define OFFSET_END ((unsigned long)(ORTMEM_MMAP_OFFSET_LIMIT >> PAGE_SHIFT))

static struct ortmem_region *node_region(struct rb_node *node)
{
	return rb_entry(node, struct ortmem_region, offset_node);
}

/* The first gap of @nr_pages at or above @from, or 0 when none is left. */
static unsigned long find_gap(struct ortmem_file *file, unsigned long from,
			      unsigned long nr_pages)
{
	unsigned long start = from;
	struct rb_node *node;

	for (node = rb_first(&file->offsets); node; node = rb_next(node)) {
		struct ortmem_region *r = node_region(node);

		if (r->pgoff + r->nr_pages <= start)
			continue;
		if (r->pgoff >= start && r->pgoff - start >= nr_pages)
			break;
		start = r->pgoff + r->nr_pages;
	}
	if (start >= OFFSET_END || OFFSET_END - start < nr_pages)
		return 0;
	return start;
}

/**
 * ortmem_offset_insert() - Give a region a range of the file's offset space.
 * @file: the per-file state; the caller holds its xarray lock.
 * @region: the new region; its @pgoff is set here.
 *
 * Return: 0, or -ENOSPC when no free range of the region's size is left.
 */
int ortmem_offset_insert(struct ortmem_file *file, struct ortmem_region *region)
{
	struct rb_node **link = &file->offsets.rb_node, *parent = NULL;
	unsigned long start;

	start = find_gap(file, max(file->next_pgoff, OFFSET_FIRST),
			 region->nr_pages);
	if (!start)
		start = find_gap(file, OFFSET_FIRST, region->nr_pages);
	if (!start)
		return -ENOSPC;
	region->pgoff = start;
	file->next_pgoff = start + region->nr_pages;

	while (*link) {
		parent = *link;
		if (start < node_region(parent)->pgoff)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&region->offset_node, parent, link);
	rb_insert_color(&region->offset_node, &file->offsets);
	return 0;
}

/**
 * ortmem_offset_remove() - Give a region's range back.
 * @file: the per-file state; the caller holds its xarray lock.
 * @region: a region of @file that ortmem_offset_insert() placed.
 */
void ortmem_offset_remove(struct ortmem_file *file, struct ortmem_region *region)
{
	rb_erase(&region->offset_node, &file->offsets);
	RB_CLEAR_NODE(&region->offset_node);
}

/**
 * ortmem_offset_lookup() - Find the live region whose range holds an offset.
 * @file: the per-file state.
 * @pgoff: a page offset, as in vm_pgoff.
 *
 * Return: the region with a new reference, or NULL when no live region's
 * range holds @pgoff.
 */
struct ortmem_region *ortmem_offset_lookup(struct ortmem_file *file,
					   unsigned long pgoff)
{
	struct ortmem_region *found = NULL;
	struct rb_node *node;

	xa_lock(&file->regions);
	node = file->offsets.rb_node;
	while (node) {
		struct ortmem_region *r = node_region(node);

		if (pgoff < r->pgoff) {
			node = node->rb_left;
		} else if (pgoff - r->pgoff >= r->nr_pages) {
			node = node->rb_right;
		} else {
			found = r;
			kref_get(&r->ref);
			break;
		}
	}
	xa_unlock(&file->regions);
	return found;
}
