/* SPDX-License-Identifier: MIT */
#ifndef PXFER_CLI_H
#define PXFER_CLI_H

#include <stdint.h>

int cmd_send(int argc, char **argv);
int cmd_recv(int argc, char **argv);

/* parse "64M", "1G", "4096" into bytes; 0 or -EINVAL */
int cli_parse_size(const char *s, uint64_t *out);
/* parse a positive integer within [min, max]; 0 or -EINVAL */
int cli_parse_uint(const char *s, unsigned long min, unsigned long max,
		   unsigned long *out);
/* accept @arg for option @opt if it is one of the NULL-terminated @choices;
 * otherwise say what is accepted and return -1 */
int cli_choice(const char *opt, const char *arg, const char *const *choices);
extern const char *const cli_transports[];	/* auto, rdma, tcp */
extern const char *const cli_io_kinds[];	/* auto, uring, sync */
/* --gid-index: 0 or -1 after an error message */
int cli_parse_gid(const char *arg, int *out);
/* load the secret from --secret-file or $PXFER_SECRET, with clear errors */
struct pxfer_secret;
int cli_load_secret(struct pxfer_secret *s, const char *file, int generate);

#endif
