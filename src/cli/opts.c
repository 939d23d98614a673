// SPDX-License-Identifier: MIT
/*
 * pxfer: the options both commands take, the parser and help of every
 * command's options, the parsers of option values, and the secret.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "pxfer/pxfer.h"
#include "cli.h"
#include "core/auth.h"
#include "core/log.h"
#include "core/netaddr.h"

/* addresses --rails takes: as many as a WELCOME offers */
#define PXFER_RAILS_CLI_MAX 8

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 0: break;
	default: return -EINVAL;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_parse_uint(const char *s, unsigned long min, unsigned long max,
		   unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static const char transports[] = "auto rdma tcp";
static const char io_kinds[] = "auto uring sync";

int cli_choice(const char *opt, const char *arg, const char *values)
{
	char list[128] = "";
	size_t n = 0, len = strlen(arg);
	const char *w = values;

	while (*w) {
		size_t wlen = strcspn(w, " ");
		const char *next = w + wlen + (w[wlen] == ' ');

		if (wlen == len && !memcmp(w, arg, len))
			return 0;
		if (n < sizeof(list))
			n += snprintf(list + n, sizeof(list) - n, "%s%.*s",
				      w == values ? "" : (*next ? ", " : " or "),
				      (int)wlen, w);
		w = next;
	}
	return pxfer_error("%s takes %s, not '%s'", opt, list, arg);
}

/* --gid-index: 0 or -1 after an error message */
static int parse_gid(const char *arg, int *out)
{
	unsigned long g;

	if (cli_parse_uint(arg, 0, 65535, &g))
		return pxfer_error("--gid-index takes a GID table index, not '%s'", arg);
	*out = g;
	return 0;
}

/* --secret-file @file may be read or written by others: say how to fix it */
static int secret_file_open(const char *file)
{
	int acl = getxattr(file, "system.posix_acl_access", NULL, 0) > 0;
	struct stat st;
	char mode[32] = "";

	if (!stat(file, &st))
		snprintf(mode, sizeof(mode), " (mode %04o%s)",
			 (unsigned int)st.st_mode & 07777,
			 acl ? " and an ACL" : "");
	return pxfer_error("the secret file '%s' is open to others than its owner%s: run '%s%s%schmod 600 %s'",
		     file, mode, acl ? "setfacl -b " : "", acl ? file : "",
		     acl ? "; " : "", file);
}

void cli_secret_announce(const struct pxfer_secret *s)
{
	pxfer_info("pxfer: no secret given; generated one for this receiver. On the sender run:\n"
	     "  export %s=%.*s", PXFER_SECRET_ENV, (int)s->len,
	     (const char *)s->key);
}

int cli_load_secret(struct pxfer_secret *s, const char *file, int *generated)
{
	int ret = pxfer_secret_load(s, file);
	unsigned int bits;

	if (ret == -ENOENT && !file && generated) {
		ret = pxfer_secret_generate(s);
		if (ret)
			return pxfer_error("cannot generate a secret: %s", strerror(-ret));
		*generated = 1;
		return 0;
	}
	if (ret == -ENOENT && !file)
		return pxfer_error("no shared secret: set %s to the receiver's token, or pass --secret-file FILE",
			     PXFER_SECRET_ENV);
	if (ret == -EINVAL)
		return pxfer_error("the secret%s%s%s is too short: use at least %d characters",
			     file ? " in '" : " in $" PXFER_SECRET_ENV,
			     file ? file : "", file ? "'" : "", PXFER_SECRET_MIN);
	if (ret == -E2BIG)
		return pxfer_error("the secret is longer than %d bytes", PXFER_SECRET_MAX);
	if (ret == -EPERM)
		return secret_file_open(file);
	if (ret)
		return pxfer_error("cannot read the secret from '%s': %s", file,
			     strerror(-ret));
	bits = pxfer_secret_bits(s);
	if (bits < PXFER_SECRET_BITS) {
		memset(s, 0, sizeof(*s));
		return pxfer_error("the secret%s%s%s is too weak to resist an offline guess (about %u bits, %d needed: see 'man pxfer'); use a random one, such as the token 'pxfer recv' prints or 'head -c 18 /dev/urandom | base64'",
			     file ? " in '" : " in $" PXFER_SECRET_ENV,
			     file ? file : "", file ? "'" : "", bits,
			     PXFER_SECRET_BITS);
	}
	return 0;
}

/* the options both commands take, by where they land in struct cli_common */

/* checked with the rest (pxfer_send_opts_check, pxfer_recv_opts_check) */
static int set_port(const struct cli_common *c, const char *arg)
{
	*c->port = arg;
	return 0;
}

static int set_bind(const struct cli_common *c, const char *arg)
{
	*c->bind = arg;
	return 0;
}

static int set_secret_file(const struct cli_common *c, const char *arg)
{
	*c->secret_file = arg;
	return 0;
}

static int set_transport(const struct cli_common *c, const char *arg)
{
	if (cli_choice("--transport", arg, transports))
		return -1;
	*c->transport = arg;
	return 0;
}

static int set_device(const struct cli_common *c, const char *arg)
{
	*c->device = arg;
	return 0;
}

/* --rails: auto, or numeric addresses separated by commas */
static int set_rails(const struct cli_common *c, const char *arg)
{
	const char *p = arg;
	unsigned int n = 0;

	if (!strcmp(arg, "auto")) {
		*c->rails = arg;
		return 0;
	}
	while (*p) {
		char one[64];
		size_t len = strcspn(p, ",");
		uint8_t family, addr[16];

		if (!len || len >= sizeof(one))
			return pxfer_error("--rails takes auto or addresses separated by commas, not '%s'",
				     arg);
		memcpy(one, p, len);
		one[len] = 0;
		if (pxfer_addr_parse(one, &family, addr))
			return pxfer_error("--rails: '%s' is not a numeric IPv4 or IPv6 address (give addresses, or auto)",
				     one);
		if (++n > PXFER_RAILS_CLI_MAX)
			return pxfer_error("--rails: at most %d addresses", PXFER_RAILS_CLI_MAX);
		p += len + (p[len] == ',');
		if (p[-1] == ',' && !*p)
			return pxfer_error("--rails takes auto or addresses separated by commas, not '%s'",
				     arg);
	}
	*c->rails = arg;
	return 0;
}

static int set_gid_index(const struct cli_common *c, const char *arg)
{
	return parse_gid(arg, c->gid_index);
}

static int set_fsync(const struct cli_common *c, const char *arg)
{
	*c->fsync = 1;
	return 0;
}

static int set_io(const struct cli_common *c, const char *arg)
{
	if (cli_choice("--io", arg, io_kinds))
		return -1;
	*c->io = arg;
	return 0;
}

static int set_quiet(const struct cli_common *c, const char *arg)
{
	*c->quiet = 1;
	return 0;
}

static int set_verbose(const struct cli_common *c, const char *arg)
{
	/* the call's log gets it from its options; what runs outside a
	 * call (doctor, the shared RDMA thread) from the default log */
	pxfer_log_set_default_verbose(++*c->verbose);
	return 0;
}

static int set_help(const struct cli_common *c, const char *arg)
{
	return CLI_HELP;
}

/*
 * an option the commands share; its help is per command where they
 * differ, and NULL for a command that does not take it
 */
struct common_opt {
	const char *name;
	int short_name;
	const char *arg;
	int (*set)(const struct cli_common *c, const char *arg);
	const char *help[CLI_SIDES];
	const char *values;
};

#define BOTH(text)	{ [CLI_SEND] = text, [CLI_RECV] = text }
/* ... and doctor's, which says what it checks */
#define WITH_DOCTOR(text, doctor) \
	{ [CLI_SEND] = text, [CLI_RECV] = text, [CLI_DOCTOR] = doctor }

static const struct common_opt common_opts[] = {
	{ "port", 'p', "PORT", set_port, {
		[CLI_SEND] = "receiver port, 1-65535 (default " PXFER_DEFAULT_PORT ";\n"
			     "or HOST:PORT)",
		[CLI_RECV] = "port to listen on, 1-65535 (default " PXFER_DEFAULT_PORT ")" },
	  NULL },
	{ "bind", 0, "ADDR", set_bind, {
		[CLI_SEND] = "source address for the connections",
		[CLI_RECV] = "address to listen on (default: all)",
		[CLI_DOCTOR] = "the source address 'pxfer send --bind' would\n"
			       "use toward HOST" }, CLI_ADDR },
	{ "secret-file", 0, "FILE", set_secret_file,
	  BOTH("read the shared secret from FILE ('-': stdin),\n"
	       "which only its owner may read (chmod 600)"), CLI_FILE },
	{ "transport", 0, "T", set_transport,
	  WITH_DOCTOR("auto, rdma or tcp (default auto)",
		      "auto, rdma or tcp: the transport a transfer\n"
		      "would be asked for (default auto)"), transports },
	{ "device", 0, "NAME", set_device,
	  WITH_DOCTOR("rdma: use this RDMA device (see 'rdma link');\n"
		      "several, separated by commas: one rail each",
		      "rdma: check this device (or these, separated\n"
		      "by commas) as 'pxfer send --device' would use it"),
	  CLI_DEVICE },
	{ "rails", 0, "LIST", set_rails, {
		[CLI_SEND] = "spread the data connections over these local\n"
			     "addresses (A,B,...), or over every one that is up\n"
			     "(auto), each paired with an address the receiver\n"
			     "offers on its subnet",
		[CLI_RECV] = "offer senders these addresses (A,B,...) for data,\n"
			     "or every one that is up (auto), at most 8" },
	  "auto " CLI_ADDR },
	{ "gid-index", 0, "N", set_gid_index,
	  WITH_DOCTOR("rdma: use this GID of the device (default: its\n"
		      "first RoCE v2 IPv4 GID); both work by binding\n"
		      "the address the GID holds",
		      "rdma: check this GID as 'pxfer send\n"
		      "--gid-index' would use it"), NULL },
	{ "fsync", 0, NULL, set_fsync, {
		[CLI_SEND] = "have the receiver fsync each file before naming it",
		[CLI_RECV] = "fsync every file before naming it" }, NULL },
	{ "io", 0, "KIND", set_io,
	  BOTH("file I/O: auto, uring or sync (default auto)"), io_kinds },
	{ "quiet", 'q', NULL, set_quiet, {
		[CLI_SEND] = "no progress line and no summary",
		[CLI_RECV] = "print only errors" }, NULL },
	{ "verbose", 'v', NULL, set_verbose, {
		[CLI_SEND] = "say what was chosen (transport, chunk size, ...);\n"
			     "-vv: with the seconds since the start",
		[CLI_RECV] = "say more; -vv: with the seconds since the start" },
	  NULL },
	{ "help", 'h', NULL, set_help, WITH_DOCTOR("this text", "this text"),
	  NULL },
};

#define N_COMMON	(sizeof(common_opts) / sizeof(common_opts[0]))
/* room for a command's own options and the shared ones */
#define OPTS_MAX	32

static void print_opt(FILE *f, int short_name, const char *name,
		      const char *arg, const char *help)
{
	char left[32];
	const char *nl;

	snprintf(left, sizeof(left), "--%s%s%s", name, arg ? " " : "",
		 arg ? arg : "");
	if (short_name)
		fprintf(f, "  -%c, %-18s ", short_name, left);
	else
		fprintf(f, "      %-18s ", left);
	/* a help of several lines goes on under its first */
	while ((nl = strchr(help, '\n'))) {
		fprintf(f, "%.*s\n%25s", (int)(nl - help), help, "");
		help = nl + 1;
	}
	fprintf(f, "%s\n", help);
}

void cli_usage(FILE *f, const struct cli_cmd *cmd)
{
	fputs(cmd->usage, f);
	fputs("\noptions:\n", f);
	for (const struct cli_opt *o = cmd->opts; o->name; o++)
		print_opt(f, o->short_name, o->name, o->arg, o->help);
	for (size_t i = 0; i < N_COMMON; i++)
		if (common_opts[i].help[cmd->side])
			print_opt(f, common_opts[i].short_name,
				  common_opts[i].name, common_opts[i].arg,
				  common_opts[i].help[cmd->side]);
	fputs("\n", f);
	fputs(cmd->epilog, f);
}

static void complete_opt(FILE *f, int short_name, const char *name,
			 const char *arg, const char *values, const char *help)
{
	fprintf(f, "--%s|", name);
	if (short_name)
		fprintf(f, "-%c", short_name);
	fprintf(f, "|%s|%s|%.*s\n", arg ? arg : "", values ? values : "",
		(int)strcspn(help, "\n"), help);
}

void cli_complete_words(FILE *f, const struct cli_cmd *cmd)
{
	for (const struct cli_opt *o = cmd->opts; o->name; o++)
		complete_opt(f, o->short_name, o->name, o->arg, o->values,
			     o->help);
	for (size_t i = 0; i < N_COMMON; i++)
		if (common_opts[i].help[cmd->side])
			complete_opt(f, common_opts[i].short_name,
				     common_opts[i].name, common_opts[i].arg,
				     common_opts[i].values,
				     common_opts[i].help[cmd->side]);
	fprintf(f, "|||%s|\n", cmd->operands ? cmd->operands : "");
}

/* getopt_long's view of an option: the value it returns for it is its
 * short name, or 256 + its index among the command's and the shared ones */
static void add_opt(struct option *lo, char *so, int i, const char *name,
		    int short_name, const char *arg)
{
	lo[i] = (struct option){
		.name = name,
		.has_arg = arg ? required_argument : no_argument,
		.val = short_name ? short_name : 256 + i,
	};
	if (short_name) {
		size_t n = strlen(so);

		so[n++] = short_name;
		if (arg)
			so[n++] = ':';
		so[n] = 0;
	}
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, void *ctx,
	      const struct cli_common *common, int *status)
{
	struct option lo[OPTS_MAX + 1] = { { 0 } };
	char so[2 * OPTS_MAX + 1] = "";
	unsigned char shared[N_COMMON];	/* getopt's index - nown -> common_opts */
	int n = 0, nown, c, i, ret;

	for (const struct cli_opt *o = cmd->opts; o->name; o++) {
		if (n + N_COMMON == OPTS_MAX)
			pxfer_die("'%s' has more options than OPTS_MAX", argv[0]);
		add_opt(lo, so, n++, o->name, o->short_name, o->arg);
	}
	nown = n;
	for (size_t j = 0; j < N_COMMON; j++) {
		if (!common_opts[j].help[cmd->side])
			continue;	/* not one of this command's */
		shared[n - nown] = j;
		add_opt(lo, so, n++, common_opts[j].name,
			common_opts[j].short_name, common_opts[j].arg);
	}

	/* for the shell completions, which read the options from here */
	if (argc == 2 && !strcmp(argv[1], "--complete-words")) {
		cli_complete_words(stdout, cmd);
		*status = 0;
		return -1;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		for (i = 0; i < n && lo[i].val != c; i++)
			;
		if (i == n) {		/* getopt_long said what is wrong */
			cli_usage(stderr, cmd);
			*status = PXFER_EXIT_USAGE;
			return -1;
		}
		if (i < nown)
			ret = cmd->opts[i].set(ctx, optarg);
		else
			ret = common_opts[shared[i - nown]].set(common, optarg);
		if (ret == CLI_HELP) {
			cli_usage(stdout, cmd);
			*status = 0;
			return -1;
		}
		if (ret) {
			*status = PXFER_EXIT_USAGE;
			return -1;
		}
	}
	return optind;
}
