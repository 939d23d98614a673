/* SPDX-License-Identifier: MIT */
/*
 * The sender's ended files: once the scheduler is done with a file (all
 * of it planned and sent, or given up), its FILE_END is due. Whoever
 * takes files off the scheduler's ended list -- a worker after its sends
 * complete, the coordinator -- closes each, checks whether it changed
 * while it was sent (and with --verify hashes it whole), and queues its
 * FILE_END on the control channel. A file is not touched after that: the
 * coordinator frees it when FILE_DONE comes back.
 *
 * Thread-safe, as the scheduler and the control channel are: any thread
 * may flush; a file is ended by the one thread that took it.
 */
#ifndef PXFER_SEND_FILEEND_H
#define PXFER_SEND_FILEEND_H

#include "engine/ctrl.h"
#include "engine/fail.h"
#include "send/scheduler.h"

struct pxfer_fileend {
	struct pxfer_sched *sched;	/* whose ended list is taken */
	struct pxfer_ctrl *ctrl;	/* where FILE_END goes */
	struct pxfer_fail *fail;	/* failed when FILE_END cannot be queued */
	int verify;			/* --verify: the digest in FILE_END */
};

/* pxfer_fileend_init - end the files of @sched on @ctrl */
void pxfer_fileend_init(struct pxfer_fileend *fe, struct pxfer_sched *sched,
			struct pxfer_ctrl *ctrl, struct pxfer_fail *fail,
			int verify);

/*
 * pxfer_fileend_one - queue FILE_END for file @f, done with: closed here
 * (f->fd -1 after), f->err PXFER_CODE_CHANGED when it changed since it
 * was announced (f->st)
 */
void pxfer_fileend_one(struct pxfer_fileend *fe, struct pxfer_sfile *f);

/* pxfer_fileend_flush - the same for every file the scheduler says ended
 * since the last flush, in the order they ended */
void pxfer_fileend_flush(struct pxfer_fileend *fe);

#endif
