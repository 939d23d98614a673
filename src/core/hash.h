/* SPDX-License-Identifier: MIT */
/*
 * The per-chunk checksum: XXH3_64bits from libxxhash, through the
 * library's x86 dispatcher where it has one (AVX2/AVX-512 when the CPU has
 * them; the plain entry point is built for SSE2 only).
 */
#ifndef PXFER_HASH_H
#define PXFER_HASH_H

#include <stddef.h>
#include <stdint.h>

/* pxfer_hash - XXH3_64bits of @len bytes at @buf */
uint64_t pxfer_hash(const void *buf, size_t len);

/*
 * pxfer_hash_file - XXH3_64bits of @len bytes of @fd at @off, read through
 * a temporary read-only mapping of the page cache (no copy). Returns 0,
 * -ENODATA if the file ends before @off + @len (it shrank, even while
 * being hashed), or the -errno of mmap (the file cannot be mapped: read it
 * instead).
 */
int pxfer_hash_file(int fd, uint64_t off, size_t len, uint64_t *out);

/*
 * pxfer_file_apply - call @fn(@arg, p, @len) on @len bytes of @fd at @off
 * mapped read-only from the page cache, as pxfer_hash_file does (the
 * same -ENODATA for a file that ends first or shrinks meanwhile, the
 * same mmap errors); otherwise what @fn returned (0 or -errno).
 */
int pxfer_file_apply(int fd, uint64_t off, size_t len,
		     int (*fn)(void *arg, const void *p, size_t len), void *arg);

/* pxfer_hash_faults - how many times pxfer_hash_file caught a SIGBUS */
unsigned long pxfer_hash_faults(void);

/* for tests: called by pxfer_hash_file between mapping and hashing */
extern void (*pxfer_hash_file_hook)(int fd);

#endif
