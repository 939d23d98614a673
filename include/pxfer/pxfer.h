/* SPDX-License-Identifier: MIT */
/*
 * pxfer - parallel file transfer over RDMA and TCP.
 *
 * The public face of the engine: a sender moves files and directory trees
 * to a receiver that writes them beneath its top directory. The command line
 * (src/cli/) is a thin layer over these two calls.
 */
#ifndef PXFER_PXFER_H
#define PXFER_PXFER_H

#include <stddef.h>
#include <stdint.h>

#define PXFER_DEFAULT_PORT	"7471"
#define PXFER_DEFAULT_WORKERS	4
/* chunk sizes the receiver picks from when the sender leaves it the choice */
#define PXFER_AUTO_CHUNK_MIN	(1u << 20)
#define PXFER_AUTO_CHUNK_MAX	(4u << 20)
#define PXFER_DEFAULT_RING_MEM	(32u << 20)	/* per side, all workers */
#define PXFER_DEFAULT_MAX_CHUNK	(16u << 20)	/* largest chunk a receiver takes */
#define PXFER_DEFAULT_TIMEOUT_MS 15000		/* connect and handshake */
#define PXFER_SECRET_MIN	16
#define PXFER_SECRET_MAX	1024
#define PXFER_SECRET_ENV	"PXFER_SECRET"

/* Exit statuses of the pxfer command (documented in pxfer --help). */
enum pxfer_exit {
	PXFER_EXIT_OK = 0,
	PXFER_EXIT_FAIL = 1,		/* some files failed; the rest arrived */
	PXFER_EXIT_USAGE = 2,		/* bad command line or input */
	PXFER_EXIT_AUTH = 3,		/* authentication refused */
	PXFER_EXIT_NET = 4,		/* cannot connect, or peer gone */
	PXFER_EXIT_LOCAL = 5,		/* local resource: disk, memory, memlock */
	PXFER_EXIT_INTR = 130,		/* interrupted */
};

struct pxfer_secret {
	uint8_t key[PXFER_SECRET_MAX];
	size_t len;
};

struct pxfer_stats {
	uint64_t files;		/* regular files complete on the receiver */
	uint64_t dirs;
	uint64_t links;
	uint64_t bytes;		/* payload bytes moved */
	uint64_t files_failed;
	uint64_t files_skipped;
	uint64_t chunks;
	double seconds;
	const char *transport;
};

struct pxfer_send_opts {
	char *const *paths;
	int npaths;
	const char *host;
	const char *port;
	const char *bind;	/* source address, or NULL */
	const char *dest;	/* subdirectory below the receiver's DIR, or NULL */
	const char *transport;	/* "tcp", "rdma" or "auto" */
	const char *device;	/* rdma device to use, or NULL */
	int gid_index;		/* its GID to use, or -1 */
	const char *io;		/* "auto", "uring" or "sync" */
	int workers;
	uint32_t chunk_size;
	int chunk_auto;		/* chunk_size is an upper bound (see recv) */
	uint32_t ring_mem;
	int fsync;
	int verbose;
	int progress;		/* draw a progress line on stderr */
	int timeout_ms;		/* connect/handshake timeout */
	struct pxfer_secret secret;
};

struct pxfer_recv_opts {
	const char *dir;
	const char *bind;
	const char *port;
	const char *transport;
	const char *device;	/* rdma device to listen on, or NULL */
	int gid_index;		/* its GID to use, or -1 */
	const char *io;
	int once;
	int fsync;		/* fsync every file even if the sender did not ask */
	int verbose;
	int quiet;
	uint32_t ring_mem;
	uint32_t max_chunk;
	struct pxfer_secret secret;
};

/*
 * pxfer_send_opts_init - fill @o with the defaults the pxfer command uses
 * (port 7471, transport and file I/O "auto", PXFER_DEFAULT_WORKERS
 * workers, the chunk size left to the receiver, a 15 s timeout) and
 * nothing else: set paths, npaths, host and the secret before pxfer_send.
 */
void pxfer_send_opts_init(struct pxfer_send_opts *o);

/*
 * pxfer_recv_opts_init - fill @o with the defaults the pxfer command uses
 * (the current directory, port 7471 on every address, transport and file
 * I/O "auto", 32 MiB of ring memory, chunks up to 16 MiB); set the secret
 * before pxfer_recv.
 */
void pxfer_recv_opts_init(struct pxfer_recv_opts *o);

/*
 * pxfer_send - send opts->paths to the receiver. Fills @stats (also on
 * failure, with what was done). Returns a PXFER_EXIT_* status; messages go
 * to stderr through the engine's error reporting.
 */
int pxfer_send(const struct pxfer_send_opts *opts, struct pxfer_stats *stats);

/*
 * pxfer_recv - serve sessions until interrupted (SIGINT/SIGTERM), or one
 * session if opts->once. Returns a PXFER_EXIT_* status.
 */
int pxfer_recv(const struct pxfer_recv_opts *opts);

/*
 * pxfer_secret_load - read a secret from @file ("-" for standard input) or,
 * when @file is NULL, from the PXFER_SECRET environment variable. Returns 0,
 * -ENOENT if neither is given, or another negative errno.
 */
int pxfer_secret_load(struct pxfer_secret *s, const char *file);

/* pxfer_secret_generate - make a random secret and its printable token. */
int pxfer_secret_generate(struct pxfer_secret *s);

#endif
