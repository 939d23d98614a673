/* SPDX-License-Identifier: MIT */
/*
 * container_of - the object that embeds @ptr as its @member, as in the
 * kernel and rdma-core: the way from an ops table's base object (struct
 * pxfer_conn, struct pxfer_worker) to the object that embeds it. The
 * pointer's type is checked against the member's, so a wrong cast does
 * not compile, and the member need not come first.
 */
#ifndef PXFER_CORE_CONTAINER_OF_H
#define PXFER_CORE_CONTAINER_OF_H

#include <stddef.h>

#define container_of(ptr, type, member) ({				\
	const __typeof__(((type *)0)->member) *__mptr = (ptr);		\
	(type *)((char *)__mptr - offsetof(type, member)); })

#endif
