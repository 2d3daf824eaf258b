/* SPDX-License-Identifier: Apache-2.0 */
/* Running gnuplot on a figure's script (gnuplot.h). */
#include "tools/lib/gnuplot.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/core/error.h"
#include "common/core/file.h"

extern char **environ;

void dp_gnuplot_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

void dp_gnuplot_data_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || (unsigned char)*s < 0x20 ? '\'' : *s, f);
	fputc('"', f);
}

static int find_gnuplot(char *buf, size_t size)
{
	const char *path = getenv("PATH");
	const char *p = path && *path ? path : "/usr/bin:/bin";

	while (*p) {
		size_t len = strcspn(p, ":");
		struct stat st;
		if (len > 0 && (size_t)snprintf(buf, size, "%.*s/gnuplot", (int)len, p) < size &&
		    stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return 0;
		p += len;
		if (*p == ':')
			p++;
	}
	return dp_error_set(DP_ENOENT, "gnuplot not found on PATH (on Debian: apt-get install gnuplot-nox)");
}

int dp_gnuplot_check(void)
{
	char buf[4096];

	return find_gnuplot(buf, sizeof(buf));
}

/* The last non-blank line of gnuplot's stderr, whitespace squeezed. */
static void last_line(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	char line[512];

	snprintf(out, size, "no message");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *e;
		while (isspace((unsigned char)*s))
			s++;
		e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (*s)
			snprintf(out, size, "%s", s);
	}
	fclose(f);
}

static int make_temp(char *buf, size_t size, const char *suffix)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(buf, size, "%s/dpasync-plot-XXXXXX%s", dir && *dir ? dir : "/tmp", suffix);
	fd = mkstemps(buf, (int)strlen(suffix));
	if (fd < 0)
		return dp_error_set(DP_EIO, "cannot create a temporary file in %s: %s", dir && *dir ? dir : "/tmp",
				    strerror(errno));
	return fd;
}

int dp_gnuplot_format_of(const char *out, enum dp_gnuplot_format *fmt)
{
	static const char *const ext[] = { ".png", ".svg", ".pdf" };
	size_t n;

	DP_REQUIRE(out != NULL && fmt != NULL);
	n = strlen(out);
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (n > 4 && strcasecmp(out + n - 4, ext[i]) == 0) {
			*fmt = (enum dp_gnuplot_format)i;
			return 0;
		}
	return dp_error_set(DP_EINVAL, "%s: the figure's format comes from its extension: .png, "
			    ".svg or .pdf", out);
}

/* The terminal for the output's format.  In pixels, PDF is sized in
 * inches at 72 pixels per inch, so a figure has the proportions of its
 * PNG, with 11 pt text.  A printed size sets the inches and the text: PNG
 * and SVG at 150 pixels per inch, PNG's text in proportion so that it
 * looks as the PDF does. */
static void put_terminal(FILE *f, enum dp_gnuplot_format fmt, const dp_gnuplot_page *pg)
{
	double win, hin, pt = 11.0;
	unsigned w = pg->width ? pg->width : 1000, h = pg->height ? pg->height : 600;

	win = w / 72.0;
	hin = h / 72.0;
	if (pg->preset != DP_GNUPLOT_SIZE_PIXELS) {
		bool col = pg->preset == DP_GNUPLOT_SIZE_COLUMN;

		win = col ? 3.5 : 7.0;
		hin = col ? 2.6 : 4.3;
		pt = col ? 7.0 : 9.0;
		w = (unsigned)(win * 150.0 + 0.5);
		h = (unsigned)(hin * 150.0 + 0.5);
		if (fmt == DP_GNUPLOT_PNG)   /* its points are pixels */
			pt *= 150.0 / 72.0;
	}
	if (fmt == DP_GNUPLOT_SVG)
		fprintf(f, "set terminal svg size %u,%u font \"DejaVu Sans,%g\" noenhanced "
			"background rgb \"white\"\n", w, h, pt);
	else if (fmt == DP_GNUPLOT_PDF)
		fprintf(f, "set terminal pdfcairo size %.3fin,%.3fin font \"DejaVu Sans,%g\" "
			"noenhanced\n", win, hin, pt);
	else
		fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
			"    set terminal pngcairo size %u,%u font \"DejaVu Sans,%g\" noenhanced\n"
			"} else {\n"
			"    set terminal png size %u,%u noenhanced\n"
			"}\n", w, h, pt, w, h);
}

/* Run gnuplot on prologue + body; the figure goes to a temporary name next
 * to `out` and is renamed over it only when gnuplot succeeded. */
static int render(const char *body, size_t len, const dp_gnuplot_page *pg, const char *out)
{
	char gp[4096], script[4096], log[4096], tmp_out[4096], msg[400];
	char *argv[3];
	int sfd = -1, lfd = -1, status, rc;
	posix_spawn_file_actions_t fa;
	enum dp_gnuplot_format fmt;
	FILE *f;
	pid_t pid;
	struct stat st;

	for (const char *s = out; *s; s++)
		if ((unsigned char)*s < 0x20)
			return dp_error_set(DP_EINVAL, "output path contains a control character");
	if ((size_t)snprintf(tmp_out, sizeof(tmp_out), "%s.tmp-%ld", out, (long)getpid()) >= sizeof(tmp_out))
		return dp_error_set(DP_EINVAL, "output path too long");
	rc = dp_gnuplot_format_of(out, &fmt);
	if (rc != 0)
		return rc;
	rc = find_gnuplot(gp, sizeof(gp));
	if (rc != 0)
		return rc;
	sfd = make_temp(script, sizeof(script), ".gp");
	if (sfd < 0)
		return sfd;
	lfd = make_temp(log, sizeof(log), ".log");
	if (lfd < 0) {
		close(sfd);
		unlink(script);
		return lfd;
	}
	f = fdopen(sfd, "w");
	if (f == NULL) {
		close(sfd);
		rc = dp_error_set(DP_EIO, "%s: %s", script, strerror(errno));
		goto out;
	}
	fputs("set encoding utf8\n", f);
	put_terminal(f, fmt, pg);
	fputs("set output '", f);
	for (const char *s = tmp_out; *s; s++)
		fputs(*s == '\'' ? "''" : (char[2]){ *s, 0 }, f);
	fputs("'\nset grid lc rgb \"#d0d0d0\"\nset border lc rgb \"#404040\"\n", f);
	fwrite(body, 1, len, f);
	fputs("unset output\n", f);
	if (fclose(f) != 0) {
		rc = dp_error_set(DP_EIO, "%s: write failed", script);
		goto out;
	}
	argv[0] = gp;
	argv[1] = script;
	argv[2] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, lfd, 1);
	posix_spawn_file_actions_adddup2(&fa, lfd, 2);
	rc = posix_spawn(&pid, gp, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		rc = dp_error_set(DP_EIO, "cannot run %s: %s", gp, strerror(rc));
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			rc = dp_error_set(DP_EIO, "waiting for gnuplot: %s", strerror(errno));
			goto out;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		last_line(log, msg, sizeof(msg));
		rc = dp_error_set(DP_EIO, "gnuplot failed (%s %d): %s", WIFEXITED(status) ? "exit" : "signal",
				  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), msg);
		goto out;
	}
	if (stat(tmp_out, &st) != 0 || st.st_size == 0) {
		last_line(log, msg, sizeof(msg));
		rc = dp_error_set(DP_EIO, "gnuplot wrote no figure: %s", msg);
		goto out;
	}
	if (rename(tmp_out, out) != 0) {
		rc = dp_error_set(DP_EIO, "%s: cannot write: %s", out, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(lfd);
	unlink(script);
	unlink(log);
	if (rc != 0)
		unlink(tmp_out);
	return rc;
}

int dp_gnuplot_begin(dp_gnuplot *g, const dp_gnuplot_page *page, const char *csv_header)
{
	DP_REQUIRE(g != NULL && page != NULL && csv_header != NULL);
	memset(g, 0, sizeof(*g));
	g->page = *page;
	/* What the figure draws, as CSV for --data-out: built in memory beside
	 * the script and written only once the figure is. */
	if (page->data_out != NULL) {
		g->csv = open_memstream(&g->csvtext, &g->csvlen);
		if (g->csv == NULL)
			return dp_error_set(DP_ENOMEM, "out of memory");
		fprintf(g->csv, "%s\n", csv_header);
	}
	g->f = open_memstream(&g->body, &g->len);
	if (g->f == NULL) {
		dp_gnuplot_abandon(g);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	return 0;
}

void dp_gnuplot_abandon(dp_gnuplot *g)
{
	DP_REQUIRE(g != NULL);
	if (g->f)
		fclose(g->f);
	if (g->csv)
		fclose(g->csv);
	free(g->body);
	free(g->csvtext);
	memset(g, 0, sizeof(*g));
}

void dp_gnuplot_csv_text(FILE *f, const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int dp_gnuplot_finish(dp_gnuplot *g, const char *out)
{
	const dp_gnuplot_page *pg;
	int rc, closed;

	DP_REQUIRE(g != NULL && g->f != NULL && out != NULL);
	pg = &g->page;
	closed = fclose(g->f);
	g->f = NULL;
	if (closed != 0 || g->body == NULL) {
		dp_gnuplot_abandon(g);
		return dp_error_set(DP_ENOMEM, "out of memory");
	}
	rc = render(g->body, g->len, pg, out);
	if (rc == 0 && g->csv) {
		closed = fclose(g->csv);
		g->csv = NULL;
		if (closed != 0 || g->csvtext == NULL)
			rc = dp_error_set(DP_ENOMEM, "out of memory");
		if (rc == 0)
			rc = dp_file_write_atomic(pg->data_out, g->csvtext, g->csvlen, 0644);
		if (rc != 0 && rc != DP_ENOMEM)
			rc = dp_error_set(DP_EIO, "--data-out %s: %s", pg->data_out,
					  dp_error_detail(rc));
	}
	dp_gnuplot_abandon(g);
	return rc;
}

void dp_gnuplot_title(dp_gnuplot *g, const char *cmd, const char *deflt)
{
	const dp_gnuplot_page *pg;
	char buf[1024];

	DP_REQUIRE(g != NULL && g->f != NULL && cmd != NULL && deflt != NULL);
	pg = &g->page;
	fprintf(g->f, "%s ", cmd);
	if (!pg->title && pg->preset != DP_GNUPLOT_SIZE_PIXELS) {
		fputs("\"\"", g->f);   /* a printed figure's caption says it */
	} else if (pg->title) {
		dp_gnuplot_quoted(g->f, pg->title);
	} else {
		snprintf(buf, sizeof(buf), "%s%s%s", deflt, pg->context && pg->context[0] ? "\n" : "",
			 pg->context ? pg->context : "");
		dp_gnuplot_quoted(g->f, buf);
	}
	fputc('\n', g->f);
}

void dp_gnuplot_key_right(dp_gnuplot *g, const char *more)
{
	DP_REQUIRE(g != NULL && g->f != NULL && more != NULL);
	fprintf(g->f, "set key %s%s\n", g->page.preset != DP_GNUPLOT_SIZE_PIXELS
					      ? "below horizontal maxrows 2" : "outside right top vertical",
		more);
}

void dp_gnuplot_logscale(FILE *f, const char *axis)
{
	fprintf(f, "set logscale %s\nset m%stics 10\n", axis, axis);
}
