// SPDX-License-Identifier: MIT
/*
 * tcp_floor: the least a TCP file copy into the page cache costs, for the
 * benchmark (workload A). Not part of pxfer and not a transfer tool: no
 * authentication, no checksum, no temporary name, no error recovery.
 *
 *   tcp_floor recv ADDR PORT FILE JOBS   accept JOBS connections and write
 *                                        every chunk that arrives at its
 *                                        offset of FILE (recv + pwrite)
 *   tcp_floor send ADDR PORT FILE JOBS   send FILE in 1 MiB chunks over
 *                                        JOBS connections (a 12-byte header
 *                                        per chunk, then sendfile)
 *
 *   ... FILE JOBS mac                    the same, and each chunk tagged as
 *                                        pxfer tags it by default (AES-256-GCM
 *                                        as GMAC over the chunk, its 16-byte
 *                                        tag after it), the tag checked by the
 *                                        receiver before the pwrite
 *
 * Each side is what any receiver of a byte stream that ends up in a file
 * must do at least: one copy out of the socket and one into the page cache
 * (the sender copies nothing: sendfile hands page-cache pages to TCP; with
 * mac it reads each chunk into a buffer with pread to tag it, which on
 * these virtual machines costs less than reading it through a mapping,
 * and still sends it with sendfile). pxfer's
 * workload A does that plus its protocol, its tag per chunk on both sides
 * and io_uring; iperf3 does neither copy into or out of a file.
 * Exit status 0, or 1 with a message.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/seal.h"

#define CHUNK (1u << 20)
#define JOBS_MAX 16

static int fd;
static off_t size;
static atomic_uint_fast64_t next_chunk;
static int mac;			/* tag each chunk */
static const uint8_t mac_key[32] = { 0x70, 0x78 };

/* the tag of chunk @len bytes at @off: GMAC, as pxfer's default */
static void chunk_tag(struct pxfer_aead *a, const void *buf, uint32_t len,
		      uint64_t off, uint8_t *tag)
{
	uint8_t nonce[PXFER_AEAD_NONCE_LEN], desc[12];

	pxfer_nonce_make(nonce, 0, off / CHUNK);
	memcpy(desc, &off, sizeof(off));
	memcpy(desc + 8, &len, sizeof(len));
	if (pxfer_aead_seal(a, nonce, desc, sizeof(desc), buf, len, NULL, 0, tag)) {
		fprintf(stderr, "tcp_floor: cannot tag a chunk\n");
		exit(1);
	}
}

static void aead_open(struct pxfer_aead *a)
{
	if (mac && pxfer_aead_init(a, PXFER_CIPHER_AES_GCM, mac_key, 1)) {
		fprintf(stderr, "tcp_floor: no AES-256-GCM\n");
		exit(1);
	}
}

static void die_errno(const char *what)
{
	fprintf(stderr, "tcp_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int recv_all(int s, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(s, (char *)buf + got, len - got, MSG_WAITALL);

		if (n == 0 && got == 0)
			return 0;
		if (n <= 0) {
			errno = n ? errno : EPIPE;
			die_errno("recv");
		}
		got += n;
	}
	return 1;
}

static void *receiver(void *arg)
{
	int s = (int)(intptr_t)arg;
	uint8_t hdr[12], tag[PXFER_TAG_LEN], want[PXFER_TAG_LEN];
	char *buf = malloc(CHUNK);
	struct pxfer_aead a;

	if (!buf)
		die_errno("malloc");
	aead_open(&a);
	while (recv_all(s, hdr, sizeof(hdr))) {
		uint64_t off;
		uint32_t len;

		memcpy(&off, hdr, sizeof(off));
		memcpy(&len, hdr + 8, sizeof(len));
		off = be64toh(off);
		len = ntohl(len);

		if (len > CHUNK) {
			fprintf(stderr, "tcp_floor: bad chunk length %u\n", len);
			exit(1);
		}
		recv_all(s, buf, len);
		if (mac) {
			recv_all(s, tag, sizeof(tag));
			chunk_tag(&a, buf, len, off, want);
			if (memcmp(tag, want, sizeof(tag))) {
				fprintf(stderr, "tcp_floor: a chunk's tag does not match\n");
				exit(1);
			}
		}
		if (pwrite(fd, buf, len, off) != (ssize_t)len)
			die_errno("pwrite");
	}
	if (mac)
		pxfer_aead_release(&a);
	free(buf);
	close(s);
	return NULL;
}

static void *sender(void *arg)
{
	int s = (int)(intptr_t)arg;
	uint8_t tag[PXFER_TAG_LEN];
	struct pxfer_aead a;
	char *buf = NULL;
	uint64_t i;

	aead_open(&a);
	if (mac && !(buf = malloc(CHUNK)))
		die_errno("malloc");
	while ((off_t)((i = atomic_fetch_add(&next_chunk, 1)) * CHUNK) < size) {
		off_t off = (off_t)i * CHUNK;
		uint32_t len = size - off < CHUNK ? size - off : CHUNK;
		uint64_t off_be = htobe64(off);
		uint32_t len_be = htonl(len);
		uint8_t hdr[12];

		memcpy(hdr, &off_be, sizeof(off_be));
		memcpy(hdr + 8, &len_be, sizeof(len_be));
		if (mac) {
			if (pread(fd, buf, len, off) != (ssize_t)len)
				die_errno("pread");
			chunk_tag(&a, buf, len, off, tag);
		}
		if (send(s, hdr, sizeof(hdr), MSG_MORE) != sizeof(hdr))
			die_errno("send");
		while (len) {
			ssize_t n = sendfile(s, fd, &off, len);

			if (n <= 0)
				die_errno("sendfile");
			len -= n;
		}
		if (mac && send(s, tag, sizeof(tag), 0) != sizeof(tag))
			die_errno("send");
	}
	if (mac)
		pxfer_aead_release(&a);
	free(buf);
	close(s);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	pthread_t th[JOBS_MAX];
	int jobs, recv_side, one = 1, l = -1;

	if (argc < 6 || argc > 7 || (argc == 7 && strcmp(argv[6], "mac")) ||
	    (strcmp(argv[1], "recv") && strcmp(argv[1], "send"))) {
		fprintf(stderr, "usage: tcp_floor recv|send ADDR PORT FILE JOBS [mac]\n");
		return 1;
	}
	mac = argc == 7;
	recv_side = !strcmp(argv[1], "recv");
	jobs = atoi(argv[5]);
	if (jobs < 1 || jobs > JOBS_MAX || inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
		fprintf(stderr, "tcp_floor: bad address or JOBS (1-%d)\n", JOBS_MAX);
		return 1;
	}
	a.sin_port = htons(atoi(argv[3]));
	if (recv_side) {
		fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || l < 0)
			die_errno(argv[4]);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, jobs))
			die_errno("listen");
	} else {
		struct stat st;

		fd = open(argv[4], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st))
			die_errno(argv[4]);
		size = st.st_size;
	}
	for (int i = 0; i < jobs; i++) {
		int s;

		if (recv_side) {
			s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		} else {
			s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)))
				die_errno("connect");
		}
		if (s < 0)
			die_errno(recv_side ? "accept" : "socket");
		if (pthread_create(&th[i], NULL, recv_side ? receiver : sender,
				   (void *)(intptr_t)s)) {
			fprintf(stderr, "tcp_floor: cannot start a thread\n");
			return 1;
		}
	}
	for (int i = 0; i < jobs; i++)
		pthread_join(th[i], NULL);
	if (l >= 0)
		close(l);
	if (close(fd))
		die_errno("close");
	return 0;
}
