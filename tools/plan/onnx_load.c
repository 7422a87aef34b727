// SPDX-License-Identifier: MIT
/*
 * Reading an ONNX file: the bytes, a nesting check, then protobuf-c.
 *
 * protobuf-c unpacks nested messages recursively with no depth limit, so a
 * hostile file of a few megabytes of nested graphs could exhaust the
 * stack.  Before unpacking, a walk over the wire format, guided by the
 * generated descriptors, refuses nesting deeper than any real model has
 * and truncated fields, naming the offset.  Unknown fields (newer IR
 * versions) are skipped by both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

/* protobuf's own hard limit on a message. */
#define MD_FILE_MAX ((size_t)INT32_MAX)
/* Message nesting: model > graph > node > attribute > graph ... */
#define MD_WIRE_DEPTH 100

struct wire {
	const uint8_t *buf;
	size_t len;
	char *err;
	size_t errlen;
};

static int wire_varint(const struct wire *w, size_t *pos, size_t end,
		       uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*pos < end && shift < 64) {
		uint8_t b = w->buf[(*pos)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	snprintf(w->err, w->errlen, "truncated or overlong varint at byte %zu", *pos);
	return -EBADMSG;
}

static int wire_walk(const struct wire *w, size_t pos, size_t end,
		     const ProtobufCMessageDescriptor *d, int depth)
{
	uint64_t key, len;
	int ret;

	if (depth > MD_WIRE_DEPTH) {
		snprintf(w->err, w->errlen,
			 "messages nested deeper than %d levels at byte %zu; not a model this tool can read",
			 MD_WIRE_DEPTH, pos);
		return -ELOOP;
	}
	while (pos < end) {
		const ProtobufCFieldDescriptor *f;
		size_t at = pos;

		ret = wire_varint(w, &pos, end, &key);
		if (ret)
			return ret;
		switch (key & 7) {
		case 0:
			ret = wire_varint(w, &pos, end, &len);
			if (ret)
				return ret;
			continue;
		case 1: len = 8; break;
		case 5: len = 4; break;
		case 2:
			ret = wire_varint(w, &pos, end, &len);
			if (ret)
				return ret;
			break;
		default:
			snprintf(w->err, w->errlen,
				 "unsupported wire type %u at byte %zu", (unsigned)(key & 7), at);
			return -EBADMSG;
		}
		if (len > end - pos) {
			snprintf(w->err, w->errlen,
				 "field %llu at byte %zu claims %llu bytes but only %zu remain (truncated file?)",
				 (unsigned long long)(key >> 3), at,
				 (unsigned long long)len, end - pos);
			return -EBADMSG;
		}
		f = d && key >> 3 <= UINT32_MAX ?
			protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && (key & 7) == 2) {
			ret = wire_walk(w, pos, pos + len, f->descriptor, depth + 1);
			if (ret)
				return ret;
		}
		pos += len;
	}
	return 0;
}

int md_load_mem(const uint8_t *buf, size_t len, Onnx__ModelProto **out,
		char *err, size_t errlen)
{
	struct wire w = { buf, len, err, errlen };
	int ret;

	*out = NULL;
	if (len == 0) {
		snprintf(err, errlen, "the file is empty");
		return -EBADMSG;
	}
	if (len > MD_FILE_MAX) {
		snprintf(err, errlen, "%zu bytes is over protobuf's 2 GiB limit on a message; keep large weights as external data",
			 len);
		return -EFBIG;
	}
	ret = wire_walk(&w, 0, len, &onnx__model_proto__descriptor, 0);
	if (ret)
		return ret;
	*out = onnx__model_proto__unpack(NULL, len, buf);
	if (!*out) {
		snprintf(err, errlen, "protobuf-c could not decode it as an ONNX ModelProto (corrupt or not an ONNX file)");
		return -EBADMSG;
	}
	return 0;
}

int md_load_file(const char *path, Onnx__ModelProto **out, char *err,
		 size_t errlen)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		close(fd);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > MD_FILE_MAX) {
		snprintf(err, errlen, "%lld bytes is over protobuf's 2 GiB limit on a message; keep large weights as external data",
			 (long long)st.st_size);
		close(fd);
		return -EFBIG;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "out of memory for %lld bytes", (long long)st.st_size);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			snprintf(err, errlen, "read failed at byte %zu: %s", got,
				 n ? strerror(errno) : "file shrank while read");
			free(buf);
			close(fd);
			return -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	ret = md_load_mem(buf, got, out, err, errlen);
	free(buf);
	return ret;
}

void md_proto_free(Onnx__ModelProto *m)
{
	if (m)
		onnx__model_proto__free_unpacked(m, NULL);
}
