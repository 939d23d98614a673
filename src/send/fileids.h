/* SPDX-License-Identifier: MIT */
/*
 * The sender's window of file ids: each file in flight (announced, not
 * yet done with by the receiver) holds an id below the receiver's
 * max_files, which FILE_OK, FILE_END, FILE_DONE and every chunk name; an
 * id comes back when the receiver says its file is done, and is handed
 * out again. The lowest ids go first, and an id that came back goes
 * before the ones never used (the receiver's table stays small and warm).
 *
 * It holds the caller's entry for each id, and knows nothing of it. Not
 * thread-safe: the coordinator owns it.
 */
#ifndef PXFER_SEND_FILEIDS_H
#define PXFER_SEND_FILEIDS_H

#include <stdint.h>

struct pxfer_fileids {
	void **win;		/* the entry of each id, by id */
	unsigned int max;	/* ids the receiver knows: 0 .. max - 1 */
	uint32_t *free_ids;	/* a stack: the next id on top */
	unsigned int nfree;
	unsigned int in_flight;
};

/*
 * pxfer_fileids_init - ids below @max, of which at most @usable (<= @max:
 * each file in flight holds a descriptor) are out at once. 0, -EINVAL
 * or -ENOMEM.
 */
int pxfer_fileids_init(struct pxfer_fileids *ids, unsigned int max,
		       unsigned int usable);
/* pxfer_fileids_release - the entries are the caller's, freed before; a
 * zeroed or released window may be released */
void pxfer_fileids_release(struct pxfer_fileids *ids);

/* pxfer_fileids_alloc - an id for @entry (not NULL) into *@id: 0, or
 * -ENOSPC when all are out */
int pxfer_fileids_alloc(struct pxfer_fileids *ids, void *entry, uint32_t *id);

/* pxfer_fileids_get - the entry of @id (any number a peer sent), or NULL */
void *pxfer_fileids_get(const struct pxfer_fileids *ids, uint64_t id);

/* pxfer_fileids_done - @id comes back: its entry, for the caller to free,
 * or NULL (and nothing changes) when @id is not out */
void *pxfer_fileids_done(struct pxfer_fileids *ids, uint64_t id);

/* pxfer_fileids_in_flight - how many ids are out */
static inline unsigned int pxfer_fileids_in_flight(const struct pxfer_fileids *ids)
{
	return ids->in_flight;
}

/* pxfer_fileids_free - how many may still be handed out */
static inline unsigned int pxfer_fileids_free(const struct pxfer_fileids *ids)
{
	return ids->nfree;
}

#endif
