// SPDX-License-Identifier: MIT
/*
 * Element types, byte sizes, and the contents of small tensors (kept so
 * that shape arithmetic - Shape, Gather, Concat, Reshape - resolves).
 * Every count taken from a file is checked against what the file holds.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

int md_err(struct md_model *m, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return code;
}

/* Bits of one element of an ONNX TensorProto.DataType; 0: unknown. */
int md_elem_bits(int32_t elem)
{
	switch (elem) {
	case 2: case 3: case 9: case 17: case 18: case 19: case 20:
		return 8;	/* uint8 int8 bool float8 */
	case 4: case 5: case 10: case 16:
		return 16;	/* uint16 int16 float16 bfloat16 */
	case 1: case 6: case 12:
		return 32;	/* float int32 uint32 */
	case 7: case 11: case 13: case 14:
		return 64;	/* int64 double uint64 complex64 */
	case 15:
		return 128;	/* complex128 */
	case 21: case 22: case 23:
		return 4;	/* uint4 int4 float4 */
	default:
		return 0;	/* undefined, string, or newer than this tool */
	}
}

bool md_elem_is_float(int32_t elem)
{
	return elem == 1 || elem == 10 || elem == 11 || elem == 16 ||
	       (elem >= 17 && elem <= 20) || elem == 23;
}

int md_elements(const struct md_value *v, uint64_t *count)
{
	uint64_t n = 1;
	int32_t k;

	if (v->rank < 0)
		return -ENODATA;
	for (k = 0; k < v->rank; k++) {
		if (v->dims[k] < 0)
			return -ENODATA;
		if (__builtin_mul_overflow(n, (uint64_t)v->dims[k], &n))
			return -EOVERFLOW;
	}
	*count = n;
	return 0;
}

/* Bytes of a value: elements times element size, packed sub-byte types
 * rounded up to a whole byte.  -ENODATA when the shape or type is unknown. */
int md_value_bytes(const struct md_value *v, uint64_t *bytes)
{
	uint64_t n, bits;
	int b = md_elem_bits(v->elem), ret;

	if (v->sized_zero) {
		*bytes = 0;
		return 0;
	}
	ret = md_elements(v, &n);
	if (ret)
		return ret;
	if (!b)
		return -ENODATA;
	/* Whole bytes of eight elements at a time, then the rest rounded up:
	 * n * b bits may overflow where the bytes do not. */
	if (__builtin_mul_overflow(n / 8, (uint64_t)b, &bits) ||
	    __builtin_add_overflow(bits, ((n % 8) * (uint64_t)b + 7) / 8, bytes))
		return -EOVERFLOW;
	return 0;
}

void md_drop_data(struct md_value *v)
{
	free(v->idata);
	free(v->fdata);
	v->idata = NULL;
	v->fdata = NULL;
	v->n_data = 0;
	v->has_data = false;
}

/* Keep @n elements: from @i (integers) or @f (floats), both filled. */
int md_set_data(struct md_value *v, uint32_t n, const int64_t *i,
		const double *f)
{
	uint32_t k;

	md_drop_data(v);
	if (n > MD_DATA_MAX)
		return 0;
	v->idata = malloc(sizeof(int64_t) * (n ? n : 1));
	v->fdata = malloc(sizeof(double) * (n ? n : 1));
	if (!v->idata || !v->fdata) {
		md_drop_data(v);
		return -ENOMEM;
	}
	for (k = 0; k < n; k++) {
		double x = i ? (double)i[k] : f[k];

		v->fdata[k] = x;
		if (i)
			v->idata[k] = i[k];
		else if (x != x || x >= 9.2e18 || x <= -9.2e18)
			v->idata[k] = x < 0 ? INT64_MIN : INT64_MAX;
		else
			v->idata[k] = (int64_t)x;
	}
	v->n_data = n;
	v->has_data = true;
	return 0;
}

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double x = e == 0 ? m / 1024.0 / 16384.0 :
		   e == 31 ? (m ? 0.0 / 0.0 : 1.0 / 0.0) :
		   (1.0 + m / 1024.0) * (double)(1ull << e) / 32768.0;

	return (h & 0x8000) ? -x : x;
}

/* Element @k of little-endian raw data of type @elem, as a double and an
 * integer.  Returns -ENOTSUP for a type it does not decode. */
static int raw_elem(const uint8_t *p, int32_t elem, size_t k, int64_t *iv,
		    double *fv)
{
	union { float f; double d; uint32_t u32; uint64_t u64; } u;
	uint16_t h;

	switch (elem) {
	case 1: memcpy(&u.u32, p + 4 * k, 4); *fv = u.f; *iv = 0; return 1;
	case 11: memcpy(&u.u64, p + 8 * k, 8); *fv = u.d; *iv = 0; return 1;
	case 10: memcpy(&h, p + 2 * k, 2); *fv = half_to_double(h); *iv = 0; return 1;
	case 2: case 9: *iv = p[k]; break;
	case 3: *iv = (int8_t)p[k]; break;
	case 4: memcpy(&h, p + 2 * k, 2); *iv = h; break;
	case 5: memcpy(&h, p + 2 * k, 2); *iv = (int16_t)h; break;
	case 6: memcpy(&u.u32, p + 4 * k, 4); *iv = (int32_t)u.u32; break;
	case 12: memcpy(&u.u32, p + 4 * k, 4); *iv = u.u32; break;
	case 7: case 13: memcpy(&u.u64, p + 8 * k, 8); *iv = (int64_t)u.u64; break;
	default: return -ENOTSUP;
	}
	*fv = (double)*iv;
	return 0;
}

/* The typed field holding a tensor's elements, and its count. */
static int tensor_typed(const Onnx__TensorProto *t, uint64_t n,
			int64_t *iv, double *fv)
{
	uint64_t k;

	if (t->n_float_data >= n && (t->data_type == 1 || t->data_type == 14)) {
		for (k = 0; k < n; k++)
			fv[k] = t->float_data[k];
		return 1;
	}
	if (t->n_double_data >= n && t->data_type == 11) {
		for (k = 0; k < n; k++)
			fv[k] = t->double_data[k];
		return 1;
	}
	if (t->n_int64_data >= n && t->data_type == 7) {
		memcpy(iv, t->int64_data, sizeof(int64_t) * n);
		return 0;
	}
	if (t->n_uint64_data >= n && (t->data_type == 13 || t->data_type == 12)) {
		for (k = 0; k < n; k++)
			iv[k] = (int64_t)t->uint64_data[k];
		return 0;
	}
	if (t->n_int32_data >= n && t->data_type == 10) {
		for (k = 0; k < n; k++)
			fv[k] = half_to_double((uint16_t)t->int32_data[k]);
		return 1;
	}
	if (t->n_int32_data >= n && md_elem_bits(t->data_type) && !md_elem_is_float(t->data_type)) {
		for (k = 0; k < n; k++)
			iv[k] = t->int32_data[k];
		return 0;
	}
	return -ENODATA;
}

/* A value's type, shape and (small) contents from a TensorProto. */
int md_set_from_tensor(struct md_model *m, struct md_value *v,
		       const Onnx__TensorProto *t)
{
	uint64_t n, need;
	int64_t *iv = NULL;
	double *fv = NULL;
	size_t k;
	int ret, bits, isf = 0;

	if (t->n_dims > MD_MAX_RANK)
		return md_err(m, -E2BIG, "tensor '%s' has rank %zu; at most %d is supported",
			      v->name, t->n_dims, MD_MAX_RANK);
	v->elem = t->data_type;
	v->rank = (int32_t)t->n_dims;
	for (k = 0; k < t->n_dims; k++) {
		if (t->dims[k] < 0)
			return md_err(m, -EINVAL, "tensor '%s' has a negative dimension %lld",
				      v->name, (long long)t->dims[k]);
		v->dims[k] = t->dims[k];
	}
	ret = md_elements(v, &n);
	if (ret)
		return md_err(m, -EOVERFLOW, "tensor '%s': its element count overflows 64 bits",
			      v->name);
	bits = md_elem_bits(t->data_type);
	if (n > MD_DATA_MAX || !bits ||
	    (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
		return 0;	/* its size is all we need */
	iv = calloc(n ? n : 1, sizeof(*iv));
	fv = calloc(n ? n : 1, sizeof(*fv));
	if (!iv || !fv) {
		ret = -ENOMEM;
		goto out;
	}
	if (t->has_raw_data) {
		need = n * (uint64_t)bits / 8;
		if (bits < 8 || t->raw_data.len < need) {
			ret = 0;	/* packed 4-bit or short: keep the size only */
			goto out;
		}
		for (k = 0; k < n; k++) {
			ret = raw_elem(t->raw_data.data, t->data_type, k, &iv[k], &fv[k]);
			if (ret < 0) {
				ret = 0;
				goto out;
			}
			isf = ret;
		}
	} else {
		isf = tensor_typed(t, n, iv, fv);
		if (isf < 0) {
			ret = 0;
			goto out;
		}
	}
	ret = md_set_data(v, (uint32_t)n, isf ? NULL : iv, isf ? fv : NULL);
out:
	free(iv);
	free(fv);
	return ret;
}
