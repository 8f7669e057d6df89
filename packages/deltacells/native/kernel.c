/*
 * The decoder's hot loops in C for Node (N-API): per-cell prefix sums of uint16 gap planes,
 * recombination of count planes, reading the indptr, CRC-32. The same loops exist in TypeScript
 * (src/codec/kernel.ts) for browsers and for hosts where this addon did not build; results are
 * identical. Every index is checked against the typed arrays' lengths here, so a bug in the
 * caller cannot write out of bounds.
 *
 * Instruction sets, chosen once at load time (the addon is built for plain x86-64 and runs on any):
 *   3: as 2, with the CRC folded 256 bits at a time (VPCLMULQDQ: Intel Ice Lake, AMD Zen 3 on);
 *   2: AVX2 loops (16 values per step) and a PCLMULQDQ CRC, when the CPU has AVX2 and PCLMUL;
 *   1: SSE2 loops (baseline x86-64) and zlib's CRC;
 *   0: plain C (what other architectures get) and zlib's CRC.
 * `isa(level)` lowers the level so that tests can check every path against the others.
 */
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#ifndef _WIN32
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
/* DC_PORTABLE builds the plain C loops only (what non-x86 hosts get; used to check that they build). */
#if defined(__SSE2__) && !defined(DC_PORTABLE)
#define DC_SSE2 1
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(DC_PORTABLE)
#include <immintrin.h>
#define DC_DISPATCH 1
#define DC_AVX2 __attribute__((target("avx2")))
#define DC_INLINE_AVX2 static inline __attribute__((target("avx2"), always_inline))
#endif

/* Process-wide (every thread's copy of the addon shares them); set by the first load. */
static int isa_best = -1;
static int isa_level = 0;

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

/* One cell's checks and bounds, shared by the per-level loops over cells. */
typedef struct {
  const uint8_t *lo, *hi; /* the two planes of the chunk's gaps */
  const double *indptr;
  int64_t n, nnz_lo, ca, cb, shift;
  int32_t *out;
  size_t olen;
  uint64_t n_genes;
  /* End (chunk position) of the entries this call writes; a block may spill up to there. */
  int64_t range_end;
} gaps_args;

/* Scalar prefix sums of gaps [j, e) after g; ORs a zero gap into *zero. */
static inline uint64_t gaps_scalar(const gaps_args *a, int32_t *o, int64_t j, int64_t e, uint64_t g,
                                   uint32_t *zero) {
  for (; j < e; j++) {
    const uint32_t d = (uint32_t)a->lo[j] | ((uint32_t)a->hi[j] << 8);
    *zero |= (d == 0);
    g += d;
    o[j] = (int32_t)g;
  }
  return g;
}

#ifdef DC_SSE2
/* Prefix sums of the `cnt` (1..8) gaps at j after g, as one block of 8: the 8 reads and writes
   must stay inside the planes and this call's range (extra outputs belong to the next cell,
   which is written afterwards). Returns the last of the `cnt` sums. */
static inline uint32_t gaps_block8(const gaps_args *a, int32_t *o, int64_t j, int cnt, uint32_t g,
                                   uint32_t *zero) {
  const __m128i k = _mm_setzero_si128();
  __m128i d16 = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(a->lo + j)),
                                  _mm_loadl_epi64((const __m128i *)(a->hi + j))); /* 8 x uint16 */
  *zero |= (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(d16, k)) & ((1u << (2 * cnt)) - 1u);
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
  return (uint32_t)o[j + cnt - 1];
}
#endif

/* Cell c's extent [s, e) in the chunk; 0 if it does not fit the planes or the output. */
static inline int cell_extent(const gaps_args *a, int64_t c, int64_t *s, int64_t *e) {
  *s = (int64_t)a->indptr[c] - a->nnz_lo;
  *e = (int64_t)a->indptr[c + 1] - a->nnz_lo;
  return !(*s < 0 || *e < *s || *e > a->n || *s + a->shift < 0 || (uint64_t)(*e + a->shift) > a->olen);
}

/* Levels 0 and 1: plain C, or SSE2 prefix sums 8 gaps at a time. */
static int64_t gaps_cells_base(const gaps_args *a, int sse2) {
  int32_t *o = a->out + a->shift;
  for (int64_t c = a->ca; c < a->cb; c++) {
    int64_t s, e;
    if (!cell_extent(a, c, &s, &e)) return -2;
    if (s == e) continue;
    uint64_t g = (uint64_t)a->lo[s] | ((uint64_t)a->hi[s] << 8);
    o[s] = (int32_t)g;
    uint32_t zero = 0;
    int64_t j = s + 1;
#ifdef DC_SSE2
    if (sse2) {
      /* 8 gaps per step: widen to 2 x 4 uint32, prefix-sum within each vector, add the carry.
         Lanes are uint32 and g <= 65535 here: 65536 more gaps of at most 65535 cannot wrap them.
         Longer cells (more than 65536 genes expressed) finish in the scalar loop. */
      const int64_t simd_end = e - j <= 65536 ? e : j + 65536;
      if (simd_end - j >= 8) {
        __m128i carry = _mm_set1_epi32((int32_t)g);
        const __m128i k = _mm_setzero_si128();
        __m128i anyzero = _mm_setzero_si128();
        for (; j + 8 <= simd_end; j += 8) {
          __m128i l = _mm_loadl_epi64((const __m128i *)(a->lo + j));
          __m128i h = _mm_loadl_epi64((const __m128i *)(a->hi + j));
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
      const int64_t left = e - j;
      if (left > 0 && left < 8 && j + 8 <= a->range_end && g < (1u << 31)) {
        g = gaps_block8(a, o, j, (int)left, (uint32_t)g, &zero);
        j = e;
      }
    }
#endif
    g = gaps_scalar(a, o, j, e, g, &zero);
    if (zero || g >= a->n_genes) return c;
  }
  return -1;
}

#ifdef DC_DISPATCH
/* In-register inclusive prefix sum of 8 uint32 lanes. */
DC_INLINE_AVX2 __m256i scan8(__m256i x) {
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 4));
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 8));
  /* The upper 128-bit lane adds the lower lane's total: [0 | lo] then broadcast its element 3. */
  return _mm256_add_epi32(x, _mm256_shuffle_epi32(_mm256_permute2x128_si256(x, x, 0x08), 0xff));
}

/* Prefix sums of the 16 gaps at lo/hi after `carry` (broadcast), stored to o[0..16): returns the
   16 sums as x (first 8) and y, and in *zbits one bit per gap that is 0. */
DC_INLINE_AVX2 void block16(const uint8_t *lo, const uint8_t *hi, int32_t *o, __m256i carry, __m256i *x,
                            __m256i *y, uint32_t *zbits) {
  const __m256i last = _mm256_set1_epi32(7);
  const __m128i l = _mm_loadu_si128((const __m128i *)lo);
  const __m128i h = _mm_loadu_si128((const __m128i *)hi);
  /* A gap is 0 iff both its bytes are. */
  *zbits = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_or_si128(l, h), _mm_setzero_si128()));
  __m256i a, b;
  if (_mm_testz_si128(h, h)) {
    /* All 16 gaps below 256 (the common case: genes sorted by total): their sums fit uint16, so
       scan 16 lanes of 16 bits, then widen; fewer shuffles than two 8-lane scans. */
    __m256i v = _mm256_cvtepu8_epi16(l);
    v = _mm256_add_epi16(v, _mm256_slli_si256(v, 2));
    v = _mm256_add_epi16(v, _mm256_slli_si256(v, 4));
    v = _mm256_add_epi16(v, _mm256_slli_si256(v, 8));
    const __m256i word7 = _mm256_set1_epi16(0x0f0e);
    v = _mm256_add_epi16(v, _mm256_shuffle_epi8(_mm256_permute2x128_si256(v, v, 0x08), word7));
    a = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(v));
    b = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(v, 1));
  } else {
    a = scan8(_mm256_cvtepu16_epi32(_mm_unpacklo_epi8(l, h)));
    b = scan8(_mm256_cvtepu16_epi32(_mm_unpackhi_epi8(l, h)));
    /* a's total goes into b off the carry's dependency chain. */
    b = _mm256_add_epi32(b, _mm256_permutevar8x32_epi32(a, last));
  }
  a = _mm256_add_epi32(a, carry);
  b = _mm256_add_epi32(b, carry);
  _mm256_storeu_si256((__m256i *)o, a);
  _mm256_storeu_si256((__m256i *)(o + 8), b);
  *x = a;
  *y = b;
}

/*
 * Level 2: AVX2, 16 gaps per step, each cell from its first entry with a carry of 0 (its first
 * gap, the first gene, may be 0: it is left out of the zero check). A cell's last 1..15 gaps are
 * one more block of 16 when its 16 reads and writes stay inside this call's range (the extra
 * outputs belong to the next cell, which is written afterwards), its last sum taken from the
 * register. Lanes are uint32: up to 65537 gaps of at most 65535 sum to at most 2^32 - 1, so
 * cells of up to 65537 nonzeros cannot wrap; longer ones take the scalar 64-bit loop.
 */
static DC_AVX2 int64_t gaps_cells_avx2(const gaps_args *a) {
  int32_t *o = a->out + a->shift;
  const __m256i last = _mm256_set1_epi32(7);
  for (int64_t c = a->ca; c < a->cb; c++) {
    int64_t s, e;
    if (!cell_extent(a, c, &s, &e)) return -2;
    if (s == e) continue;
    uint32_t zero = 0;
    uint64_t g;
    if (e - s > 65537) {
      g = (uint64_t)a->lo[s] | ((uint64_t)a->hi[s] << 8);
      o[s] = (int32_t)g;
      g = gaps_scalar(a, o, s + 1, e, g, &zero);
    } else {
      int64_t j = s;
      uint32_t valid = 0xfffe; /* lane 0 of a cell's first block is its first gene */
      __m256i carry = _mm256_setzero_si256(), x, y;
      uint32_t zb;
      for (; j + 16 <= e; j += 16) {
        block16(a->lo + j, a->hi + j, o + j, carry, &x, &y, &zb);
        zero |= zb & valid;
        valid = 0xffff;
        carry = _mm256_permutevar8x32_epi32(y, last);
      }
      g = (uint32_t)_mm256_cvtsi256_si32(carry);
      const int64_t left = e - j;
      if (left > 0 && j + 16 <= a->range_end) {
        block16(a->lo + j, a->hi + j, o + j, carry, &x, &y, &zb);
        zero |= zb & valid & ((1u << left) - 1u);
        const __m256i lane = _mm256_set1_epi32((int32_t)((left - 1) & 7));
        g = (uint32_t)_mm256_cvtsi256_si32(_mm256_permutevar8x32_epi32(left > 8 ? y : x, lane));
      } else if (left > 0) {
        if (j == s) {
          g = (uint64_t)a->lo[s] | ((uint64_t)a->hi[s] << 8);
          o[s] = (int32_t)g;
          j++;
        }
        g = gaps_scalar(a, o, j, e, g, &zero);
      }
    }
    if (zero || g >= a->n_genes) return c;
  }
  return -1;
}
#endif

/* Cells [ca, cb) of a chunk at the instruction set in use: -1, or the first bad cell. */
static int64_t gaps_cells(const gaps_args *a) {
#ifdef DC_DISPATCH
  if (isa_level >= 2) return gaps_cells_avx2(a);
#endif
  return gaps_cells_base(a, isa_level >= 1);
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
  gaps_args g;
  g.n = (int64_t)n_, g.nnz_lo = (int64_t)lo_, g.ca = (int64_t)ca_, g.cb = (int64_t)cb_, g.shift = (int64_t)shift_;
  g.n_genes = (uint64_t)ng_;
  if (g.n < 0 || (uint64_t)(2 * g.n) > plen || g.ca < 0 || g.cb < g.ca || (uint64_t)g.cb >= ilen) return num(env, -2);
  g.lo = (const uint8_t *)pp, g.hi = g.lo + g.n;
  g.indptr = (const double *)ip;
  g.out = (int32_t *)op;
  g.olen = olen;
  g.range_end = g.cb > g.ca ? (int64_t)g.indptr[g.cb] - g.nnz_lo : 0;
  if (g.range_end > g.n || (uint64_t)(g.range_end + g.shift) > olen) return num(env, -2);
  return num(env, (double)gaps_cells(&g));
}

#ifdef DC_DISPATCH
/* Count planes to int32 or float32, 16 per step; returns non-zero if a count was 0. */
DC_INLINE_AVX2 uint32_t vals_avx2_(const uint8_t *lo, const uint8_t *hi, int64_t s, int64_t e, void *out,
                                   int flt) {
  int32_t *oi = (int32_t *)out;
  float *of = (float *)out;
  uint32_t zero = 0;
  int64_t j = s;
  __m128i zmin = _mm_set1_epi8(-1);
  for (; j + 16 <= e; j += 16) {
    const __m128i l = _mm_loadu_si128((const __m128i *)(lo + j));
    const __m128i h = _mm_loadu_si128((const __m128i *)(hi + j));
    /* A count is 0 iff both its bytes are: the running minimum of lo | hi finds one. */
    zmin = _mm_min_epu8(zmin, _mm_or_si128(l, h));
    __m256i x = _mm256_cvtepu16_epi32(_mm_unpacklo_epi8(l, h));
    __m256i y = _mm256_cvtepu16_epi32(_mm_unpackhi_epi8(l, h));
    if (flt) {
      x = _mm256_castps_si256(_mm256_cvtepi32_ps(x));
      y = _mm256_castps_si256(_mm256_cvtepi32_ps(y));
    }
    _mm256_storeu_si256((__m256i *)(oi + j), x);
    _mm256_storeu_si256((__m256i *)(oi + j + 8), y);
  }
  zero |= (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(zmin, _mm_setzero_si128()));
  for (; j < e; j++) {
    const uint32_t v = (uint32_t)lo[j] | ((uint32_t)hi[j] << 8);
    zero |= (v == 0);
    if (flt)
      of[j] = (float)v;
    else
      oi[j] = (int32_t)v;
  }
  return zero;
}

static DC_AVX2 uint32_t vals_avx2(const uint8_t *lo, const uint8_t *hi, int64_t s, int64_t e, void *out, int flt) {
  return flt ? vals_avx2_(lo, hi, s, e, out, 1) : vals_avx2_(lo, hi, s, e, out, 0);
}
#endif

/* Count planes in plain C; `flt` is a constant at each call, so each loop is compiled apart. */
static inline uint32_t vals_plain_(const uint8_t *lo, const uint8_t *hi, int64_t s, int64_t e, void *out,
                                   int flt) {
  uint32_t zero = 0;
  for (int64_t j = s; j < e; j++) {
    const uint32_t v = (uint32_t)lo[j] | ((uint32_t)hi[j] << 8);
    zero |= (v == 0);
    if (flt)
      ((float *)out)[j] = (float)v;
    else
      ((int32_t *)out)[j] = (int32_t)v;
  }
  return zero;
}

/* Count planes [s, e) to int32 or float32 at `out` (offset by the caller) at the instruction set
   in use; non-zero if a count was 0. */
static uint32_t vals_any(const uint8_t *lo, const uint8_t *hi, int64_t s, int64_t e, void *out, int flt) {
#ifdef DC_DISPATCH
  if (isa_level >= 2) return vals_avx2(lo, hi, s, e, out, flt);
#endif
  return flt ? vals_plain_(lo, hi, s, e, out, 1) : vals_plain_(lo, hi, s, e, out, 0);
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
  const uint32_t zero = vals_any(lo, hi, s, e, (int32_t *)op + shift, t2 == napi_float32_array);
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

#ifdef DC_DISPATCH
/*
 * CRC-32 by carry-less multiplication (the folding method of Intel's white paper "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ"): four 128-bit accumulators fold 64 bytes
 * per step, then one, then the last 16 bytes of remainder and the tail go through zlib. Each
 * constant is x^d mod P (bit-reflected, P = the CRC-32 polynomial) for the folding distance d:
 * 4 x 128 bits ahead (k1, k2) and 128 bits ahead (k3, k4). Node 20's zlib CRC is table-driven
 * (~7 GB/s here); this runs at ~3-4x that. Needs len >= 64.
 */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold128(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_clmul(uint32_t crc, const uint8_t *p, size_t len) {
  const __m128i k12 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
  const __m128i k34 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
  __m128i x0 = _mm_loadu_si128((const __m128i *)p);
  __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
  __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
  __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
  x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int32_t)~crc));
  p += 64;
  len -= 64;
  for (; len >= 64; p += 64, len -= 64) {
    x0 = fold128(x0, k12, _mm_loadu_si128((const __m128i *)p));
    x1 = fold128(x1, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
    x2 = fold128(x2, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
    x3 = fold128(x3, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
  }
  x1 = fold128(x0, k34, x1);
  x2 = fold128(x1, k34, x2);
  x3 = fold128(x2, k34, x3);
  for (; len >= 16; p += 16, len -= 16) x3 = fold128(x3, k34, _mm_loadu_si128((const __m128i *)p));
  /* x3 is congruent to everything so far (initial value included): its CRC from a zero register,
     continued over the tail, is the result. zlib's crc32 complements on entry and exit. */
  uint8_t rest[16];
  _mm_storeu_si128((__m128i *)rest, x3);
  const uint32_t c = (uint32_t)crc32_z(0xffffffffu, rest, 16);
  return (uint32_t)crc32_z(c, (const Bytef *)p, len);
}

#define DC_VPCLMUL __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))

DC_VPCLMUL static inline __m256i fold256(__m256i x, __m256i k, __m256i next) {
  return _mm256_xor_si256(
      _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00), _mm256_clmulepi64_epi128(x, k, 0x11)), next);
}

/* The same folding with 256-bit registers, each lane a 128-bit fold: four accumulators take 128
   bytes per step (twice the bytes per instruction of crc32_clmul), then fold into one register,
   its two lanes into one, and crc32_clmul's 16-byte loop and tail finish. The constants are
   x^(1024 +- 32) and x^(256 +- 32) mod P, bit-reflected like k1..k4. Needs len >= 128. */
DC_VPCLMUL static uint32_t crc32_vpclmul(uint32_t crc, const uint8_t *p, size_t len) {
  const __m256i k1024 = _mm256_set_epi64x(0x14a7fe880LL, 0x1e88ef372LL, 0x14a7fe880LL, 0x1e88ef372LL);
  const __m256i k256 = _mm256_set_epi64x(0x15a546366LL, 0x0f1da05aaLL, 0x15a546366LL, 0x0f1da05aaLL);
  const __m128i k34 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
  __m256i y0 = _mm256_loadu_si256((const __m256i *)p);
  __m256i y1 = _mm256_loadu_si256((const __m256i *)(p + 32));
  __m256i y2 = _mm256_loadu_si256((const __m256i *)(p + 64));
  __m256i y3 = _mm256_loadu_si256((const __m256i *)(p + 96));
  y0 = _mm256_xor_si256(y0, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int32_t)~crc)));
  p += 128;
  len -= 128;
  for (; len >= 128; p += 128, len -= 128) {
    y0 = fold256(y0, k1024, _mm256_loadu_si256((const __m256i *)p));
    y1 = fold256(y1, k1024, _mm256_loadu_si256((const __m256i *)(p + 32)));
    y2 = fold256(y2, k1024, _mm256_loadu_si256((const __m256i *)(p + 64)));
    y3 = fold256(y3, k1024, _mm256_loadu_si256((const __m256i *)(p + 96)));
  }
  y1 = fold256(y0, k256, y1);
  y2 = fold256(y1, k256, y2);
  y3 = fold256(y2, k256, y3);
  __m128i x = fold128(_mm256_castsi256_si128(y3), k34, _mm256_extracti128_si256(y3, 1));
  for (; len >= 16; p += 16, len -= 16) x = fold128(x, k34, _mm_loadu_si128((const __m128i *)p));
  uint8_t rest[16];
  _mm_storeu_si128((__m128i *)rest, x);
  const uint32_t c = (uint32_t)crc32_z(0xffffffffu, rest, 16);
  return (uint32_t)crc32_z(c, (const Bytef *)p, len);
}
#endif

static uint32_t crc32_any(uint32_t crc, const uint8_t *p, size_t len) {
  if (len == 0) return crc; /* (an empty typed array's data pointer may be NULL: zlib would return 0) */
#ifdef DC_DISPATCH
  if (isa_level >= 3 && len >= 256) return crc32_vpclmul(crc, p, len);
  if (isa_level >= 2 && len >= 256) return crc32_clmul(crc, p, len);
#endif
  return (uint32_t)crc32_z(crc, (const Bytef *)p, len);
}

/*
 * crc32(bytes: Uint8Array, crc) -> CRC-32 (zlib's) continued from crc: PCLMULQDQ folding where
 * the CPU has it, else the zlib that Node links.
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
  napi_create_uint32(env, crc32_any(start, (const uint8_t *)p, len), &r);
  return r;
}

/* Per thread (per N-API environment: the main thread and each worker): a decompression context
   and the scratch buffer one chunk's planes are decompressed into. */
typedef struct {
  ZSTD_DCtx *dctx;
  uint8_t *scratch;
  size_t cap;
} thread_state;

static void free_state(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  thread_state *st = (thread_state *)data;
  ZSTD_freeDCtx(st->dctx);
  free(st->scratch);
  free(st);
}

static thread_state *state_of(napi_env env) {
  thread_state *st = NULL;
  if (napi_get_instance_data(env, (void **)&st) == napi_ok && st != NULL) return st;
  st = (thread_state *)calloc(1, sizeof *st);
  if (st == NULL) return NULL;
  st->dctx = ZSTD_createDCtx();
  if (st->dctx == NULL || napi_set_instance_data(env, st, free_state, NULL) != napi_ok) {
    ZSTD_freeDCtx(st->dctx);
    free(st);
    return NULL;
  }
  return st;
}

/* Decompresses the single frame src[0, len) into exactly `size` bytes of the scratch buffer; NULL
   if it declares another size, is not exactly one frame, or does not decode to `size` bytes. */
static const uint8_t *planes_of(thread_state *st, const uint8_t *src, size_t len, size_t size) {
  if (ZSTD_getFrameContentSize(src, len) != (unsigned long long)size) return NULL;
  if (ZSTD_findFrameCompressedSize(src, len) != len) return NULL;
  if (st->cap < size || st->scratch == NULL) { /* (allocated even for an empty chunk: NULL means failure) */
    const size_t cap = size + size / 2 + 64;
    uint8_t *grown = (uint8_t *)realloc(st->scratch, cap);
    if (grown == NULL) return NULL;
    st->scratch = grown;
    st->cap = cap;
  }
  const size_t got = ZSTD_decompressDCtx(st->dctx, st->scratch, st->cap, src, len);
  return !ZSTD_isError(got) && got == size ? st->scratch : NULL;
}

/* indices[i] = map[indices[i]] for i in [s, e); non-zero if an index was outside the map (then
   the entry is left as it was). Written so that the compiler can vectorise it (AVX2 gathers). */
static inline uint32_t renumber_plain_(int32_t *ix, int64_t s, int64_t e, const int32_t *map, uint32_t mlen) {
  uint32_t bad = 0;
  for (int64_t i = s; i < e; i++) {
    const uint32_t v = (uint32_t)ix[i];
    const uint32_t ok = v < mlen;
    bad |= !ok;
    ix[i] = ok ? map[ok ? v : 0] : ix[i];
  }
  return bad;
}

#ifdef DC_DISPATCH
static DC_AVX2 uint32_t renumber_avx2(int32_t *ix, int64_t s, int64_t e, const int32_t *map, uint32_t mlen) {
  return renumber_plain_(ix, s, e, map, mlen);
}
#endif

/* renumber at the instruction set in use. */
static uint32_t renumber_any(int32_t *ix, int64_t s, int64_t e, const int32_t *map, uint32_t mlen) {
#ifdef DC_DISPATCH
  if (isa_level >= 2) return renumber_avx2(ix, s, e, map, mlen);
#endif
  return renumber_plain_(ix, s, e, map, mlen);
}

/* d[i] = map[src[i]] for i in [0, n); non-zero if an index was outside the map (its entry then
   gets another entry of the map). The renumbering and the copy of a row in one pass (see
   copyMapped). */
static inline uint32_t copy_mapped_plain_(int32_t *restrict d, const int32_t *restrict src, int64_t n,
                                          const int32_t *map, uint32_t mlen) {
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const uint32_t v = (uint32_t)src[i];
    const uint32_t ok = v < mlen;
    bad |= !ok;
    d[i] = map[ok ? v : 0];
  }
  return bad;
}

#ifdef DC_DISPATCH
/* 8 at a time with a gather (gcc leaves the loop above scalar): each index clamped to the map's
   last entry, a clamped one flagged. Its 32-byte stores matter as much as the gather: the rows go
   to batch buffers far larger than the caches, and the scalar loop's 4-byte stores filled the
   store queue waiting on memory (1.1-1.2 against 0.63-0.75 ns per nonzero in a C test of rows of
   1,600 into 6 batch-sized buffers; memcpy 0.53). */
static DC_AVX2 uint32_t copy_mapped_avx2(int32_t *restrict d, const int32_t *restrict src, int64_t n,
                                         const int32_t *map, uint32_t mlen) {
  const __m256i last = _mm256_set1_epi32((int32_t)(mlen - 1));
  __m256i off = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)(src + i));
    const __m256i c = _mm256_min_epu32(v, last);
    off = _mm256_or_si256(off, _mm256_xor_si256(c, v));
    _mm256_storeu_si256((__m256i *)(d + i), _mm256_i32gather_epi32(map, c, 4));
  }
  const uint32_t bad = !_mm256_testz_si256(off, off);
  return bad | copy_mapped_plain_(d + i, src + i, n - i, map, mlen);
}
#endif

static uint32_t copy_mapped_any(int32_t *d, const int32_t *src, int64_t n, const int32_t *map, uint32_t mlen) {
#ifdef DC_DISPATCH
  if (isa_level >= 2) return copy_mapped_avx2(d, src, n, map, mlen);
#endif
  return copy_mapped_plain_(d, src, n, map, mlen);
}

/* Fields of one chunk in the plan `chunks` reads (Float64Array, PLAN_FIELDS per chunk). */
enum { P_GAPS_OFF, P_GAPS_LEN, P_VALS_OFF, P_VALS_LEN, P_NNZ_LO, P_N, P_CA, P_CB, P_SHIFT, PLAN_FIELDS };

/*
 * chunks(bytes: Uint8Array, plan: Float64Array, k0, k1, indptr: Float64Array, indices: Int32Array,
 *        data: Int32Array | Float32Array, nGenes) -> -1 when chunks [k0, k1) of the plan are all
 * decoded, else the first chunk it did not decode (its streams failed a check, or it has
 * exceptions: plan n = -1), which the caller decodes (or refuses, naming the fault) itself; chunks
 * with plan n = -2 are skipped (they hold no cell of the requested range).
 * One call decodes a tile's chunks without a round trip to JavaScript per stream: the zstd frames
 * go through this addon's own zstd (the library zstd-napi is built from) into a per-thread
 * scratch buffer, then through the same loops as `gaps` and `vals`.
 */
static napi_value chunks_impl(napi_env env, napi_callback_info info, int renumbered) {
  size_t argc = 9;
  napi_value a[9];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < (renumbered ? 9u : 8u)) return throw_bad(env);
  napi_typedarray_type tb, tp, ti, tx, td;
  size_t blen, plen, ilen, xlen, dlen;
  void *bp, *pp, *ip, *xp, *dp;
  if (!get_array(env, a[0], &tb, &blen, &bp) || tb != napi_uint8_array) return throw_bad(env);
  if (!get_array(env, a[1], &tp, &plen, &pp) || tp != napi_float64_array) return throw_bad(env);
  if (!get_array(env, a[4], &ti, &ilen, &ip) || ti != napi_float64_array) return throw_bad(env);
  if (!get_array(env, a[5], &tx, &xlen, &xp) || tx != napi_int32_array) return throw_bad(env);
  if (!get_array(env, a[6], &td, &dlen, &dp) || (td != napi_int32_array && td != napi_float32_array)) {
    return throw_bad(env);
  }
  int32_t k0, k1;
  double ng_;
  CHECK(napi_get_value_int32(env, a[2], &k0));
  CHECK(napi_get_value_int32(env, a[3], &k1));
  CHECK(napi_get_value_double(env, a[7], &ng_));
  if (k0 < 0 || k1 < k0 || (size_t)k1 * PLAN_FIELDS > plen || xlen != dlen || !(ng_ >= 0 && ng_ <= 4294967296.0))
    return throw_bad(env);
  /* The column map (chunksRenumbered): one entry per gene. */
  const int32_t *map = NULL;
  if (renumbered) {
    napi_typedarray_type tm;
    size_t mlen;
    void *mp;
    if (!get_array(env, a[8], &tm, &mlen, &mp) || tm != napi_int32_array || (double)mlen != ng_)
      return throw_bad(env);
    map = (const int32_t *)mp;
  }
  thread_state *st = state_of(env);
  if (st == NULL) return num(env, k0);
  const uint8_t *bytes = (const uint8_t *)bp;
  const double *plan = (const double *)pp;
  const int flt = td == napi_float32_array;
  for (int32_t k = k0; k < k1; k++) {
    const double *p = plan + (size_t)k * PLAN_FIELDS;
    const double go = p[P_GAPS_OFF], gl = p[P_GAPS_LEN], vo = p[P_VALS_OFF], vl = p[P_VALS_LEN];
    if (p[P_N] == -2) continue; /* no cell of the requested range */
    /* Every field a safe integer before any cast (a NaN or huge double cast to int64 is undefined). */
    for (int f = 0; f < PLAN_FIELDS; f++)
      if (!(p[f] >= -9007199254740992.0 && p[f] <= 9007199254740992.0)) return num(env, k);
    /* Exceptions (n = -1 in the plan) and anything out of bounds go back to the caller. */
    if (!(p[P_N] >= 0 && p[P_N] < 2147483648.0 && go >= 0 && gl >= 0 && vo >= 0 && vl >= 0 &&
          go + gl <= (double)blen && vo + vl <= (double)blen))
      return num(env, k);
    gaps_args g;
    g.n = (int64_t)p[P_N], g.nnz_lo = (int64_t)p[P_NNZ_LO], g.ca = (int64_t)p[P_CA], g.cb = (int64_t)p[P_CB];
    g.shift = (int64_t)p[P_SHIFT], g.n_genes = (uint64_t)ng_;
    if (g.ca < 0 || g.cb < g.ca || (uint64_t)g.cb >= ilen) return num(env, k);
    g.indptr = (const double *)ip;
    g.out = (int32_t *)xp;
    g.olen = xlen;
    g.range_end = g.cb > g.ca ? (int64_t)g.indptr[g.cb] - g.nnz_lo : 0;
    const int64_t s = g.cb > g.ca ? (int64_t)g.indptr[g.ca] - g.nnz_lo : 0;
    if (g.range_end > g.n || s < 0 || s > g.range_end || s + g.shift < 0 ||
        (uint64_t)(g.range_end + g.shift) > xlen)
      return num(env, k);
    const size_t size = 2 * (size_t)g.n;
    const uint8_t *gp = planes_of(st, bytes + (size_t)go, (size_t)gl, size);
    if (gp == NULL) return num(env, k);
    if (g.cb > g.ca) {
      g.lo = gp, g.hi = gp + g.n;
      if (gaps_cells(&g) != -1) return num(env, k);
      /* Renumbered now, while the chunk's indices are still in cache (all < nGenes = the map's length). */
      if (map != NULL && renumber_any(g.out, s + g.shift, g.range_end + g.shift, map, (uint32_t)ng_))
        return num(env, k);
    }
    const uint8_t *vp = planes_of(st, bytes + (size_t)vo, (size_t)vl, size);
    if (vp == NULL) return num(env, k);
    if (g.cb > g.ca) {
      if (vals_any(vp, vp + g.n, s, g.range_end, (int32_t *)dp + g.shift, flt)) return num(env, k);
    }
  }
  return num(env, -1);
}

static napi_value chunks_js(napi_env env, napi_callback_info info) { return chunks_impl(env, info, 0); }

/*
 * chunksRenumbered(bytes, plan, k0, k1, indptr, indices, data, nGenes, map: Int32Array) -> as
 * `chunks`, each decoded chunk's indices then replaced by map[index] (`map` has nGenes entries)
 * right after its gaps are summed. A chunk returned to the caller is not renumbered.
 */
static napi_value chunks_renumbered_js(napi_env env, napi_callback_info info) {
  return chunks_impl(env, info, 1);
}

/*
 * decompress(src: Uint8Array, dst: Uint8Array) -> bytes written, or -1 if src is not a zstd
 * frame that fits dst: this addon's zstd alone, for benchmarks to compare `chunks` against the
 * very zstd it runs (besides zstd-napi's build of the same library).
 */
static napi_value decompress_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value a[2];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 2) return throw_bad(env);
  napi_typedarray_type ts, td;
  size_t slen, dlen;
  void *sp, *dp;
  if (!get_array(env, a[0], &ts, &slen, &sp) || ts != napi_uint8_array) return throw_bad(env);
  if (!get_array(env, a[1], &td, &dlen, &dp) || td != napi_uint8_array) return throw_bad(env);
  thread_state *st = state_of(env);
  if (st == NULL) return num(env, -1);
  const size_t got = ZSTD_decompressDCtx(st->dctx, dp, dlen, sp, slen);
  return num(env, ZSTD_isError(got) ? -1 : (double)got);
}

/*
 * renumber(indices: Int32Array, s, e, map: Int32Array) -> true when every index of [s, e) was
 * inside the map and was replaced by map[index]; false if one was not (left unchanged).
 */
static napi_value renumber_js(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value a[4];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 4) return throw_bad(env);
  napi_typedarray_type t1, t2;
  size_t ilen, mlen;
  void *ip, *mp;
  if (!get_array(env, a[0], &t1, &ilen, &ip) || t1 != napi_int32_array) return throw_bad(env);
  if (!get_array(env, a[3], &t2, &mlen, &mp) || t2 != napi_int32_array || mlen > 0x7fffffff) return throw_bad(env);
  double s_, e_;
  CHECK(napi_get_value_double(env, a[1], &s_));
  CHECK(napi_get_value_double(env, a[2], &e_));
  const int64_t s = (int64_t)s_, e = (int64_t)e_;
  if (s < 0 || e < s || (uint64_t)e > ilen) return throw_bad(env);
  const uint32_t bad = renumber_any((int32_t *)ip, s, e, (const int32_t *)mp, (uint32_t)mlen);
  napi_value r;
  napi_get_boolean(env, bad == 0, &r);
  return r;
}

/*
 * copy(dst, at, src, s, e): dst[at + j - s] = src[j] for j in [s, e), both Int32Array, both
 * Float32Array or both Uint8Array (any memory, shared included). A plain memcpy: V8's
 * TypedArray.set copies word by word with relaxed atomics as soon as either side is a
 * SharedArrayBuffer, 1.7-3x slower here, and the loader's rows, the pool's tile bytes and its
 * lent outputs all go into or come out of shared memory. Returns false on bad arguments.
 */
static napi_value copy_js(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value a[5];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 5) return throw_bad(env);
  napi_typedarray_type t1, t2;
  size_t dlen, slen;
  void *dp, *sp;
  if (!get_array(env, a[0], &t1, &dlen, &dp) || !get_array(env, a[2], &t2, &slen, &sp)) return throw_bad(env);
  if (t1 != t2 || (t1 != napi_int32_array && t1 != napi_float32_array && t1 != napi_uint8_array))
    return throw_bad(env);
  const size_t width = t1 == napi_uint8_array ? 1 : 4;
  double at_, s_, e_;
  CHECK(napi_get_value_double(env, a[1], &at_));
  CHECK(napi_get_value_double(env, a[3], &s_));
  CHECK(napi_get_value_double(env, a[4], &e_));
  if (!(at_ >= 0 && s_ >= 0 && e_ >= s_ && e_ <= (double)slen && at_ + (e_ - s_) <= (double)dlen)) {
    napi_value r;
    napi_get_boolean(env, 0, &r);
    return r;
  }
  const size_t at = (size_t)at_, s = (size_t)s_, n = (size_t)e_ - s;
  if (n > 0) memmove((uint8_t *)dp + at * width, (const uint8_t *)sp + s * width, n * width);
  napi_value r;
  napi_get_boolean(env, 1, &r);
  return r;
}

/*
 * copyMapped(dst: Int32Array, at, src: Int32Array, s, e, map: Int32Array) -> true when
 * dst[at + j - s] = map[src[j]] for every j in [s, e); false on out-of-range or overlapping
 * arguments, or when an index is outside the map (dst's range then holds garbage: the caller
 * fails). The scatter path's row copy and its renumbering in one pass over the row, instead of a
 * renumbering pass over the decoded chunk followed by `copy`.
 */
static napi_value copy_mapped_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value a[6];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 6) return throw_bad(env);
  napi_typedarray_type t1, t2, t3;
  size_t dlen, slen, mlen;
  void *dp, *sp, *mp;
  if (!get_array(env, a[0], &t1, &dlen, &dp) || !get_array(env, a[2], &t2, &slen, &sp) ||
      !get_array(env, a[5], &t3, &mlen, &mp))
    return throw_bad(env);
  if (t1 != napi_int32_array || t2 != napi_int32_array || t3 != napi_int32_array || mlen > 0x7fffffff)
    return throw_bad(env);
  double at_, s_, e_;
  CHECK(napi_get_value_double(env, a[1], &at_));
  CHECK(napi_get_value_double(env, a[3], &s_));
  CHECK(napi_get_value_double(env, a[4], &e_));
  napi_value r;
  if (!(at_ >= 0 && s_ >= 0 && e_ >= s_ && e_ <= (double)slen && at_ + (e_ - s_) <= (double)dlen)) {
    napi_get_boolean(env, 0, &r);
    return r;
  }
  const size_t at = (size_t)at_, s = (size_t)s_, n = (size_t)e_ - s;
  int32_t *d = (int32_t *)dp + at;
  const int32_t *src = (const int32_t *)sp + s;
  /* The loop reads and writes in one pass: the two ranges must not overlap. */
  const int overlap = n > 0 && (uintptr_t)d < (uintptr_t)(src + n) && (uintptr_t)src < (uintptr_t)(d + n);
  /* (An empty map holds no index: the loop's map[0] for a bad index must exist.) */
  const int ok = !overlap && (n == 0 || (mlen > 0 && copy_mapped_any(d, src, (int64_t)n, (const int32_t *)mp, (uint32_t)mlen) == 0));
  napi_get_boolean(env, ok, &r);
  return r;
}

/*
 * scatterRows(indices: Int32Array, data: Int32Array | Float32Array, indptr: Float64Array, nnzLo,
 *             slots: Float64Array, q, cellLo, cellHi, targetIndices: Int32Array[],
 *             targetData: (Int32Array | Float32Array)[], map?: Int32Array) -> the first slot not
 * written. One decoded chunk's rows copied to their slots (`(row, target, offset)` triples from
 * slot q on, rows non-decreasing; row r's nonzeros are [indptr[r] - nnzLo, indptr[r + 1] - nnzLo)
 * of indices and data), the indices renumbered through map when given: what scatterTileSync's loop
 * did with two calls (`copyMapped` or `copy`, and `copy`) per row, in one call per chunk. It stops
 * at the first slot whose row is at or past cellHi, and at the first slot it does not write because
 * anything about it is off (a row before cellLo or outside indptr, a target that is not there or
 * of another type, a range past an array's end, an index outside the map, overlapping memory):
 * the caller's own loop goes on from there, with its checks and errors, so nothing about a bad
 * slot differs from the loop's.
 */
static napi_value scatter_rows_js(napi_env env, napi_callback_info info) {
  size_t argc = 11;
  napi_value a[11];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 10) return throw_bad(env);
  napi_typedarray_type ti, td, tp, ts, tm = napi_int32_array;
  size_t ilen, dlen, plen, slen, mlen = 0;
  void *ip, *dp, *pp, *sp, *mp = NULL;
  if (!get_array(env, a[0], &ti, &ilen, &ip) || !get_array(env, a[1], &td, &dlen, &dp) ||
      !get_array(env, a[2], &tp, &plen, &pp) || !get_array(env, a[4], &ts, &slen, &sp))
    return throw_bad(env);
  if (ti != napi_int32_array || (td != napi_int32_array && td != napi_float32_array) ||
      tp != napi_float64_array || ts != napi_float64_array)
    return throw_bad(env);
  if (argc > 10) {
    napi_valuetype mt;
    CHECK(napi_typeof(env, a[10], &mt));
    if (mt != napi_undefined) {
      if (!get_array(env, a[10], &tm, &mlen, &mp) || tm != napi_int32_array || mlen == 0 || mlen > 0x7fffffff)
        return throw_bad(env);
    }
  }
  double lo_, q_, c0_, c1_;
  CHECK(napi_get_value_double(env, a[3], &lo_));
  CHECK(napi_get_value_double(env, a[5], &q_));
  CHECK(napi_get_value_double(env, a[6], &c0_));
  CHECK(napi_get_value_double(env, a[7], &c1_));
  enum { MAX_TARGETS = 64 };
  uint32_t nt, nt2;
  CHECK(napi_get_array_length(env, a[8], &nt));
  CHECK(napi_get_array_length(env, a[9], &nt2));
  const size_t nSlots = slen / 3;
  if (!(q_ >= 0 && q_ <= (double)nSlots) || nt != nt2 || nt > MAX_TARGETS) return num(env, q_ >= 0 ? q_ : 0);
  int32_t *tix[MAX_TARGETS];
  void *tdx[MAX_TARGETS];
  size_t tilen[MAX_TARGETS], tdlen[MAX_TARGETS];
  for (uint32_t t = 0; t < nt; t++) {
    napi_value vi, vd;
    napi_typedarray_type a1, a2;
    CHECK(napi_get_element(env, a[8], t, &vi));
    CHECK(napi_get_element(env, a[9], t, &vd));
    void *pi, *pd;
    /* A target of another kind: the caller's loop handles every slot. */
    if (!get_array(env, vi, &a1, &tilen[t], &pi) || !get_array(env, vd, &a2, &tdlen[t], &pd) ||
        a1 != napi_int32_array || a2 != td)
      return num(env, q_);
    tix[t] = (int32_t *)pi;
    tdx[t] = pd;
  }
  const double *slots = (const double *)sp, *indptr = (const double *)pp;
  const int32_t *src = (const int32_t *)ip;
  const uint8_t *srcd = (const uint8_t *)dp;
  size_t q = (size_t)q_;
  for (; q < nSlots; q++) {
    const double row = slots[3 * q], tg = slots[3 * q + 1], at_ = slots[3 * q + 2];
    if (!(row < c1_)) break;
    if (!(row >= c0_ && row + 1 < (double)plen && tg >= 0 && tg < (double)nt && tg == (double)(uint32_t)tg))
      break;
    const size_t r = (size_t)row, t = (size_t)tg;
    if (row != (double)r) break;
    const double s_ = indptr[r] - lo_, e_ = indptr[r + 1] - lo_;
    if (!(s_ >= 0 && e_ >= s_ && e_ <= (double)ilen && e_ <= (double)dlen && at_ >= 0 &&
          at_ == (double)(size_t)at_ && at_ + (e_ - s_) <= (double)tilen[t] && at_ + (e_ - s_) <= (double)tdlen[t]))
      break;
    const size_t s = (size_t)s_, n = (size_t)e_ - s, at = (size_t)at_;
    if (n == 0) continue;
    int32_t *d = tix[t] + at;
    const int32_t *from = src + s;
    if (mp != NULL) {
      const int overlap = (uintptr_t)d < (uintptr_t)(from + n) && (uintptr_t)from < (uintptr_t)(d + n);
      if (overlap || copy_mapped_any(d, from, (int64_t)n, (const int32_t *)mp, (uint32_t)mlen) != 0) break;
    } else
      memmove(d, from, n * 4);
    memmove((uint8_t *)tdx[t] + at * 4, srcd + s * 4, n * 4);
  }
  return num(env, (double)q);
}

/*
 * Shared batch memory: a file (a Linux memfd, or a file on tmpfs) that another process maps too,
 * so that the decoders' rows reach it without a copy. Node has no mmap of its own, and a
 * SharedArrayBuffer cannot wrap foreign memory through Node-API: each thread maps the file
 * itself (`mapFile`), every mapping of the same file showing the same pages.
 */
#ifndef _WIN32
static napi_value throw_errno(napi_env env, const char *what, int err) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", what, strerror(err));
  napi_throw_error(env, err == ENOSPC ? "ENOSPC" : NULL, message);
  return NULL;
}

/*
 * One mapping of a file range per process, shared by every thread's ArrayBuffer over it: a
 * mapping per thread would fault every page in again in each (the pool's workers write every
 * slot), twice the page faults of the loader's own shared memory. Unmapped when the last
 * ArrayBuffer over it is collected (each thread's, its worker ending included).
 */
typedef struct mapping {
  dev_t dev;
  ino_t ino;
  double offset, length;
  void *addr;
  int refs;
  struct mapping *next;
} mapping;

static mapping *mappings = NULL;
static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;

static void mapping_release(napi_env env, void *data, void *hint) {
  (void)env;
  (void)data;
  mapping *m = (mapping *)hint;
  pthread_mutex_lock(&mappings_lock);
  if (--m->refs == 0) {
    for (mapping **at = &mappings; *at != NULL; at = &(*at)->next)
      if (*at == m) {
        *at = m->next;
        break;
      }
    munmap(m->addr, (size_t)m->length);
    free(m);
  }
  pthread_mutex_unlock(&mappings_lock);
}
#endif

#ifdef _WIN32
static napi_value not_on_windows(napi_env env) {
  napi_throw_error(env, NULL, "shared batch memory is not available on Windows");
  return NULL;
}
#endif

/* An argument that must be an integer in [0, 2^53): -1 otherwise. */
static double whole(napi_env env, napi_value v) {
  double x;
  if (napi_get_value_double(env, v, &x) != napi_ok) return -1;
  return x >= 0 && x < 9007199254740992.0 && x == (double)(int64_t)x ? x : -1;
}

/* reserveFile(fd, bytes): the file at least `bytes` long (see allocateMapped). Throws with the reason. */
static napi_value reserve_file_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value a[2];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 2) return throw_bad(env);
  int32_t fd;
  CHECK(napi_get_value_int32(env, a[0], &fd));
  const double bytes = whole(env, a[1]);
  if (fd < 0 || bytes < 0) return throw_bad(env);
#ifdef _WIN32
  return not_on_windows(env);
#else
  struct stat st;
  if (fstat(fd, &st) != 0) return throw_errno(env, "fstat", errno);
  if ((double)st.st_size < bytes && ftruncate(fd, (off_t)bytes) != 0) return throw_errno(env, "ftruncate", errno);
  napi_value r;
  napi_get_undefined(env, &r);
  return r;
#endif
}

/*
 * mapFile(fd, offset, length) -> an ArrayBuffer over bytes [offset, offset + length) of the file
 * (MAP_SHARED, read and write): the process's one mapping of that range (see `mappings`), unmapped
 * when the last ArrayBuffer over it is collected. `offset` is a multiple of the page size; the
 * file must already hold those bytes (see reserveFile). Throws an Error with the reason.
 */
static napi_value map_file_js(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value a[3];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 3) return throw_bad(env);
  int32_t fd;
  CHECK(napi_get_value_int32(env, a[0], &fd));
  const double offset = whole(env, a[1]), length = whole(env, a[2]);
  if (fd < 0 || offset < 0 || !(length > 0)) return throw_bad(env);
#ifdef _WIN32
  return not_on_windows(env);
#else
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || (int64_t)offset % page != 0) return throw_bad(env);
  struct stat st;
  if (fstat(fd, &st) != 0) return throw_errno(env, "fstat", errno);
  if ((double)st.st_size < offset + length) {
    char message[160];
    snprintf(message, sizeof message, "the file of descriptor %d holds %.0f bytes, not the %.0f mapped", fd,
             (double)st.st_size, offset + length);
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  pthread_mutex_lock(&mappings_lock);
  mapping *m = mappings;
  while (m != NULL && !(m->dev == st.st_dev && m->ino == st.st_ino && m->offset == offset && m->length == length))
    m = m->next;
  if (m == NULL) {
    void *p = mmap(NULL, (size_t)length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
    if (p == MAP_FAILED) {
      const int err = errno;
      pthread_mutex_unlock(&mappings_lock);
      return throw_errno(env, "mmap", err);
    }
    m = (mapping *)calloc(1, sizeof *m);
    if (m == NULL) {
      munmap(p, (size_t)length);
      pthread_mutex_unlock(&mappings_lock);
      return throw_errno(env, "malloc", ENOMEM);
    }
    *m = (mapping){st.st_dev, st.st_ino, offset, length, p, 0, mappings};
    mappings = m;
  }
  m->refs++;
  pthread_mutex_unlock(&mappings_lock);
  napi_value ab;
  if (napi_create_external_arraybuffer(env, m->addr, (size_t)length, mapping_release, m, &ab) != napi_ok) {
    mapping_release(env, NULL, m);
    napi_throw_error(env, NULL, "this Node cannot wrap mapped memory in an ArrayBuffer");
    return NULL;
  }
  return ab;
#endif
}

/*
 * allocateMapped(fd, buffer, offset, length): the pages of bytes [offset, offset + length) of
 * `buffer` (an ArrayBuffer of mapFile(fd, 0, ...)) allocated and mapped writable now, in one pass
 * (MADV_POPULATE_WRITE, Linux 5.14+; older kernels allocate the file's blocks with fallocate and
 * fault each page on its first write), instead of a fault per page when a decoder first writes
 * it, and so that running out of room is this call's error (code ENOSPC), not a SIGBUS later.
 * Elsewhere nothing is done. `offset` is a multiple of the page size.
 */
static napi_value allocate_mapped_js(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value a[4];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc < 4) return throw_bad(env);
  int32_t fd;
  CHECK(napi_get_value_int32(env, a[0], &fd));
  bool is;
  void *base;
  size_t size;
  if (napi_is_arraybuffer(env, a[1], &is) != napi_ok || !is) return throw_bad(env);
  CHECK(napi_get_arraybuffer_info(env, a[1], &base, &size));
  const double offset = whole(env, a[2]), length = whole(env, a[3]);
  if (fd < 0 || offset < 0 || length < 0 || offset + length > (double)size) return throw_bad(env);
  napi_value r;
  napi_get_undefined(env, &r);
#if defined(__linux__)
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || (int64_t)offset % page != 0) return throw_bad(env);
  if (length == 0) return r;
  int err = madvise((uint8_t *)base + (size_t)offset, (size_t)length, 23 /* MADV_POPULATE_WRITE */) == 0 ? 0 : errno;
  if (err == EINVAL) err = posix_fallocate(fd, (off_t)offset, (off_t)length);
  if (err == EINVAL || err == EOPNOTSUPP) err = 0; /* neither here: the pages come on first touch */
  if (err != 0) return throw_errno(env, "allocating the mapped memory", err == EFAULT || err == ENOMEM ? ENOSPC : err);
#endif
  return r;
}

/* isa(level?) -> the level in use, after lowering it to `level` (tests); never above the CPU's. */
static napi_value isa_js(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value a[1];
  CHECK(napi_get_cb_info(env, info, &argc, a, NULL, NULL));
  if (argc >= 1) {
    napi_valuetype t;
    CHECK(napi_typeof(env, a[0], &t));
    if (t == napi_number) {
      int32_t want;
      CHECK(napi_get_value_int32(env, a[0], &want));
      isa_level = want < 0 ? 0 : want > isa_best ? isa_best : want;
    }
  }
  return num(env, isa_level);
}

NAPI_MODULE_INIT() {
  if (isa_best < 0) {
    int best = 0;
#ifdef DC_SSE2
    best = 1;
#endif
#ifdef DC_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"))
      best = 2;
    if (best == 2 && __builtin_cpu_supports("vpclmulqdq")) best = 3;
#endif
    isa_level = best;
    isa_best = best;
  }
  /* The interface version: NATIVE_KERNEL_VERSION in src/codec/native/addon.ts. Raise both together
   * when a function's arguments or results change, so that a stale build is refused, not called. */
  napi_value version = num(env, 4);
  napi_property_descriptor props[] = {
      {"version", NULL, NULL, NULL, NULL, version, napi_enumerable, NULL},
      {"gaps", NULL, gaps, NULL, NULL, NULL, napi_default, NULL},
      {"vals", NULL, vals, NULL, NULL, NULL, napi_default, NULL},
      {"crc32", NULL, crc32_js, NULL, NULL, NULL, napi_default, NULL},
      {"indptr", NULL, indptr_js, NULL, NULL, NULL, napi_default, NULL},
      {"isa", NULL, isa_js, NULL, NULL, NULL, napi_default, NULL},
      {"chunks", NULL, chunks_js, NULL, NULL, NULL, napi_default, NULL},
      {"decompress", NULL, decompress_js, NULL, NULL, NULL, napi_default, NULL},
      {"renumber", NULL, renumber_js, NULL, NULL, NULL, napi_default, NULL},
      {"chunksRenumbered", NULL, chunks_renumbered_js, NULL, NULL, NULL, napi_default, NULL},
      {"copy", NULL, copy_js, NULL, NULL, NULL, napi_default, NULL},
      {"copyMapped", NULL, copy_mapped_js, NULL, NULL, NULL, napi_default, NULL},
      {"scatterRows", NULL, scatter_rows_js, NULL, NULL, NULL, napi_default, NULL},
      {"reserveFile", NULL, reserve_file_js, NULL, NULL, NULL, napi_default, NULL},
      {"mapFile", NULL, map_file_js, NULL, NULL, NULL, napi_default, NULL},
      {"allocateMapped", NULL, allocate_mapped_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
