// SPDX-License-Identifier: MIT
/* The sender's window of file ids (fileids.h). */
#include <errno.h>
#include <stdlib.h>

#include "send/fileids.h"

int pxfer_fileids_init(struct pxfer_fileids *ids, unsigned int max,
		       unsigned int usable)
{
	ids->win = NULL;
	ids->free_ids = NULL;
	ids->max = ids->nfree = ids->in_flight = 0;
	if (usable > max)
		return -EINVAL;
	ids->win = calloc(max ? max : 1, sizeof(*ids->win));
	ids->free_ids = calloc(usable ? usable : 1, sizeof(*ids->free_ids));
	if (!ids->win || !ids->free_ids) {
		pxfer_fileids_release(ids);
		return -ENOMEM;
	}
	ids->max = max;
	for (unsigned int i = 0; i < usable; i++)
		ids->free_ids[ids->nfree++] = usable - 1 - i;
	return 0;
}

void pxfer_fileids_release(struct pxfer_fileids *ids)
{
	free(ids->win);
	free(ids->free_ids);
	ids->win = NULL;
	ids->free_ids = NULL;
	ids->max = ids->nfree = ids->in_flight = 0;
}

int pxfer_fileids_alloc(struct pxfer_fileids *ids, void *entry, uint32_t *id)
{
	if (!ids->nfree)
		return -ENOSPC;
	*id = ids->free_ids[--ids->nfree];
	ids->win[*id] = entry;
	ids->in_flight++;
	return 0;
}

void *pxfer_fileids_get(const struct pxfer_fileids *ids, uint64_t id)
{
	return id < ids->max ? ids->win[id] : NULL;
}

void *pxfer_fileids_done(struct pxfer_fileids *ids, uint64_t id)
{
	void *e = pxfer_fileids_get(ids, id);

	if (!e)
		return NULL;
	ids->win[id] = NULL;
	ids->free_ids[ids->nfree++] = id;
	ids->in_flight--;
	return e;
}
