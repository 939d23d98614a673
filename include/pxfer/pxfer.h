/* SPDX-License-Identifier: MIT */
/*
 * pxfer - parallel file transfer over RDMA and TCP.
 *
 * The public face of the engine: a sender moves files and directory trees
 * to a receiver that writes them beneath its top directory. The pxfer
 * command is a thin layer over these calls. Fill the option structs with
 * pxfer_send_opts_init() and pxfer_recv_opts_init() rather than by hand, so
 * that a program gets the defaults of fields it does not set, or know.
 *
 * Build against the installed library with
 *
 *	cc prog.c $(pkg-config --cflags --libs pxfer)
 *
 * ABI: the library is libpxfer.so.N, and exports only what is marked
 * PXFER_API here. Before 1.0, N changes whenever a struct below changes (a
 * field added, removed or moved) or a call changes its meaning, and
 * programs are rebuilt against the new header; from 1.0 on, the ABI only
 * grows within one N.
 *
 * Both sides report on standard error, as the pxfer command does: errors
 * ("error: ..."), warnings, and what they chose when asked to be verbose;
 * or, each call, to a function of the caller's (the log option).
 *
 * Calls: any number of pxfer_send and pxfer_recv may run at once in one
 * process, each on its own thread. Each owns its output (log, verbose,
 * progress) and what stops it (stop); none touches the process's signal
 * dispositions. What they share: the RDMA device contexts (and the thread
 * that polls their events, which reports on standard error), and the
 * process's limit on open files, which each raises (below).
 */
#ifndef PXFER_PXFER_H
#define PXFER_PXFER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* what libpxfer.so exports; the rest of it is hidden */
#if defined(__GNUC__) && __GNUC__ >= 4
#define PXFER_API __attribute__((visibility("default")))
#else
#define PXFER_API
#endif

#define PXFER_DEFAULT_PORT	"7471"
/* the default workers: one per CPU, at most this many (pxfer_send_opts_init) */
#define PXFER_AUTO_WORKERS_MAX	8
/* chunk sizes the receiver picks from when the sender leaves it the choice */
#define PXFER_AUTO_CHUNK_MIN	(1u << 20)
#define PXFER_AUTO_CHUNK_MAX	(4u << 20)
#define PXFER_DEFAULT_RING_MEM	(32u << 20)	/* per session, all workers */
#define PXFER_DEFAULT_MAX_SESSIONS 8		/* a receiver's sessions at once */
#define PXFER_DEFAULT_GRACE_SECS 30		/* for running sessions, once stopped */
#define PXFER_DEFAULT_WAIT_SECS	60		/* a sender waits for a busy receiver */
#define PXFER_DEFAULT_MAX_CHUNK	(16u << 20)	/* largest chunk a receiver takes */
#define PXFER_DEFAULT_TIMEOUT_MS 15000		/* connect and handshake */
#define PXFER_DEFAULT_IDLE_TIMEOUT 120		/* seconds a session may idle */
#define PXFER_DEFAULT_PARTIAL_TTL (7 * 86400)	/* seconds partial files are kept */
/* partials the receiver keeps at most (pxfer_recv_opts.partial_max) */
#define PXFER_DEFAULT_PARTIAL_MAX 10000
#define PXFER_DEFAULT_RETRIES 5			/* reconnections after a failure */
#define PXFER_DEFAULT_RETRY_WAIT 2		/* seconds before the first, doubling */

/*
 * The limits of the options, in one place: pxfer_send_opts_check and
 * pxfer_recv_opts_check refuse what lies outside them, for the pxfer
 * command and for programs alike. The first four are the protocol's too.
 */
#define PXFER_WORKERS_MAX	64		/* workers: 1 to this */
#define PXFER_CHUNK_MIN		4096u		/* chunk_size, max_chunk: from */
#define PXFER_CHUNK_MAX		(64u << 20)	/* ... to this; chunk_size a
						 * multiple of PXFER_CHUNK_MIN */
#define PXFER_PATH_MAX		4096		/* bytes of dest, and of any
						 * path below the receiver's dir */
#define PXFER_SECRET_MIN	16		/* bytes of a secret */
#define PXFER_SECRET_MAX	1024
#define PXFER_TIMEOUT_MS_MAX	3600000		/* timeout_ms: 1 to this */
#define PXFER_WAIT_SECS_MAX	86400		/* wait_secs: 0 to this */
#define PXFER_RETRIES_MAX	100		/* retries: 0 to this */
#define PXFER_RETRY_WAIT_MAX	3600		/* retry_wait: 0 to this */
#define PXFER_RETRY_WAIT_CAP	60		/* ... doubling up to this */
#define PXFER_SESSIONS_MAX	64		/* max_sessions: 1 to this */
#define PXFER_RING_MEM_MIN	(64u << 10)	/* ring_mem: a session's share */
#define PXFER_RING_MEM_MAX	(4ull << 30)	/* ... and all of it */
#define PXFER_GRACE_SECS_MAX	86400		/* grace_secs: 0 to this */
#define PXFER_IDLE_TIMEOUT_MAX	86400		/* idle_timeout: 0 to this */
#define PXFER_PARTIAL_TTL_MAX	(3650 * 86400)	/* partial_ttl: 0 to this */
#define PXFER_PARTIAL_MAX_MAX	100000000	/* partial_max: 0 to this */
/*
 * The least strength a secret must have against an offline guess, in
 * bits, as estimated without a dictionary: only the shortest prefix whose
 * repetition makes the secret counts ("abcabcab": "abc"); each of its
 * characters is worth log2 of the number of characters in the classes the
 * secret uses (lowercase letters 26, uppercase 26, digits 10, the other
 * printable ASCII characters 33, any other byte 128), except one that
 * repeats the character before it or continues a run of consecutive ones
 * ("aaa", "abc", "321"), which is worth 1 bit. A 16-letter word (75 bits)
 * is too weak; 22 random base64 characters (about 130 bits) and the
 * token pxfer_secret_generate makes are strong enough.
 */
#define PXFER_SECRET_BITS	96
#define PXFER_SECRET_ENV	"PXFER_SECRET"

/*
 * What pxfer_send and pxfer_recv return, and the exit statuses of the pxfer
 * command (documented in pxfer --help).
 */
enum pxfer_exit {
	PXFER_EXIT_OK = 0,
	PXFER_EXIT_FAIL = 1,		/* some files failed; the rest arrived */
	PXFER_EXIT_USAGE = 2,		/* bad command line or input */
	PXFER_EXIT_AUTH = 3,		/* authentication refused */
	PXFER_EXIT_NET = 4,		/* cannot connect, or peer gone */
	PXFER_EXIT_LOCAL = 5,		/* local resource: disk, memory, memlock */
	PXFER_EXIT_BUSY = 6,		/* the receiver stayed busy (--wait) */
	PXFER_EXIT_INTEGRITY = 7,	/* a message or chunk failed its
					 * integrity check: forged, replayed,
					 * reordered, dropped or corrupted */
	PXFER_EXIT_INTR = 130,		/* interrupted */
};

/* What a line a call reports is (the log option). */
enum pxfer_log_level {
	PXFER_LOG_ERROR,	/* on stderr: "error: ..." */
	PXFER_LOG_WARNING,	/* "warning: ..." */
	PXFER_LOG_INFO,		/* what was done: a receiver's sessions,
				 * a sender's retries... (stderr: as it is) */
	PXFER_LOG_VERBOSE,	/* only with verbose set ("pxfer: ...") */
};

/*
 * A call's log sink: @line is one line as it would be printed on stderr,
 * without the newline and without the "error: ", "warning: " or "pxfer: "
 * its @level says (with verbose 2, a verbose line starts with the seconds
 * since the call started: "[1.234] "). It is called from any of the
 * call's threads, one line at a time (never two at once for one call);
 * it must not call into the library (pxfer_stop_raise excepted), nor take
 * long.
 */
typedef void pxfer_log_fn(void *arg, enum pxfer_log_level level,
			  const char *line);

/*
 * What stops a call from outside it: the caller makes one with
 * pxfer_stop_init, points the call's options at it, and raises it from
 * any thread or from a signal handler. A raised stop stays raised, so one
 * stop may serve several calls at once (all of them stop). The fields are
 * the library's.
 */
struct pxfer_stop {
	int fd;			/* readable once raised */
	int raised;		/* times raised */
};

/* pxfer_stop_init - a stop not raised. 0, or -errno (out of files). */
PXFER_API int pxfer_stop_init(struct pxfer_stop *stop);

/* pxfer_stop_release - once no call uses @stop any more */
PXFER_API void pxfer_stop_release(struct pxfer_stop *stop);

/*
 * pxfer_stop_raise - stop the calls that use @stop: a sender ends with
 * PXFER_EXIT_INTR; a receiver takes no new sessions and ends once its
 * running ones have finished (grace_secs), or at once on a second raise.
 * Async-signal-safe (one write(2) and an atomic add): a SIGINT handler
 * may call it, as the pxfer command's does.
 */
PXFER_API void pxfer_stop_raise(struct pxfer_stop *stop);

/* pxfer_stop_raised - how many times @stop was raised (0: not) */
PXFER_API int pxfer_stop_raised(const struct pxfer_stop *stop);

/* The shared secret both sides prove (HMAC-SHA256); it never crosses the wire. */
struct pxfer_secret {
	uint8_t key[PXFER_SECRET_MAX];	/* len bytes, not NUL-terminated */
	size_t len;			/* PXFER_SECRET_MIN to PXFER_SECRET_MAX */
};

/* What a pxfer_send did. */
struct pxfer_stats {
	uint64_t files;		/* regular files complete on the receiver */
	uint64_t dirs;
	uint64_t links;
	uint64_t bytes;		/* payload bytes moved */
	uint64_t files_failed;
	uint64_t files_skipped;	/* not a file, directory or symlink: a fifo... */
	uint64_t chunks;
	double seconds;		/* the whole call */
	const char *transport;	/* "tcp", "rdma", or NULL if none was chosen;
				 * a static string */
	uint64_t files_same;	/* on the receiver already: not sent */
	uint64_t bytes_same;	/* ... their bytes */
	uint64_t bytes_resumed;	/* held by the receiver's partial files: not
				 * sent again */
	uint64_t bytes_sent;	/* file data sent, in all sessions of the call */
	uint64_t files_changed;	/* changed while they were sent: failed, or
				 * sent again (files counts those) */
	unsigned int sessions;	/* sessions the call made: 1 + the retries
				 * and the second pass for files busy on
				 * the receiver */
};

/*
 * A sender's options. pxfer_send_opts_init() gives the defaults noted here;
 * strings are borrowed, not copied, and must outlive the call.
 */
struct pxfer_send_opts {
	char *const *paths;	/* files and directories to send (none) */
	int npaths;
	const char *host;	/* the receiver: a name or an address (none) */
	const char *port;	/* PXFER_DEFAULT_PORT */
	const char *bind;	/* source address, or NULL (NULL) */
	const char *dest;	/* subdirectory below the receiver's DIR, at
				 * most PXFER_PATH_MAX bytes, or NULL */
	const char *transport;	/* "tcp", "rdma" or "auto" ("auto") */
	const char *device;	/* rdma device to use, or a list of them
				 * ("rxe0,rxe2": one rail each), or NULL (NULL) */
	int gid_index;		/* its GID to use, or -1 (-1) */
	const char *io;		/* "auto", "uring" or "sync" ("auto") */
	int workers;		/* 1 to PXFER_WORKERS_MAX (one per CPU the
				 * process may use, at most
				 * PXFER_AUTO_WORKERS_MAX) */
	uint32_t chunk_size;	/* bytes, a multiple of PXFER_CHUNK_MIN from
				 * it to PXFER_CHUNK_MAX
				 * (PXFER_AUTO_CHUNK_MAX) */
	int chunk_auto;		/* chunk_size is an upper bound and the
				 * receiver picks the size (1) */
	int fsync;		/* have the receiver fsync each file before
				 * naming it (0) */
	int verbose;		/* 0, 1 (what was chosen) or 2 (with the
				 * seconds since the start) (0) */
	int progress;		/* draw a progress line on stderr (0) */
	int timeout_ms;		/* connect and handshake timeout, up to
				 * PXFER_TIMEOUT_MS_MAX
				 * (PXFER_DEFAULT_TIMEOUT_MS) */
	int wait_secs;		/* while the receiver says it is busy, try
				 * again for up to this long, at most
				 * PXFER_WAIT_SECS_MAX; 0: fail at once
				 * (PXFER_DEFAULT_WAIT_SECS) */
	struct pxfer_secret secret;	/* (none) */
	/* how file data is protected (docs/security.md): "mac", a keyed tag
	 * on every chunk, or "checksum", the plain XXH3 checksum, which
	 * catches corruption but not an attacker ("mac"; NULL: "mac") */
	const char *integrity;
	int encrypt;		/* encrypt file data and control messages;
				 * integrity is then the AEAD's (0) */
	/* "aes-256-gcm" or "chacha20-poly1305" ("aes-256-gcm"; NULL: the
	 * same) */
	const char *cipher;
	int overwrite;		/* send every file whole: no skipping files the
				 * receiver has, no resuming its partial ones (0) */
	int checksum;		/* a file the receiver has is the same when its
				 * content is (read on both sides), not when its
				 * size and modification time are (0) */
	int resume_trust;	/* take a partial file on the receiver as it is
				 * when its source's size and modification time
				 * match, without reading the source to check
				 * its data (0) */
	int verify;		/* have the receiver read each file back from
				 * its storage and compare it with the source's
				 * digest before naming it (0) */
	int retries;		/* times to reconnect and go on after the
				 * connection failed, 0 to PXFER_RETRIES_MAX
				 * (PXFER_DEFAULT_RETRIES) */
	double retry_wait;	/* seconds before the first reconnection,
				 * 0 to PXFER_RETRY_WAIT_MAX, doubling each
				 * time up to PXFER_RETRY_WAIT_CAP
				 * (PXFER_DEFAULT_RETRY_WAIT) */
	/* rails: the local addresses to spread the data connections over,
	 * each paired with an address the receiver offers on its subnet:
	 * "auto" (every address of the transport's devices or interfaces
	 * that is up), or "A,B,..."; with a device list in device ("rxe0,
	 * rxe2"), those devices' addresses. NULL: the data connections go
	 * where the control connection goes (NULL) */
	const char *rails;
	int workers_auto;	/* workers was not chosen: with several rails,
				 * it is raised to a multiple of them (1) */
	/* where the call's lines go (pxfer_log_fn), with log_arg; NULL:
	 * stderr (NULL) */
	pxfer_log_fn *log;
	void *log_arg;
	/* raised: the call ends with PXFER_EXIT_INTR; NULL: nothing stops
	 * it from outside (NULL) */
	struct pxfer_stop *stop;
};

/* What one of a receiver's sessions did, when it ended. */
struct pxfer_session_report {
	const char *peer;	/* the sender's address */
	const char *transport;	/* "tcp" or "rdma" */
	uint64_t files;		/* regular files complete under their names */
	uint64_t files_failed;
	uint64_t bytes;		/* payload bytes received */
	double seconds;
	int exit_code;		/* how it ended: a PXFER_EXIT_* status */
	const char *error;	/* why it failed, or NULL */
	/* how its file data was protected: "encrypted (aes-256-gcm)",
	 * "authenticated (gmac)", "plain checksum (xxh3)"..., or NULL if
	 * the handshake did not complete */
	const char *protection;
	uint64_t files_same;	/* there already and the same: not sent */
	uint64_t bytes_same;	/* ... their bytes */
	uint64_t bytes_resumed;	/* held by partial files from an earlier
				 * session, not sent again */
};

/*
 * A receiver's options, with the defaults pxfer_recv_opts_init() gives;
 * strings are borrowed, not copied, and must outlive the call.
 */
struct pxfer_recv_opts {
	const char *dir;	/* the directory to write beneath (".") */
	const char *bind;	/* address to listen on, or NULL: all (NULL) */
	const char *port;	/* PXFER_DEFAULT_PORT */
	const char *transport;	/* "tcp", "rdma" or "auto": both ("auto") */
	const char *device;	/* rdma device to listen on, or a list of
				 * them to offer as rails, or NULL (NULL) */
	int gid_index;		/* its GID to use, or -1 (-1) */
	const char *io;		/* "auto", "uring" or "sync" ("auto") */
	int once;		/* return after one session (0) */
	int fsync;		/* fsync every file even if the sender did not
				 * ask (0) */
	int verbose;		/* as for pxfer_send_opts (0) */
	int quiet;		/* print only errors (0) */
	uint64_t ring_mem;	/* bytes for the rings of all sessions, each
				 * getting ring_mem / max_sessions:
				 * PXFER_RING_MEM_MIN each to
				 * PXFER_RING_MEM_MAX in all; 0: max_sessions
				 * x PXFER_DEFAULT_RING_MEM (0) */
	uint32_t max_chunk;	/* the largest chunk accepted,
				 * PXFER_CHUNK_MIN to PXFER_CHUNK_MAX
				 * (PXFER_DEFAULT_MAX_CHUNK) */
	unsigned int max_sessions;	/* at once, 1 to PXFER_SESSIONS_MAX
					 * (PXFER_DEFAULT_MAX_SESSIONS) */
	int grace_secs;		/* after stop is raised, running sessions
				 * may finish for this long, at most
				 * PXFER_GRACE_SECS_MAX (0: stopped at
				 * once) (PXFER_DEFAULT_GRACE_SECS) */
	/* called as each session ends, on that session's thread (sessions
	 * end concurrently), or NULL (NULL) */
	void (*on_session)(const struct pxfer_session_report *r, void *arg);
	void *on_session_arg;
	struct pxfer_secret secret;	/* (none) */
	int perms;		/* give files and directories the modes the
				 * sender sent, as rsync -p does, instead of
				 * taking away what the umask does; set-uid and
				 * set-gid never arrive either way (0) */
	int idle_timeout;	/* end a session, with an ABORT that says why,
				 * after this many seconds in which the sender
				 * sent no file data and no FILE, FILE_END or
				 * FIN (PINGs do not count), 0 to
				 * PXFER_IDLE_TIMEOUT_MAX; 0: never
				 * (PXFER_DEFAULT_IDLE_TIMEOUT) */
	int require_encrypt;	/* refuse a sender that does not encrypt (0) */
	double partial_ttl;	/* seconds an interrupted file's partial state
				 * is kept beneath dir for a later session to
				 * resume, then removed, at most
				 * PXFER_PARTIAL_TTL_MAX; 0: removed when its
				 * session ends (PXFER_DEFAULT_PARTIAL_TTL) */
	/* the addresses offered to senders for their data connections (at
	 * most 8): "auto" (every address of the transport's devices or
	 * interfaces that is up), or "A,B,..."; with a device list in
	 * device, those devices' addresses. NULL: none (NULL) */
	const char *rails;
	/* where the call's lines go, as for pxfer_send_opts (NULL) */
	pxfer_log_fn *log;
	void *log_arg;
	/* raised: no new sessions, and the call returns PXFER_EXIT_INTR
	 * once the running ones end (grace_secs); raised again, they are
	 * stopped at once. NULL: it serves until opts->once ends it (NULL) */
	struct pxfer_stop *stop;
	/* partial files (what arrived of a file over 1 MiB, kept for resume,
	 * partial_ttl) kept beneath dir at most, by all sessions: a file
	 * that would make one more arrives without one, and cannot be
	 * resumed; the receiver warns once a session. At most
	 * PXFER_PARTIAL_MAX_MAX; 0: no cap (PXFER_DEFAULT_PARTIAL_MAX) */
	unsigned int partial_max;
	/* their apparent size (their files' sizes, holes included) at most,
	 * the same way; 0: no cap (0) */
	uint64_t partial_max_bytes;
};

/*
 * pxfer_send_opts_init - fill @o with the defaults the pxfer command uses
 * (noted in struct pxfer_send_opts); set paths, npaths, host and the
 * secret before pxfer_send.
 */
PXFER_API void pxfer_send_opts_init(struct pxfer_send_opts *o);

/*
 * pxfer_recv_opts_init - fill @o with the defaults the pxfer command uses
 * (noted in struct pxfer_recv_opts); set the secret before pxfer_recv.
 */
PXFER_API void pxfer_recv_opts_init(struct pxfer_recv_opts *o);

/*
 * pxfer_send_opts_check - whether pxfer_send would take @o: 0, or -EINVAL
 * with why in @why (@len bytes, NUL-terminated; @len 0: no message),
 * one line that names the option as the pxfer command spells it and the
 * field in parentheses ("-j takes a number of workers from 1 to 64, not
 * 65 (workers)"). It checks what is missing (paths, host, port, the
 * secret), the ranges of the limits above, the secret's strength
 * (PXFER_SECRET_BITS) and the choices that exclude each other; not
 * whether the paths exist or the host answers (pxfer_send finds that).
 * pxfer_send calls it first, and the pxfer command before it starts
 * anything. Prints nothing.
 */
PXFER_API int pxfer_send_opts_check(const struct pxfer_send_opts *o,
				    char *why, size_t len);

/*
 * pxfer_recv_opts_check - the same for pxfer_recv: 0, or -EINVAL with
 * why; not whether dir exists or the port is free (pxfer_recv finds that).
 */
PXFER_API int pxfer_recv_opts_check(const struct pxfer_recv_opts *o,
				    char *why, size_t len);

/*
 * pxfer_send - send opts->paths to the receiver at opts->host, each under
 * its own name below the receiver's directory (or opts->dest inside it),
 * and return when the receiver has acknowledged all of it or the transfer
 * failed. Fills @stats, also on failure with what was done. Returns a
 * PXFER_EXIT_* status; errors are reported as they happen (opts->log, or
 * stderr), and with opts->progress a progress line is redrawn on stderr.
 *
 * Threads: the calling thread runs the control connection; the call starts
 * one thread per worker, short-lived ones that prepare the rings, and over
 * RDMA one that polls the completion queue. All have ended when it returns.
 *
 * Options outside their documented ranges, or missing, are refused with
 * PXFER_EXIT_USAGE and pxfer_send_opts_check's message, before anything
 * starts (a secret weaker than PXFER_SECRET_BITS among them); so are
 * paths that are missing, unreadable, or not a regular file or a
 * directory (a link to one is followed), before anything is sent.
 *
 * Raising opts->stop ends the transfer with PXFER_EXIT_INTR (a
 * connection being made or authenticated first, within timeout_ms). The
 * call handles no signal: a program that wants SIGINT to stop it raises
 * opts->stop from its handler. Nor does it die of SIGPIPE, whatever the
 * disposition (sockets are written with MSG_NOSIGNAL).
 *
 * Process-wide effects: it raises the soft limit on open files
 * (RLIMIT_NOFILE) to the hard one, at most 65536. Other calls may run at
 * the same time, on other threads.
 */
PXFER_API int pxfer_send(const struct pxfer_send_opts *opts, struct pxfer_stats *stats);

/*
 * pxfer_recv - listen, then serve senders, up to opts->max_sessions at
 * once, writing what they send beneath opts->dir, until opts->stop is
 * raised (no new sessions, and the running ones are stopped after
 * opts->grace_secs or when it is raised again), or return after one
 * session if opts->once. Returns a PXFER_EXIT_* status: with opts->once
 * that session's; otherwise PXFER_EXIT_INTR once stopped, or why it could
 * not start (such as PXFER_EXIT_USAGE for an unusable directory,
 * PXFER_EXIT_NET for a port in use). Unless opts->quiet it says where it
 * listens and what each session did (opts->log, or stderr); errors are
 * always reported.
 *
 * Options are checked as for pxfer_send (pxfer_recv_opts_check). Threads, stop and limits: as
 * for pxfer_send, with a thread per running session and one per worker of
 * each.
 */
PXFER_API int pxfer_recv(const struct pxfer_recv_opts *opts);

/*
 * pxfer_secret_load - read a secret from @file ("-" for standard input) or,
 * when @file is NULL, from the PXFER_SECRET environment variable; trailing
 * white space is not part of it. Returns 0, -ENOENT if @file is NULL and
 * the variable is not set, -EPERM if @file is a regular file that its
 * group or others may read or write (by its mode or its ACL; 'chmod 600'
 * it: an ACL entry that lets the process's own user read it, as systemd
 * gives a service its credentials, is fine), -EINVAL if the secret is
 * shorter than PXFER_SECRET_MIN, -E2BIG if longer than PXFER_SECRET_MAX,
 * or the negative errno of opening or reading @file. Prints nothing.
 */
PXFER_API int pxfer_secret_load(struct pxfer_secret *s, const char *file);

/*
 * pxfer_secret_generate - make a random secret (from libsodium's generator)
 * that is also its printable token: s->len hexadecimal digits in s->key,
 * for the sender's PXFER_SECRET. Returns 0, or -EIO if the generator cannot
 * be initialised. Prints nothing.
 */
PXFER_API int pxfer_secret_generate(struct pxfer_secret *s);

#ifdef __cplusplus
}
#endif

#endif
