/* Compiled passes over a run's bytes, for `score --qrels` (built at install when a C compiler is
 * there; rcp_data.runs.run_scan falls back to NumPy otherwise, with the same results).
 *
 * scan_trec_run: each line of a canonical TREC run (six non-empty fields separated by runs of
 *   the whitespace str.split() splits on, a newline at the end, no other byte <= 0x20): the span of its document id, its rank
 *   checked (an optional minus, ASCII digits) and its score parsed exactly as float() parses
 *   it: by the exact fast path where it applies (at most 19 significant digits, the mantissa m
 *   at most 2**53, the decimal exponent p with |p| <= 22: m * 10**p or m / 10**-p is then one
 *   correctly rounded IEEE operation on two exact doubles), else by PyOS_string_to_double,
 *   float()'s own parser (a token it refuses, such as 1_0, makes the file not canonical: the
 *   line reader then reads it). The run is checked in the same pass (check_run's checks).
 * check_run: the blocks of rows with one query id (each block's first row and query span),
 *   the first non-finite score, the first row ranking a document its query ranked before, and
 *   whether the run is ranked (each query one block, scores not increasing in it). Ids are
 *   compared byte for byte; hashes only find the candidates.
 *
 * Both release the GIL while they work, so two threads read two runs at once. Their working
 * memory is a few tables the size of the longest block: no array per row but their outputs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#define EXACT_DOUBLES 0 /* extended precision: every score goes to float() */
#else
#define EXACT_DOUBLES 1
#endif

enum { OK = 0, NOT_CANONICAL = 1 };

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define HAVE_SSE2 1
#else
#define HAVE_SSE2 0
#endif

/* Bit i of the result: chunk[i] <= 0x20 (space, newline, control byte), for i < n <= 64;
 * *high gets a bit for each byte above 0x7f. */
static inline uint64_t separators(const unsigned char *chunk, Py_ssize_t n, uint64_t *high) {
    uint64_t seps = 0, hi = 0;
#if HAVE_SSE2
    if (n == 64) {
        const __m128i space = _mm_set1_epi8(0x20);
        for (int k = 0; k < 4; k++) {
            __m128i x = _mm_loadu_si128((const __m128i *)(chunk + 16 * k));
            __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(x, space), x);   /* x <= 0x20 */
            seps |= (uint64_t)(uint16_t)_mm_movemask_epi8(low) << (16 * k);
            hi |= (uint64_t)(uint16_t)_mm_movemask_epi8(x) << (16 * k);
        }
        *high |= hi;
        return seps;
    }
#endif
    for (Py_ssize_t i = 0; i < n; i++) {
        seps |= (uint64_t)(chunk[i] <= 0x20) << i;
        hi |= (uint64_t)(chunk[i] >= 0x80) << i;
    }
    *high |= hi;
    return seps;
}

static inline int lowest_bit(uint64_t m) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(m);
#else
    int i = 0;
    while (!(m & 1)) {
        m >>= 1;
        i++;
    }
    return i;
#endif
}

/* The number of newlines in buf[:size]. */
static Py_ssize_t newlines(const unsigned char *buf, Py_ssize_t size) {
    Py_ssize_t count = 0, i = 0;
#if HAVE_SSE2
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= size) {
        __m128i sum = zero;                  /* per byte lane: matches so far (at most 255) */
        for (int k = 0; k < 255 && i + 16 <= size; k++, i += 16)
            sum = _mm_sub_epi8(sum, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i)),
                                                   nl));
        __m128i total = _mm_sad_epu8(sum, zero);
        count += _mm_cvtsi128_si32(total) + _mm_cvtsi128_si32(_mm_srli_si128(total, 8));
    }
#endif
    for (; i < size; i++) count += buf[i] == '\n';
    return count;
}

/* The digits from *p on into *mant (leading zeros dropped), *p moved past them: how many
 * there were, or -1 past 19 significant digits (more than a uint64 holds). */
static inline long digits_into(const unsigned char *buf, Py_ssize_t *p, Py_ssize_t end,
                               uint64_t *mant, int *significant) {
    long count = 0;
    for (; *p < end && buf[*p] >= '0' && buf[*p] <= '9'; (*p)++, count++) {
        unsigned d = buf[*p] - '0';
        if (*mant || d) {
            if (*significant == 19) return -1;
            *mant = *mant * 10 + d;
            (*significant)++;
        }
    }
    return count;
}

/* float(buf[start:end]) into *out where the exact fast path applies (1), else 0. */
static int decimal(const unsigned char *buf, Py_ssize_t p, Py_ssize_t end, double *out) {
    int neg = 0, significant = 0;
    uint64_t mant = 0;
    long whole, frac = 0, exp = 0;
    if (!EXACT_DOUBLES) return 0;
    if (buf[p] == '-' || buf[p] == '+') {
        neg = buf[p] == '-';
        p++;
    }
    if ((whole = digits_into(buf, &p, end, &mant, &significant)) < 0) return 0;
    if (p < end && buf[p] == '.') {
        p++;
        if ((frac = digits_into(buf, &p, end, &mant, &significant)) < 0) return 0;
    }
    int seen = whole + frac > 0;
    if (!seen) return 0;
    if (p < end && (buf[p] == 'e' || buf[p] == 'E')) {
        int eneg = 0;
        p++;
        if (p < end && (buf[p] == '-' || buf[p] == '+')) {
            eneg = buf[p] == '-';
            p++;
        }
        if (p == end || end - p > 4) return 0;
        for (; p < end && buf[p] >= '0' && buf[p] <= '9'; p++) exp = exp * 10 + (buf[p] - '0');
        if (eneg) exp = -exp;
    }
    if (p != end) return 0;
    double value;
    if (mant == 0) {
        value = 0.0;
    } else {
        long power = exp - frac;
        if (mant > (1ULL << 53)) return 0;
        if (power >= 0 && power <= 22)
            value = (double)mant * POW10[power];
        else if (power < 0 && power >= -22)
            value = (double)mant / POW10[-power];
        else
            return 0;
    }
    *out = neg ? -value : value;
    return 1;
}

/* Views of the arguments: a uint8 buffer, int64 and float64 arrays of n items. */
static int view(PyObject *obj, Py_buffer *v, int writable, Py_ssize_t itemsize, Py_ssize_t n,
                const char *name) {
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (v->itemsize != itemsize || (n >= 0 && v->len != n * itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes of items of %zd, expected %zd of %zd",
                     name, v->len, v->itemsize, n * itemsize, itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

static void release(Py_buffer *views, int n) {
    for (int i = 0; i < n; i++) PyBuffer_Release(&views[i]);
}

/* count_lines(raw, size) -> the number of newlines in raw[:size]. */
static PyObject *count_lines(PyObject *self, PyObject *args) {
    PyObject *raw_obj;
    Py_ssize_t size, count;
    Py_buffer v;
    (void)self;
    if (!PyArg_ParseTuple(args, "On", &raw_obj, &size)) return NULL;
    if (view(raw_obj, &v, 0, 1, -1, "raw") < 0) return NULL;
    if (size < 0 || size > v.len) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "size: outside the buffer");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    count = newlines(v.buf, size);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&v);
    return PyLong_FromSsize_t(count);
}

static const uint64_t LOW_BYTES[9] = {0,
                                      0xFFULL,
                                      0xFFFFULL,
                                      0xFFFFFFULL,
                                      0xFFFFFFFFULL,
                                      0xFFFFFFFFFFULL,
                                      0xFFFFFFFFFFFFULL,
                                      0xFFFFFFFFFFFFFFULL,
                                      0xFFFFFFFFFFFFFFFFULL};

/* The bytes buf[i:end] (at most 8), zero past end, as a little-endian word. padded: the buffer
 * has 8 bytes after end, so one 8-byte read stays inside it. */
static inline uint64_t word_at(const unsigned char *buf, int64_t i, int64_t end, int padded) {
    uint64_t w = 0;
    int64_t left = end - i < 8 ? end - i : 8;
    if (padded) {
        memcpy(&w, buf + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        return w & LOW_BYTES[left];
    }
    for (int64_t k = 0; k < left; k++) w |= (uint64_t)buf[i + k] << (8 * k);
    return w;
}

/* A hash of buf[start:end]. Ids of at most 16 bytes (most ids) in a padded buffer: two word
 * reads and no branch on the length; longer ones eight bytes a step. */
static inline uint64_t hash_span(const unsigned char *buf, int64_t start, int64_t end,
                                 int padded) {
    int64_t len = end - start;
    uint64_t h;
    if (padded && len <= 16) {
        int64_t second = len > 8 ? start + 8 : end;       /* 8 readable bytes from either */
        int64_t rest = len > 8 ? len - 8 : 0;
        uint64_t w0, w1;
        memcpy(&w0, buf + start, 8);
        memcpy(&w1, buf + second, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w0 = __builtin_bswap64(w0);
        w1 = __builtin_bswap64(w1);
#endif
        w0 &= LOW_BYTES[len < 8 ? len : 8];
        w1 &= LOW_BYTES[rest];
        h = w0 * 0x9E3779B97F4A7C15ULL + w1 * 0xC2B2AE3D27D4EB4FULL +
            (uint64_t)len * 0x165667B19E3779F9ULL;
    } else {
        h = 0x9E3779B97F4A7C15ULL + (uint64_t)len;
        for (int64_t i = start; i < end; i += 8) {
            h = (h ^ word_at(buf, i, end, padded)) * 0xBF58476D1CE4E5B9ULL;
            h ^= h >> 29;
        }
    }
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ULL;
    return h ^ (h >> 29);
}

static inline int same_span(const unsigned char *a, int64_t a0, int64_t a1,
                            const unsigned char *b, int64_t b0, int64_t b1, int padded) {
    if (a1 - a0 != b1 - b0) return 0;
    if (padded && a1 - a0 <= 8) return word_at(a, a0, a1, 1) == word_at(b, b0, b1, 1);
    return memcmp(a + a0, b + b0, (size_t)(a1 - a0)) == 0;
}

/* An open-addressing table of (hash, item); item -1: an empty slot. */
typedef struct {
    uint64_t hash;
    int64_t item;
} Slot;

typedef struct {
    Slot *slots;
    int64_t mask, used;
} Table;

static int table_init(Table *t, int64_t size) {
    t->slots = malloc((size_t)size * sizeof(Slot));
    if (!t->slots) return -1;
    memset(t->slots, 0xFF, (size_t)size * sizeof(Slot));
    t->mask = size - 1;
    t->used = 0;
    return 0;
}

/* Room for one more item (doubling at half full): 0, or -1 where memory ran out. */
static int table_room(Table *t) {
    if (2 * (t->used + 1) <= t->mask + 1) return 0;
    int64_t size = 2 * (t->mask + 1);
    Table old = *t;
    if (table_init(t, size) < 0) {
        *t = old;
        return -1;
    }
    for (int64_t i = 0; i <= old.mask; i++) {
        if (old.slots[i].item < 0) continue;
        int64_t at = (int64_t)(old.slots[i].hash & (uint64_t)t->mask);
        while (t->slots[at].item >= 0) at = (at + 1) & t->mask;
        t->slots[at] = old.slots[i];
        t->used++;
    }
    free(old.slots);
    return 0;
}

/* The rows of one query's block (or, where a query has several blocks, of all its rows) by
 * document, small enough to stay in the L1 cache: slots of (the hash's high half, the row's
 * place k in the group + 1; 0: empty), and the slots filled, so that the next group empties
 * only those. Its k-th row is order[first + k], or first + k where order is NULL. */
typedef struct {
    uint32_t tag, key;
} DocSlot;

typedef struct {
    DocSlot *slots;
    uint32_t *filled;
    const int64_t *order;
    int64_t mask, used, first;
} BlockTable;

static inline int64_t block_row(const BlockTable *t, int64_t k) {
    return t->order ? t->order[t->first + k] : t->first + k;
}

static void block_reset(BlockTable *t, int64_t first) {
    for (int64_t i = 0; i < t->used; i++) t->slots[t->filled[i]].key = 0;
    t->used = 0;
    t->first = first;
}

static int block_init(BlockTable *t, int64_t size) {
    t->slots = calloc((size_t)size, sizeof(DocSlot));
    t->filled = malloc((size_t)(size / 2) * sizeof(uint32_t));
    t->order = NULL;
    t->mask = size - 1;
    t->used = t->first = 0;
    return t->slots && t->filled ? 0 : -1;
}

static void block_free(BlockTable *t) {
    free(t->slots);
    free(t->filled);
}

/* The run's checks, one row at a time (rows in file order). */
typedef struct {
    const unsigned char *qbuf, *dbuf;
    int qpad, dpad;                    /* 8 readable bytes after every id of the buffer */
    const int64_t *ds, *de;            /* each row's document span */
    const double *scores;
    int64_t *block_start, *bqs, *bqe;  /* outputs: one item per block */
    int64_t *local;                    /* each block's query, numbered as first seen */
    int64_t local_room, blocks, queries, nonfinite, repeat;
    int interleaved, rises;
    Table by_query;                    /* blocks by query */
    BlockTable by_doc;
} Checks;

/* Room in c->by_doc for one more row (doubling at half full, the rows placed again by their
 * documents' hashes): 0, or -1 where memory ran out. */
static int block_room(Checks *c) {
    BlockTable *t = &c->by_doc, old = *t;
    if (2 * (t->used + 1) <= t->mask + 1) return 0;
    if (block_init(t, 2 * (old.mask + 1)) < 0) {
        block_free(t);
        *t = old;
        return -1;
    }
    t->order = old.order;
    t->first = old.first;
    for (int64_t i = 0; i < old.used; i++) {
        DocSlot s = old.slots[old.filled[i]];
        int64_t row = block_row(&old, s.key - 1);
        uint64_t h = hash_span(c->dbuf, c->ds[row], c->de[row], c->dpad);
        int64_t at = (int64_t)(h & (uint64_t)t->mask);
        while (t->slots[at].key) at = (at + 1) & t->mask;
        t->slots[at] = s;
        t->filled[t->used++] = (uint32_t)at;
    }
    block_free(&old);
    return 0;
}

/* The k-th row of c->by_doc's group (its row `row`): 1 where an earlier row of the group has
 * its document, 0 once added, -1 where memory ran out (or a group of 2**32 rows). */
static inline int block_add(Checks *c, int64_t k, int64_t row) {
    BlockTable *t = &c->by_doc;
    if (k >= (int64_t)UINT32_MAX - 1 || block_room(c) < 0) return -1;
    uint64_t h = hash_span(c->dbuf, c->ds[row], c->de[row], c->dpad);
    uint32_t tag = (uint32_t)(h >> 32);
    int64_t at = (int64_t)(h & (uint64_t)t->mask);
    for (;;) {
        DocSlot *s = &t->slots[at];
        if (!s->key) {
            s->tag = tag;
            s->key = (uint32_t)(k + 1);
            t->filled[t->used++] = (uint32_t)at;
            return 0;
        }
        int64_t other = block_row(t, s->key - 1);
        if (s->tag == tag && same_span(c->dbuf, c->ds[other], c->de[other], c->dbuf,
                                       c->ds[row], c->de[row], c->dpad))
            return 1;
        at = (at + 1) & t->mask;
    }
}

/* c over ids in qbuf and dbuf (qpad, dpad: 8 readable bytes after every id), with the views
 * out[0:6] of the rows' document starts and ends and scores, and of the outputs block_start,
 * bqs and bqe: 0, or -1 where memory ran out (checks_free c either way). */
static int checks_init(Checks *c, const unsigned char *qbuf, int qpad, const unsigned char *dbuf,
                       int dpad, const Py_buffer *out) {
    c->qbuf = qbuf;
    c->qpad = qpad;
    c->dbuf = dbuf;
    c->dpad = dpad;
    c->ds = out[0].buf;
    c->de = out[1].buf;
    c->scores = out[2].buf;
    c->block_start = out[3].buf;
    c->bqs = out[4].buf;
    c->bqe = out[5].buf;
    c->blocks = c->queries = 0;
    c->nonfinite = c->repeat = -1;
    c->interleaved = c->rises = 0;
    c->by_query.slots = NULL;
    c->by_doc.slots = NULL;
    c->by_doc.filled = NULL;
    c->local_room = 256;
    c->local = malloc((size_t)c->local_room * sizeof(int64_t));
    if (!c->local || table_init(&c->by_query, 64) < 0 || block_init(&c->by_doc, 2048) < 0)
        return -1;
    return 0;
}

static void checks_free(Checks *c) {
    free(c->local);
    free(c->by_query.slots);
    block_free(&c->by_doc);
}

/* Row `row`, its query id qbuf[q0:q1]: 0, or -1 where memory ran out. */
static inline int checks_row(Checks *c, int64_t row, int64_t q0, int64_t q1) {
    double score = c->scores[row];
    if (c->nonfinite < 0 && !isfinite(score)) c->nonfinite = row;
    int64_t b = c->blocks - 1;
    if (b >= 0 && same_span(c->qbuf, c->bqs[b], c->bqe[b], c->qbuf, q0, q1, c->qpad)) {
        if (score > c->scores[row - 1]) c->rises = 1;
    } else {                                           /* a new block */
        b = ++c->blocks - 1;
        if (b == c->local_room) {
            int64_t *grown = realloc(c->local, (size_t)(2 * b) * sizeof(int64_t));
            if (!grown) return -1;
            c->local = grown;
            c->local_room = 2 * b;
        }
        c->block_start[b] = row;
        c->bqs[b] = q0;
        c->bqe[b] = q1;
        uint64_t h = hash_span(c->qbuf, q0, q1, c->qpad);
        Table *t = &c->by_query;
        if (table_room(t) < 0) return -1;
        int64_t at = (int64_t)(h & (uint64_t)t->mask);
        for (;;) {
            Slot *s = &t->slots[at];
            if (s->item < 0) {
                s->hash = h;
                s->item = b;
                t->used++;
                c->local[b] = c->queries++;
                break;
            }
            if (s->hash == h && same_span(c->qbuf, c->bqs[s->item], c->bqe[s->item], c->qbuf,
                                          q0, q1, c->qpad)) {
                c->local[b] = c->local[s->item];
                c->interleaved = 1;               /* this query had a block before */
                break;
            }
            at = (at + 1) & t->mask;
        }
        block_reset(&c->by_doc, row);             /* the block's rows only */
    }
    if (c->interleaved || c->repeat >= 0) return 0;   /* see checks_end */
    int got = block_add(c, row - c->by_doc.first, row);
    if (got > 0) c->repeat = row;
    return got < 0 ? -1 : 0;
}

/* After the last of `rows` rows: where a query has several blocks (the streaming check then
 * stopped), the first repeat over the whole run: the rows grouped by query (a counting sort,
 * file order kept in each group), each group checked as a block is, the earliest repeat of any
 * group kept. 0, or -1 where memory ran out. */
static int checks_end(Checks *c, int64_t rows) {
    if (!c->interleaved || c->repeat >= 0) return 0;
    int64_t *next = calloc((size_t)(c->queries + 1), sizeof(int64_t));
    int64_t *order = malloc((size_t)(rows + 1) * sizeof(int64_t));
    int failed = !next || !order;
    for (int64_t b = 0; !failed && b < c->blocks; b++) {
        int64_t end = b + 1 < c->blocks ? c->block_start[b + 1] : rows;
        next[c->local[b] + 1] += end - c->block_start[b];
    }
    for (int64_t q = 0; !failed && q < c->queries; q++) next[q + 1] += next[q];
    for (int64_t b = 0; !failed && b < c->blocks; b++) {   /* next[q]: group q's next place */
        int64_t end = b + 1 < c->blocks ? c->block_start[b + 1] : rows;
        for (int64_t row = c->block_start[b]; row < end; row++) order[next[c->local[b]]++] = row;
    }
    int64_t first = 0, earliest = -1;                    /* next[q] is now group q's end */
    c->by_doc.order = order;
    for (int64_t q = 0; !failed && q < c->queries; q++) {
        block_reset(&c->by_doc, first);
        for (int64_t i = first; i < next[q]; i++) {
            int got = block_add(c, i - first, order[i]);
            if (got < 0) failed = 1;
            if (got != 0) {
                if (got > 0 && (earliest < 0 || order[i] < earliest)) earliest = order[i];
                break;
            }
        }
        first = next[q];
    }
    c->by_doc.order = NULL;
    free(next);
    free(order);
    c->repeat = earliest;
    return failed ? -1 : 0;
}

static inline PyObject *ranked(const Checks *c) {
    return !c->interleaved && !c->rises ? Py_True : Py_False;
}

/* The largest end of n spans; -1 where one is outside [0, len]. */
static int64_t last_end(const int64_t *starts, const int64_t *ends, Py_ssize_t n,
                        Py_ssize_t len) {
    int64_t last = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (starts[i] < 0 || ends[i] < starts[i] || ends[i] > len) return -1;
        if (ends[i] > last) last = ends[i];
    }
    return last;
}

/* check_run(qbuf, qs, qe, dbuf, ds, de, scores, block_start, bqs, bqe) -> (blocks, nonfinite,
 * repeat, ranked): block_start[:blocks] the first row of each block of rows with one query id
 * and bqs, bqe its query's span; the first row with a NaN or infinite score and the first row
 * whose (query, corpus-id) an earlier row has (-1 when none); whether every query is one block
 * with scores not increasing in it. */
static PyObject *check_run(PyObject *self, PyObject *args) {
    PyObject *obj[10];
    Py_buffer v[10];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
                          &obj[5], &obj[6], &obj[7], &obj[8], &obj[9]))
        return NULL;
    static const char *names[10] = {"qbuf", "qs", "qe", "dbuf", "ds", "de", "scores",
                                    "block_start", "bqs", "bqe"};
    Py_ssize_t n = -1;
    for (int i = 0; i < 10; i++) {
        int bytes = i == 0 || i == 3;
        if (view(obj[i], &v[i], i >= 7, bytes ? 1 : 8, bytes ? -1 : n, names[i]) < 0) {
            release(v, i);
            return NULL;
        }
        if (i == 1) n = v[1].len / 8;
    }
    int64_t q_last = last_end(v[1].buf, v[2].buf, n, v[0].len);
    int64_t d_last = last_end(v[4].buf, v[5].buf, n, v[3].len);
    if (q_last < 0 || d_last < 0) {
        release(v, 10);
        PyErr_SetString(PyExc_ValueError, "a span outside its buffer");
        return NULL;
    }
    Checks c;
    const int64_t *qs = v[1].buf, *qe = v[2].buf;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    failed = checks_init(&c, v[0].buf, q_last + 8 <= v[0].len, v[3].buf, d_last + 8 <= v[3].len,
                         &v[4]) < 0;
    for (int64_t row = 0; !failed && row < n; row++)
        failed = checks_row(&c, row, qs[row], qe[row]) < 0;
    if (!failed) failed = checks_end(&c, n) < 0;
    checks_free(&c);
    Py_END_ALLOW_THREADS
    release(v, 10);
    if (failed) return PyErr_NoMemory();
    return Py_BuildValue("(LLLO)", (long long)c.blocks, (long long)c.nonfinite,
                         (long long)c.repeat, ranked(&c));
}

/* The score buf[start:end] by float()'s parser, the GIL taken back for it: 0, or -1 where it
 * refuses the token. */
static int parse_with_python(const unsigned char *buf, Py_ssize_t start, Py_ssize_t end,
                             double *out, PyThreadState **save) {
    char *stop = NULL;
    PyEval_RestoreThread(*save);
    double value = PyOS_string_to_double((const char *)buf + start, &stop, NULL);
    int ok = !(value == -1.0 && PyErr_Occurred()) && stop == (const char *)buf + end;
    PyErr_Clear();
    *save = PyEval_SaveThread();
    *out = value;
    return ok ? 0 : -1;
}

/* Whether byte b (<= 0x20) separates fields as str.split() does: space, tab, CR, VT, FF and
 * the ASCII separators 0x1c-0x1f (the newline ends a line). */
static inline int gap_byte(unsigned char b) {
    return b == ' ' || b == '\t' || b == '\r' || b == '\v' || b == '\f' ||
           (b >= 0x1c && b <= 0x1f);
}

/* The lines of buf[:size] into c (its ds, de, scores with room for `room` rows): OK,
 * NOT_CANONICAL, or -2 (no memory); *rows: the lines read; *high: a byte above 0x7f. Every byte
 * <= 0x20 is a separator; fields are the non-empty runs between them, as str.split() splits
 * (any run of spaces or tabs, leading and trailing ones too): six a line, or NOT_CANONICAL, as
 * is a blank line (row = line) and any other control byte. */
static int scan_lines(const unsigned char *buf, Py_ssize_t size, Py_ssize_t room, Checks *c,
                      int64_t *ds, int64_t *de, double *scores, Py_ssize_t *rows, int *high,
                      Py_ssize_t *tag, PyThreadState **save) {
    Py_ssize_t fs[6], fe[6], prev = -1, row = 0;
    int field = 0, one_tag = 1;
    uint64_t any_high = 0;
    for (Py_ssize_t base = 0; base < size; base += 64) {
        Py_ssize_t n = size - base < 64 ? size - base : 64;
        uint64_t seps = separators(buf + base, n, &any_high);
        while (seps) {
            Py_ssize_t at = base + lowest_bit(seps);
            seps &= seps - 1;
            unsigned char b = buf[at];
            if (at > prev + 1) {                          /* a field ends here */
                if (field == 6) return NOT_CANONICAL;
                fs[field] = prev + 1;
                fe[field++] = at;
            }
            prev = at;
            if (b != '\n') {
                if (!gap_byte(b)) return NOT_CANONICAL;
                continue;
            }
            if (field != 6) return NOT_CANONICAL;        /* a blank line, or not six fields */
            field = 0;
            if (row == room) return NOT_CANONICAL;
            ds[row] = fs[2];
            de[row] = fe[2];
            Py_ssize_t r = fs[3] + (buf[fs[3]] == '-');   /* an optional minus, digits */
            if (r == fe[3]) return NOT_CANONICAL;
            while (r < fe[3] && buf[r] >= '0' && buf[r] <= '9') r++;
            if (r != fe[3]) return NOT_CANONICAL;
            if (!decimal(buf, fs[4], fe[4], &scores[row]) &&
                parse_with_python(buf, fs[4], fe[4], &scores[row], save) < 0)
                return NOT_CANONICAL;
            if (checks_row(c, row, fs[0], fe[0]) < 0) return -2;
            if (row == 0) {
                tag[0] = fs[5];
                tag[1] = fe[5];
            } else if (one_tag && (fe[5] - fs[5] != tag[1] - tag[0] ||
                                   memcmp(buf + fs[5], buf + tag[0], (size_t)(tag[1] - tag[0]))))
                one_tag = 0;
            row++;
        }
    }
    *high = any_high != 0;
    *rows = row;
    if (!one_tag) tag[0] = tag[1] = -1;
    if (field != 0) return NOT_CANONICAL;
    return checks_end(c, row) < 0 ? -2 : OK;
}

/* scan_trec_run(raw, size, ds, de, scores, block_start, bqs, bqe) -> None where raw[:size] is
 * not a canonical TREC run, else (rows, ascii, blocks, nonfinite, repeat, ranked, tag_start,
 * tag_end): nonfinite, repeat and ranked as check_run gives them; raw[tag_start:tag_end] the
 * tag (sixth field) of every line, -1 and -1 where two lines' tags differ. raw[:size] ends with a newline and has 8 readable bytes after it; the
 * arrays have room for every line (count_lines, or size // 12 + 1: a line has 12 bytes or more);
 * ascii: no byte above 0x7f (else the caller checks the UTF-8). */
static PyObject *scan_trec_run(PyObject *self, PyObject *args) {
    PyObject *raw_obj, *obj[6];
    Py_ssize_t size;
    Py_buffer v[7];
    (void)self;
    if (!PyArg_ParseTuple(args, "OnOOOOOO", &raw_obj, &size, &obj[0], &obj[1], &obj[2],
                          &obj[3], &obj[4], &obj[5]))
        return NULL;
    if (view(raw_obj, &v[0], 0, 1, -1, "raw") < 0) return NULL;
    if (size < 1 || size + 8 > v[0].len) {
        PyErr_SetString(PyExc_ValueError, "size: not 8 bytes before the buffer's end");
        release(v, 1);
        return NULL;
    }
    static const char *names[6] = {"ds", "de", "scores", "block_start", "bqs", "bqe"};
    Py_ssize_t room = -1, rows = 0, tag[2] = {-1, -1};
    for (int i = 0; i < 6; i++) {
        if (view(obj[i], &v[i + 1], 1, 8, room, names[i]) < 0) {
            release(v, i + 1);
            return NULL;
        }
        if (i == 0) room = v[1].len / 8;
    }
    const unsigned char *buf = v[0].buf;
    Checks c;
    int status = -2, high = 0;
    PyThreadState *save = PyEval_SaveThread();
    if (checks_init(&c, buf, 1, buf, 1, &v[1]) == 0)
        status = scan_lines(buf, size, room, &c, v[1].buf, v[2].buf, v[3].buf, &rows, &high,
                            tag, &save);
    checks_free(&c);
    PyEval_RestoreThread(save);
    release(v, 7);
    if (status == -2) return PyErr_NoMemory();
    if (status != OK) Py_RETURN_NONE;
    return Py_BuildValue("(nOLLLOnn)", rows, high ? Py_False : Py_True, (long long)c.blocks,
                         (long long)c.nonfinite, (long long)c.repeat, ranked(&c), tag[0], tag[1]);
}

static PyMethodDef methods[] = {
    {"count_lines", count_lines, METH_VARARGS,
     "count_lines(raw, size) -> the number of newlines in raw[:size]."},
    {"scan_trec_run", scan_trec_run, METH_VARARGS,
     "scan_trec_run(raw, size, ds, de, scores, block_start, bqs, bqe) -> None where the bytes "
     "are not a canonical TREC run, else (rows, ascii, blocks, nonfinite, repeat, ranked, "
     "tag_start, tag_end)."},
    {"check_run", check_run, METH_VARARGS,
     "check_run(qbuf, qs, qe, dbuf, ds, de, scores, block_start, bqs, bqe) -> (blocks, "
     "nonfinite, repeat, ranked)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_run_scan",
    .m_doc = "Compiled passes over a run's bytes (rcp_data.runs.run_scan).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__run_scan(void) { return PyModule_Create(&module); }
