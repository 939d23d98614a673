// SPDX-License-Identifier: MIT
/*
 * send_tree - send files and directory trees to a pxfer receiver through
 * libpxfer, then print what was moved.
 *
 * Build it against the installed library:
 *
 *	cc -o send_tree send_tree.c $(pkg-config --cflags --libs pxfer)
 *
 * and run it against a receiver ('pxfer recv', or recv_once.c here):
 *
 *	node2$ pxfer recv --dir /data                  # prints a token
 *	node1$ export PXFER_SECRET=<token>
 *	node1$ ./send_tree node2 7471 checkpoint.bin dataset/
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pxfer/pxfer.h>

int main(int argc, char **argv)
{
	struct pxfer_send_opts o;
	struct pxfer_stats st;
	int ret, code;

	if (argc < 4) {
		fprintf(stderr, "usage: send_tree HOST PORT PATH...\n");
		return PXFER_EXIT_USAGE;
	}
	/* the defaults of the pxfer command; then what this program wants */
	pxfer_send_opts_init(&o);
	o.host = argv[1];
	o.port = argv[2];
	o.paths = argv + 3;
	o.npaths = argc - 3;
	o.progress = isatty(STDERR_FILENO);

	ret = pxfer_secret_load(&o.secret, NULL);
	if (ret == -ENOENT) {
		fprintf(stderr, "send_tree: set %s to the receiver's token\n",
			PXFER_SECRET_ENV);
		return PXFER_EXIT_USAGE;
	}
	if (ret) {
		fprintf(stderr, "send_tree: cannot use $%s: %s\n",
			PXFER_SECRET_ENV, strerror(-ret));
		return PXFER_EXIT_USAGE;
	}

	/* blocks until the receiver has acknowledged everything, or failure */
	code = pxfer_send(&o, &st);
	printf("%s: %llu files (%llu bytes), %llu directories, %llu links in %.3f s over %s\n",
	       code ? "failed" : "sent", (unsigned long long)st.files,
	       (unsigned long long)st.bytes, (unsigned long long)st.dirs,
	       (unsigned long long)st.links, st.seconds,
	       st.transport ? st.transport : "nothing");
	if (st.files_failed || st.files_skipped)
		printf("%llu files failed, %llu skipped\n",
		       (unsigned long long)st.files_failed,
		       (unsigned long long)st.files_skipped);
	return code;
}
