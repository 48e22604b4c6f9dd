/* util.c - see util.h */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

const char *prog_name = "raidimg";
int verbose;

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	long double v;
	uint64_t mult = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtold(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 's': case 'S': mult = 512; end++; break;
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	case 't': case 'T': mult = 1ULL << 40; end++; break;
	case 'p': case 'P': mult = 1ULL << 50; end++; break;
	default: return -EINVAL;
	}
	/* accept "K", "KiB", "KB" (all binary) */
	if (mult > 512 && (*end == 'i' || *end == 'I'))
		end++;
	if (mult > 512 && (*end == 'b' || *end == 'B'))
		end++;
	if (*end)
		return -EINVAL;
	v *= mult;
	if (v >= 18446744073709551615.0L)
		return -ERANGE;
	if (v != (long double)(uint64_t)v)
		return -EINVAL;          /* fractional bytes */
	*out = (uint64_t)v;
	return 0;
}

int parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end || end == s)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_rate(const char *s, uint64_t *out)
{
	size_t len = strlen(s);
	long long kib;

	if (!strcmp(s, "unlimited") || !strcmp(s, "none")) {
		*out = 0;
		return 0;
	}
	if (len && s[len - 1] >= '0' && s[len - 1] <= '9') {
		if (parse_int(s, 0, (long long)(UINT64_MAX >> 11), &kib))
			return -EINVAL;
		*out = (uint64_t)kib * 1024;
		return 0;
	}
	return parse_size(s, out) ? -EINVAL : 0;
}

char *fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024 && u + 1 < ARRAY_LEN(unit)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

void fmt_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int fmt_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void *xaligned_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, len ? len : 64))
		return NULL;
	return p;
}

void json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		json_str(f, s);
	else
		fputs("null", f);
}

size_t utf8_seq_len(const unsigned char *p)
{
	unsigned char c = p[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates and past U+10FFFF are not UTF-8 */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (p && *p) {
		size_t n = utf8_seq_len(p);

		if (!n)
			return false;
		p += n;
	}
	return true;
}

void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (p && *p) {
		unsigned char c = *p;
		size_t n = utf8_seq_len(p);

		if (!n) {
			fputs("\\ufffd", f);     /* not UTF-8: the replacement character */
			p++;
			continue;
		}
		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fwrite(p, 1, n, f);
		}
		p += n;
	}
	fputc('"', f);
}

void hex_encode(const void *buf, size_t len, char *out)
{
	static const char d[] = "0123456789abcdef";
	const unsigned char *b = buf;

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * len] = '\0';
}

int hex_decode(const char *hex, char *out, size_t outlen)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 + 1 > outlen)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v = 0;

		for (int j = 0; j < 2; j++) {
			char c = hex[2 * i + (size_t)j];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				return -EINVAL;
		}
		out[i] = (char)v;
	}
	out[n / 2] = '\0';
	return 0;
}

void json_path(FILE *f, const char *path, const char *key)
{
	json_str(f, path);
	if (path && !utf8_valid(path)) {
		size_t len = strlen(path);
		char *hex = malloc(2 * len + 1);

		if (hex) {
			hex_encode(path, len, hex);
			fprintf(f, ",\"%s_hex\":\"%s\"", key, hex);
			free(hex);
		}
	}
}


uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}





