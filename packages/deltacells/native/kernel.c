/*
 * The decoder's hot loops in C for Node (N-API): per-cell prefix sums of uint16 gap planes,
 * recombination of count planes, reading the indptr, CRC-32 (through Node's own zlib). The same loops exist in TypeScript (src/codec/kernel.ts)
 * for browsers and for hosts where this addon did not build; results are identical. Every index
 * is checked against the typed arrays' lengths here, so a bug in the caller cannot write out of
 * bounds.
 */
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define CHECK(call)                                  \
  do {                                               \
    if ((call) != napi_ok) return throw_bad(env);    \
  } while (0)

static napi_value throw_bad(napi_env env) {
  napi_throw_type_error(env, NULL, "deltacells kernel: bad arguments");
  return NULL;
}

static int get_array(napi_env env, napi_value v, napi_typedarray_type *type, size_t *len, void **data) {
  bool is;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return 0;
  napi_value ab;
  size_t off;
  return napi_get_typedarray_info(env, v, type, len, data, &ab, &off) == napi_ok;
}

static napi_value num(napi_env env, double x) {
  napi_value r;
  napi_create_double(env, x, &r);
  return r;
}

/*
 * gaps(planes: Uint8Array, n, indptr: Float64Array, nnzLo, ca, cb, out: Int32Array, shift, nGenes)
 * Prefix-sums cells [ca, cb) of a chunk. Returns -1 when all is well, the first bad cell
 * (a zero gap after the first, or a gene >= nGenes) otherwise, -2 on inconsistent arguments.
 */
static napi_value gaps(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value a[9];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 9) return throw_bad(env);
  napi_typedarray_type t1, t2, t3;
  size_t plen, ilen, olen;
  void *pp, *ip, *op;
  if (!get_array(env, a[0], &t1, &plen, &pp) || t1 != napi_uint8_array) return throw_bad(env);
  if (!get_array(env, a[2], &t2, &ilen, &ip) || t2 != napi_float64_array) return throw_bad(env);
  if (!get_array(env, a[6], &t3, &olen, &op) || t3 != napi_int32_array) return throw_bad(env);
  double n_, lo_, ca_, cb_, shift_, ng_;
  CHECK(napi_get_value_double(env, a[1], &n_));
  CHECK(napi_get_value_double(env, a[3], &lo_));
  CHECK(napi_get_value_double(env, a[4], &ca_));
  CHECK(napi_get_value_double(env, a[5], &cb_));
  CHECK(napi_get_value_double(env, a[7], &shift_));
  CHECK(napi_get_value_double(env, a[8], &ng_));
  const int64_t n = (int64_t)n_, nnz_lo = (int64_t)lo_, ca = (int64_t)ca_, cb = (int64_t)cb_, shift = (int64_t)shift_;
  const uint64_t n_genes = (uint64_t)ng_;
  if (n < 0 || (uint64_t)(2 * n) > plen || ca < 0 || cb < ca || (uint64_t)cb >= ilen) return num(env, -2);
  const uint8_t *lo = (const uint8_t *)pp, *hi = lo + n;
  const double *indptr = (const double *)ip;
  int32_t *out = (int32_t *)op;
  /* End (chunk position) of the entries this call writes; a block may spill up to there. */
  const int64_t range_end = cb > ca ? (int64_t)indptr[cb] - nnz_lo : 0;
  if (range_end > n || (uint64_t)(range_end + shift) > olen) return num(env, -2);
  for (int64_t c = ca; c < cb; c++) {
    const int64_t s = (int64_t)indptr[c] - nnz_lo, e = (int64_t)indptr[c + 1] - nnz_lo;
    if (s < 0 || e < s || e > n || s + shift < 0 || (uint64_t)(e + shift) > olen) return num(env, -2);
    if (s == e) continue;
    int32_t *o = out + shift;
    uint64_t g = (uint64_t)lo[s] | ((uint64_t)hi[s] << 8);
    o[s] = (int32_t)g;
    uint32_t zero = 0;
    int64_t j = s + 1;
#ifdef __SSE2__
    /* 8 gaps per step: widen to 2 x 4 uint32, prefix-sum within each vector, add the carry.
       Lanes are uint32 and g <= 65535 here: 65536 more gaps of at most 65535 cannot wrap them.
       Longer cells (more than 65536 genes expressed) finish in the scalar loop. */
    const int64_t simd_end = e - j <= 65536 ? e : j + 65536;
    if (simd_end - j >= 8) {
      __m128i carry = _mm_set1_epi32((int32_t)g);
      const __m128i k = _mm_setzero_si128();
      __m128i anyzero = _mm_setzero_si128();
      for (; j + 8 <= simd_end; j += 8) {
        __m128i l = _mm_loadl_epi64((const __m128i *)(lo + j));
        __m128i h = _mm_loadl_epi64((const __m128i *)(hi + j));
        __m128i d16 = _mm_unpacklo_epi8(l, h); /* 8 x uint16 */
        anyzero = _mm_or_si128(anyzero, _mm_cmpeq_epi16(d16, k));
        __m128i d0 = _mm_unpacklo_epi16(d16, k);
        __m128i d1 = _mm_unpackhi_epi16(d16, k);
        d0 = _mm_add_epi32(d0, _mm_slli_si128(d0, 4));
        d0 = _mm_add_epi32(d0, _mm_slli_si128(d0, 8));
        d1 = _mm_add_epi32(d1, _mm_slli_si128(d1, 4));
        d1 = _mm_add_epi32(d1, _mm_slli_si128(d1, 8));
        /* Fold d0's total into d1 off the critical path: the carry then costs one add and one
           shuffle per 8 gaps instead of two of each. */
        d1 = _mm_add_epi32(d1, _mm_shuffle_epi32(d0, 0xff));
        d0 = _mm_add_epi32(d0, carry);
        d1 = _mm_add_epi32(d1, carry);
        _mm_storeu_si128((__m128i *)(o + j), d0);
        _mm_storeu_si128((__m128i *)(o + j + 4), d1);
        carry = _mm_shuffle_epi32(d1, 0xff);
      }
      zero |= (uint32_t)_mm_movemask_epi8(anyzero);
      g = (uint32_t)_mm_cvtsi128_si32(carry);
    }
    /* The last 1..7 gaps of a cell as one more block of 8, when the 8 reads stay inside both
       planes and the 8 writes stay inside this call's own range (the extra outputs belong to
       the next cell, which is written afterwards; never to another thread's chunk). */
    const int64_t left = e - j;
    if (left > 0 && left < 8 && j + 8 <= range_end && g < (1u << 31)) {
      __m128i l = _mm_loadl_epi64((const __m128i *)(lo + j));
      __m128i h = _mm_loadl_epi64((const __m128i *)(hi + j));
      const __m128i k = _mm_setzero_si128();
      __m128i d16 = _mm_unpacklo_epi8(l, h);
      zero |= (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(d16, k)) & ((1u << (2 * left)) - 1u);
      __m128i d0 = _mm_unpacklo_epi16(d16, k);
      __m128i d1 = _mm_unpackhi_epi16(d16, k);
      d0 = _mm_add_epi32(d0, _mm_slli_si128(d0, 4));
      d0 = _mm_add_epi32(d0, _mm_slli_si128(d0, 8));
      d1 = _mm_add_epi32(d1, _mm_slli_si128(d1, 4));
      d1 = _mm_add_epi32(d1, _mm_slli_si128(d1, 8));
      d1 = _mm_add_epi32(d1, _mm_shuffle_epi32(d0, 0xff));
      const __m128i carry = _mm_set1_epi32((int32_t)g);
      _mm_storeu_si128((__m128i *)(o + j), _mm_add_epi32(d0, carry));
      _mm_storeu_si128((__m128i *)(o + j + 4), _mm_add_epi32(d1, carry));
      g = (uint32_t)o[e - 1];
      j = e;
    }
#endif
    for (; j < e; j++) {
      const uint32_t d = (uint32_t)lo[j] | ((uint32_t)hi[j] << 8);
      zero |= (d == 0);
      g += d;
      o[j] = (int32_t)g;
    }
    if (zero || g >= n_genes) return num(env, (double)c);
  }
  return num(env, -1);
}

/*
 * vals(planes: Uint8Array, n, s, e, out: Int32Array | Float32Array, shift) -> true if no count was 0.
 */
static napi_value vals(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value a[6];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 6) return throw_bad(env);
  napi_typedarray_type t1, t2;
  size_t plen, olen;
  void *pp, *op;
  if (!get_array(env, a[0], &t1, &plen, &pp) || t1 != napi_uint8_array) return throw_bad(env);
  if (!get_array(env, a[4], &t2, &olen, &op) || (t2 != napi_int32_array && t2 != napi_float32_array)) {
    return throw_bad(env);
  }
  double n_, s_, e_, shift_;
  CHECK(napi_get_value_double(env, a[1], &n_));
  CHECK(napi_get_value_double(env, a[2], &s_));
  CHECK(napi_get_value_double(env, a[3], &e_));
  CHECK(napi_get_value_double(env, a[5], &shift_));
  const int64_t n = (int64_t)n_, s = (int64_t)s_, e = (int64_t)e_, shift = (int64_t)shift_;
  napi_value r;
  if (n < 0 || (uint64_t)(2 * n) > plen || s < 0 || e < s || e > n || s + shift < 0 || (uint64_t)(e + shift) > olen) {
    return throw_bad(env);
  }
  const uint8_t *lo = (const uint8_t *)pp, *hi = lo + n;
  uint32_t zero = 0;
  if (t2 == napi_int32_array) {
    int32_t *o = (int32_t *)op + shift;
    for (int64_t j = s; j < e; j++) {
      const uint32_t v = (uint32_t)lo[j] | ((uint32_t)hi[j] << 8);
      zero |= (v == 0);
      o[j] = (int32_t)v;
    }
  } else {
    float *o = (float *)op + shift;
    for (int64_t j = s; j < e; j++) {
      const uint32_t v = (uint32_t)lo[j] | ((uint32_t)hi[j] << 8);
      zero |= (v == 0);
      o[j] = (float)v;
    }
  }
  napi_get_boolean(env, zero == 0, &r);
  return r;
}

/*
 * indptr(bytes: Uint8Array, off, nCells, nnz, out: Float64Array) -> -1 if the int64 indptr at
 * `off` is non-decreasing, within [0, nnz] and copied to `out`; else the first bad entry.
 */
static napi_value indptr_js(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value a[5];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 5) return throw_bad(env);
  napi_typedarray_type t1, t2;
  size_t blen, olen;
  void *bp, *op;
  if (!get_array(env, a[0], &t1, &blen, &bp) || t1 != napi_uint8_array) return throw_bad(env);
  if (!get_array(env, a[4], &t2, &olen, &op) || t2 != napi_float64_array) return throw_bad(env);
  double off_, n_, nnz_;
  CHECK(napi_get_value_double(env, a[1], &off_));
  CHECK(napi_get_value_double(env, a[2], &n_));
  CHECK(napi_get_value_double(env, a[3], &nnz_));
  const uint64_t off = (uint64_t)off_, count = (uint64_t)n_ + 1, nnz = (uint64_t)nnz_;
  if (off_ < 0 || n_ < 0 || off + 8 * count > blen || count > olen) return throw_bad(env);
  const uint8_t *src = (const uint8_t *)bp + off;
  double *out = (double *)op;
  uint64_t prev = 0;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t v;
    memcpy(&v, src + 8 * i, 8);
    if (v < prev || v > nnz) return num(env, (double)i);
    out[i] = (double)v;
    prev = v;
  }
  return num(env, -1);
}

/*
 * crc32(bytes: Uint8Array, crc) -> CRC-32 (zlib) continued from crc. Uses the zlib that Node
 * itself links and exports (Chromium's, with SIMD folding): several times faster than tables.
 */
static napi_value crc32_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value a[2];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 2) return throw_bad(env);
  napi_typedarray_type t;
  size_t len;
  void *p;
  if (!get_array(env, a[0], &t, &len, &p) || t != napi_uint8_array) return throw_bad(env);
  uint32_t start;
  CHECK(napi_get_value_uint32(env, a[1], &start));
  napi_value r;
  napi_create_uint32(env, (uint32_t)crc32_z(start, (const Bytef *)p, len), &r);
  return r;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
      {"gaps", NULL, gaps, NULL, NULL, NULL, napi_default, NULL},
      {"vals", NULL, vals, NULL, NULL, NULL, napi_default, NULL},
      {"crc32", NULL, crc32_js, NULL, NULL, NULL, napi_default, NULL},
      {"indptr", NULL, indptr_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, 4, props);
  return exports;
}
