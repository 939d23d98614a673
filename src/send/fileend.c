// SPDX-License-Identifier: MIT
/*
 * The sender's ended files (fileend.h): closed, checked for a change, and
 * their FILE_END queued.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/digest.h"
#include "send/fileend.h"

void pxfer_fileend_init(struct pxfer_fileend *fe, struct pxfer_sched *sched,
			struct pxfer_ctrl *ctrl, struct pxfer_fail *fail,
			int verify)
{
	fe->sched = sched;
	fe->ctrl = ctrl;
	fe->fail = fail;
	fe->verify = verify;
}

/*
 * All of file @f was sent: did it change meanwhile? Its size, modification
 * or change time differ from when it was announced (as tar checks), or
 * it ended early (a read found its end). Such a file is not kept by the
 * receiver, and is sent again in a second pass, once. With --verify, the
 * whole file's digest goes in its FILE_END (@digest), or a range's.
 */
/* a range's digest: XXH3-128 of its bytes seeded with its offset */
static int range_digest(struct pxfer_sfile *f, struct pxfer_digest *d)
{
	void *buf = malloc(PXFER_DIGEST_BUF);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = pxfer_digest_read(f->fd, buf, f->range_off, f->range_len, d);
	free(buf);
	return ret;
}

static void file_check(struct pxfer_fileend *fe, struct pxfer_sfile *f,
		       uint8_t *digest)
{
	struct pxfer_digest d;
	struct stat st;
	int ret;

	if (f->err && f->err != ENODATA)
		return;
	if (!f->err && fe->verify) {
		ret = f->range_len ? range_digest(f, &d) :
		      pxfer_digest_file(f->fd, f->size, 0, &d);
		if (ret && ret != -ENODATA) {
			f->err = -ret;
			return;
		}
		if (!ret)
			pxfer_digest_wire(digest, &d);
		else
			f->err = ENODATA;
	}
	if (f->stable && f->err != ENODATA)
		return;
	if (f->err == ENODATA || fstat(f->fd, &st) ||
	    st.st_size != f->st.st_size ||
	    st.st_mtim.tv_sec != f->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec ||
	    st.st_ctim.tv_sec != f->st.st_ctim.tv_sec ||
	    st.st_ctim.tv_nsec != f->st.st_ctim.tv_nsec)
		f->err = PXFER_CODE_CHANGED;
}

void pxfer_fileend_one(struct pxfer_fileend *fe, struct pxfer_sfile *f)
{
	struct pxfer_msg m = { .type = PXFER_MSG_FILE_END };

	if (f->fd >= 0) {
		file_check(fe, f, m.u.end.digest);
		close(f->fd);
		f->fd = -1;
	} else if (!f->size && !f->err && fe->verify) {
		struct pxfer_digest d;

		/* closed when it was seen empty: the digest of nothing */
		if (!pxfer_digest_file(-1, 0, 0, &d))
			pxfer_digest_wire(m.u.end.digest, &d);
	}
	m.u.end.id = f->id;
	m.u.end.bytes = f->sent;
	m.u.end.code = f->err;
	if (pxfer_ctrl_queue(fe->ctrl, &m))
		pxfer_fail(fe->fail, PXFER_EXIT_LOCAL, "out of memory");
}

void pxfer_fileend_flush(struct pxfer_fileend *fe)
{
	struct pxfer_sfile *f = pxfer_sched_take_ended(fe->sched), *next;

	for (; f; f = next) {
		next = f->next;
		pxfer_fileend_one(fe, f);
	}
}
