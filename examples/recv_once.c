// SPDX-License-Identifier: MIT
/*
 * recv_once - receive one session from a pxfer sender into a directory
 * through libpxfer, and exit with its status.
 *
 * Build it against the installed library:
 *
 *	cc -o recv_once recv_once.c $(pkg-config --cflags --libs pxfer)
 *
 * and send to it ('pxfer send', or send_tree.c here):
 *
 *	node2$ export PXFER_SECRET=<at least 16 characters>
 *	node2$ ./recv_once /data 7471
 *	node1$ pxfer send dataset/ node2:7471           # the same PXFER_SECRET
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <pxfer/pxfer.h>

int main(int argc, char **argv)
{
	struct pxfer_recv_opts o;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: recv_once DIR PORT\n");
		return PXFER_EXIT_USAGE;
	}
	pxfer_recv_opts_init(&o);
	o.dir = argv[1];
	o.port = argv[2];
	o.once = 1;

	ret = pxfer_secret_load(&o.secret, NULL);
	if (ret) {
		fprintf(stderr, "recv_once: set %s to a random secret of %d to %d characters%s%s\n",
			PXFER_SECRET_ENV, PXFER_SECRET_MIN, PXFER_SECRET_MAX,
			ret == -ENOENT ? "" : ": ",
			ret == -ENOENT ? "" : strerror(-ret));
		return PXFER_EXIT_USAGE;
	}
	/* says where it listens on stderr, serves one sender, returns */
	return pxfer_recv(&o);
}
