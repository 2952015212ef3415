/* psych.c - YAML data through libyaml's event API, resolved exactly as Ruby 3.1's Psych 4 does.
 *
 * Two passes, like Psych itself:
 *  1. libyaml events of the first document are collected into a compact node tree (Psych's
 *     TreeBuilder builds Psych::Nodes the same way; Psych.parse also stops at the first
 *     document's end, so later documents - even broken ones - are never looked at).
 *  2. The tree is converted to hv values in document order, as Psych::Visitors::ToRuby (with
 *     the restricted class loader of safe_load) does: plain scalars go through a hand-written
 *     copy of Psych::ScalarScanner#tokenize, tags are handled as ToRuby#deserialize and
 *     visit_Psych_Nodes_Sequence/Mapping handle them, merge keys as ToRuby#revive_hash.
 *
 * Both passes use explicit stacks (no recursion), with a nesting cap and a cap on the number
 * of values created (merge keys copy entries, so an alias bomb of merges is refused).
 * Aliases share the anchored value (hv_incref); nothing is deep-copied.
 *
 * Messages: YAML_PUPPET gives the message of Puppet::Util::Yaml's YamlLoadError (Psych's
 * message, with "(<file>): " in front of a DisallowedClass message, as Puppet adds it);
 * YAML_HIERA3 gives the message of the Ruby exception raised by YAML.load(data), which gets no
 * file name, so syntax errors say "(<unknown>): ...".
 */
#include "formats/psych.h"
#include "base/rubyver.h"
#include "base/fileio.h"

#include "formats/json.h"
#include "formats/render.h"

#include <yaml.h> /* libyaml */

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Psych's recursive visitor dies with SystemStackError ("stack level too deep") at about 960
 * nested mappings or 1300 nested sequences; we refuse a little beyond that. */
#define YAML_MAX_DEPTH 1000
/* Upper bound on tree nodes plus values created plus entries copied by merge keys. */
#define YAML_MAX_NODES 10000000u
/* Longest non-decimal integer literal converted exactly (the conversion is quadratic). */
#define YAML_MAX_RADIX_DIGITS 100000u
/* Aliases share the anchored value, but every walk over the loaded data (Puppet's
 * symkeys_to_string, interpolation, merges, rendering) meets it once per alias: a "billion
 * laughs" document of a few hundred bytes expands to 10^9 values, and Puppet hangs on it. A
 * document whose values, counted as a full walk counts them, pass this is refused. */
#define YAML_MAX_EXPANDED 10000000u
/* Through aliases values nest deeper than the text does (each anchor adds its own depth);
 * Puppet's recursive walk dies with "stack level too deep" at about 3500 levels. */
#define YAML_MAX_VALUE_DEPTH 3000u

/* ------------------------------------------------------------------------------------------ */
/* The node tree                                                                               */

enum { N_SCALAR, N_SEQ, N_MAP, N_ALIAS };

typedef struct {
    size_t val;      /* pool offset of the scalar value, or of the alias' anchor name */
    size_t vlen;
    size_t tag;      /* pool offset + 1 of the tag, 0 when none */
    size_t anchor;   /* pool offset + 1 of the anchor name, 0 when none */
    uint32_t line;   /* 1-based start line */
    uint32_t col;    /* 1-based start column */
    uint32_t first;  /* first child + 1 (0 = none) */
    uint32_t last;   /* last child + 1 */
    uint32_t next;   /* next sibling + 1 */
    uint8_t type;
    uint8_t quoted;  /* Psych's Scalar#quoted: libyaml's quoted_implicit */
} ynode;

typedef struct {
    const char *name; /* pool string, NUL-terminated (the pool no longer grows in pass 2) */
    hv *val;          /* NULL while the anchored container is being built */
    uint64_t gen;     /* which registration the slot holds */
    size_t frame;     /* while being built: index of the container's frame */
    hv *ph;           /* while being built: the placeholder aliases get (made on demand) */
    bool used;
} anchor_slot;

/* An alias to a collection still being built (Psych makes recursive data of it). */
typedef struct {
    hv *ph;       /* stands for the collection in the values */
    size_t frame; /* the collection's frame while it is being built */
    char *name;
    uint32_t line, col;
} recursion;

typedef struct {
    yaml_mode mode;
    uint32_t root;    /* the document's root node (YAML_PUPPET_FACTS_CACHE: where the Facts tag is allowed) */
    bool facts_root;  /* the root was a !ruby/object:Puppet::Node::Facts mapping */
    bool plain_too;   /* YAML_PUPPET_FACTS_CACHE: without that root, read as YAML_PUPPET_FACTS */
    const char *name; /* file name for messages ("<unknown>" when none) */
    const char *file; /* file name for err->file (may be NULL) */
    herr *err;
    bool failed;
    size_t budget; /* nodes + values + merge copies so far */

    ynode *nodes;
    size_t nnodes, capnodes;
    char *pool;
    size_t poollen, poolcap;

    anchor_slot *anchors;
    size_t nanchors, capanchors; /* capanchors is a power of two or 0 */
    uint64_t gen;

    /* aliases met inside their own anchored collection */
    recursion *recs;
    size_t nrecs;
} yctx;

static const char *pool_str(const yctx *c, size_t off) { return c->pool + off; }

static size_t pool_add(yctx *c, const char *s, size_t n)
{
    if (c->poolcap - c->poollen < n + 1) {
        size_t cap = c->poolcap ? c->poolcap : 4096;
        while (cap - c->poollen < n + 1)
            cap *= 2;
        c->pool = xrealloc(c->pool, cap);
        c->poolcap = cap;
    }
    size_t off = c->poollen;
    if (n)
        memcpy(c->pool + off, s, n);
    c->pool[off + n] = 0;
    c->poollen += n + 1;
    return off;
}

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */

static void fail_at(yctx *c, uint32_t line, uint32_t col, const char *fmt, ...) HIERA_PRINTF(4, 5);

static void fail_at(yctx *c, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = true;
    va_list ap;
    va_start(ap, fmt);
    herr_setv(c->err, HERR_ERROR, fmt, ap);
    va_end(ap);
    herr_at(c->err, c->file, (int)line, (int)col);
}

/* Psych::DisallowedClass: Puppet's safe_load puts "(<file>): " in front of its message. */
static void fail_class(yctx *c, const ynode *n, const char *klass, size_t klen)
{
    if (c->mode != YAML_HIERA3)
        fail_at(c, n->line, n->col, "(%s): Tried to load unspecified class: %.*s", c->name, (int)klen, klass);
    else
        fail_at(c, n->line, n->col, "Tried to load unspecified class: %.*s", (int)klen, klass);
}

/* Whether the class loader permits Symbol (every mode but a --facts file's). The root node is
 * converted before anything inside it, so facts_root is known when it matters. */
static bool symbol_permitted(const yctx *c)
{
    return c->mode != YAML_PUPPET_FACTS && !(c->plain_too && !c->facts_root);
}

static bool spend(yctx *c, size_t n, uint32_t line)
{
    if (c->budget + n > YAML_MAX_NODES || c->budget + n < c->budget) {
        fail_at(c, line, 0, "YAML document too large (more than %u nodes, counting merged entries)",
                YAML_MAX_NODES);
        return false;
    }
    c->budget += n;
    return true;
}

/* Ruby's String#inspect of a binary string, as ArgumentError messages show it. */
static void inspect_binary(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '"': sb_adds(b, "\\\""); break;
        case '\\': sb_adds(b, "\\\\"); break;
        case '\n': sb_adds(b, "\\n"); break;
        case '\r': sb_adds(b, "\\r"); break;
        case '\t': sb_adds(b, "\\t"); break;
        case '\f': sb_adds(b, "\\f"); break;
        case '\v': sb_adds(b, "\\v"); break;
        case '\b': sb_adds(b, "\\b"); break;
        case '\a': sb_adds(b, "\\a"); break;
        case 0x1b: sb_adds(b, "\\e"); break;
        case '#':
            if (i + 1 < n && (s[i + 1] == '{' || s[i + 1] == '$' || s[i + 1] == '@'))
                sb_addc(b, '\\');
            sb_addc(b, '#');
            break;
        default:
            if (ch >= 0x20 && ch < 0x7f)
                sb_addc(b, (char)ch);
            else
                sb_addf(b, "\\x%02X", ch);
        }
    }
    sb_addc(b, '"');
}

/* ArgumentError "invalid value for Integer(): "0x"" and the like. */
static void fail_invalid_value(yctx *c, const ynode *n, const char *type, const char *s, size_t len)
{
    sbuf b = {0};
    inspect_binary(&b, s, len);
    fail_at(c, n->line, n->col, "invalid value for %s(): %s", type, sb_str(&b));
    sb_free(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* Pass 1: libyaml events to the node tree                                                      */

static bool add_node(yctx *c, uint32_t *open, size_t nopen, uint8_t type, const yaml_event_t *ev, uint32_t *root)
{
    if (!spend(c, 1, (uint32_t)ev->start_mark.line + 1))
        return false;
    if (c->nnodes >= UINT32_MAX - 1) {
        fail_at(c, (uint32_t)ev->start_mark.line + 1, 0, "YAML document too large");
        return false;
    }
    if (c->nnodes == c->capnodes) {
        c->capnodes = c->capnodes ? c->capnodes * 2 : 256;
        c->nodes = xrealloc(c->nodes, c->capnodes * sizeof *c->nodes);
    }
    ynode *n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->line = (uint32_t)ev->start_mark.line + 1;
    n->col = (uint32_t)ev->start_mark.column + 1;
    const yaml_char_t *tag = NULL, *anchor = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        tag = ev->data.scalar.tag;
        anchor = ev->data.scalar.anchor;
        n->quoted = ev->data.scalar.quoted_implicit ? 1 : 0;
        n->val = pool_add(c, (const char *)ev->data.scalar.value, ev->data.scalar.length);
        n->vlen = ev->data.scalar.length;
        break;
    case YAML_ALIAS_EVENT: {
        const char *a = (const char *)ev->data.alias.anchor;
        n->vlen = a ? strlen(a) : 0;
        n->val = pool_add(c, a ? a : "", n->vlen);
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
        tag = ev->data.sequence_start.tag;
        anchor = ev->data.sequence_start.anchor;
        break;
    case YAML_MAPPING_START_EVENT:
        tag = ev->data.mapping_start.tag;
        anchor = ev->data.mapping_start.anchor;
        break;
    default:
        break;
    }
    if (tag)
        n->tag = pool_add(c, (const char *)tag, strlen((const char *)tag)) + 1;
    if (anchor)
        n->anchor = pool_add(c, (const char *)anchor, strlen((const char *)anchor)) + 1;
    uint32_t idx = (uint32_t)c->nnodes++;
    if (nopen) {
        ynode *p = &c->nodes[open[nopen - 1]];
        if (p->last)
            c->nodes[p->last - 1].next = idx + 1;
        else
            p->first = idx + 1;
        p->last = idx + 1;
    } else if (*root == UINT32_MAX) {
        *root = idx;
    }
    return true;
}

static void syntax_error(yctx *c, const yaml_parser_t *p)
{
    /* Psych::SyntaxError: "(%s): %s at line %d column %d" % [file, [problem, context].compact
     * .join(' '), line, column], the position being libyaml's context_mark (0-based) + 1. */
    const char *file = c->mode == YAML_HIERA3 ? "<unknown>" : c->name;
    uint32_t line = (uint32_t)p->context_mark.line + 1, col = (uint32_t)p->context_mark.column + 1;
    if (p->error == YAML_MEMORY_ERROR) {
        fail_at(c, line, col, "failed to allocate memory");
        return;
    }
    const char *problem = p->problem, *context = p->context;
    fail_at(c, line, col, "(%s): %s%s%s at line %u column %u", file, problem ? problem : "",
            problem && context ? " " : "", context ? context : "", line, col);
}

/* Builds the tree of the first document. Returns the root node index, UINT32_MAX when the
 * stream has no document (Psych.parse returns false: safe_load gives nil), or fails. */
static bool build_tree(yctx *c, const char *text, size_t len, uint32_t *root)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fail_at(c, 0, 0, "failed to allocate memory");
        return false;
    }
    /* Psych hands a UTF-8 Ruby string to libyaml with the encoding fixed to UTF-8. */
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    uint32_t *open = NULL;
    size_t nopen = 0, capopen = 0;
    *root = UINT32_MAX;
    bool done = false;
    while (!done && !c->failed) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            syntax_error(c, &p);
            break;
        }
        switch (ev.type) {
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_SCALAR_EVENT:
            add_node(c, open, nopen, N_SCALAR, &ev, root);
            break;
        case YAML_ALIAS_EVENT:
            add_node(c, open, nopen, N_ALIAS, &ev, root);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (nopen >= YAML_MAX_DEPTH) {
                fail_at(c, (uint32_t)ev.start_mark.line + 1, (uint32_t)ev.start_mark.column + 1,
                        "stack level too deep (YAML nesting deeper than %d levels)", YAML_MAX_DEPTH);
                break;
            }
            if (!add_node(c, open, nopen, ev.type == YAML_SEQUENCE_START_EVENT ? N_SEQ : N_MAP, &ev, root))
                break;
            if (nopen == capopen) {
                capopen = capopen ? capopen * 2 : 32;
                open = xrealloc(open, capopen * sizeof *open);
            }
            open[nopen++] = (uint32_t)(c->nnodes - 1);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (nopen)
                nopen--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    free(open);
    yaml_parser_delete(&p);
    return !c->failed;
}

/* ------------------------------------------------------------------------------------------ */
/* Anchors: name -> value, with "being built" entries (Psych registers a container before its
 * children, so an alias inside it would make recursive data, which hv cannot hold).            */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static anchor_slot *anchor_find(yctx *c, const char *name, bool create)
{
    if (create && (c->nanchors + 1) * 2 > c->capanchors) {
        size_t ncap = c->capanchors ? c->capanchors * 2 : 64;
        anchor_slot *ns = xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < c->capanchors; i++) {
            if (!c->anchors[i].used)
                continue;
            size_t j = (size_t)str_hash(c->anchors[i].name) & (ncap - 1);
            while (ns[j].used)
                j = (j + 1) & (ncap - 1);
            ns[j] = c->anchors[i];
        }
        free(c->anchors);
        c->anchors = ns;
        c->capanchors = ncap;
    }
    if (!c->capanchors)
        return NULL;
    size_t j = (size_t)str_hash(name) & (c->capanchors - 1);
    while (c->anchors[j].used) {
        if (strcmp(c->anchors[j].name, name) == 0)
            return &c->anchors[j];
        j = (j + 1) & (c->capanchors - 1);
    }
    if (!create)
        return NULL;
    c->anchors[j].used = true;
    c->anchors[j].name = name;
    c->anchors[j].val = NULL;
    c->nanchors++;
    return &c->anchors[j];
}

/* Psych's register(node, object): the anchor now names val (NULL: a container being built,
 * registered before its children). Returns the registration's generation. */
static uint64_t anchor_set(yctx *c, const ynode *n, hv *val, size_t frame)
{
    if (!n->anchor)
        return 0;
    anchor_slot *s = anchor_find(c, pool_str(c, n->anchor - 1), true);
    hv_decref(s->val);
    hv_decref(s->ph);
    s->val = hv_incref(val);
    s->ph = NULL;
    s->frame = frame;
    s->gen = ++c->gen;
    return s->gen;
}

/* A container registered at its start is finished: its anchor names it now, unless a node
 * inside it registered the same anchor name again (Psych's later registration wins). */
static void anchor_finish(yctx *c, const ynode *n, uint64_t gen, hv *val)
{
    if (!n->anchor)
        return;
    anchor_slot *s = anchor_find(c, pool_str(c, n->anchor - 1), false);
    if (s && s->gen == gen && !s->val) {
        s->val = hv_incref(val);
        hv_decref(s->ph);
        s->ph = NULL;
    }
}

static void anchors_free(yctx *c)
{
    for (size_t i = 0; i < c->capanchors; i++)
        if (c->anchors[i].used) {
            hv_decref(c->anchors[i].val);
            hv_decref(c->anchors[i].ph);
        }
    free(c->anchors);
    for (size_t i = 0; i < c->nrecs; i++) {
        hv_decref(c->recs[i].ph);
        free(c->recs[i].name);
    }
    free(c->recs);
}

/* ------------------------------------------------------------------------------------------ */
/* Small numeric helpers                                                                       */

/* Numbers are parsed in the C locale whatever the program's locale is. */
static locale_t c_loc;
static pthread_once_t c_loc_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void) { c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static locale_t c_locale(void)
{
    pthread_once(&c_loc_once, c_locale_init);
    return c_loc;
}

static double c_strtod(const char *s, char **end)
{
    locale_t loc = c_locale();
    return loc ? strtod_l(s, end, loc) : strtod(s, end);
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static bool is_ruby_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

static int hex_val(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* An unsigned big number in base 1e9 limbs, least significant first. */
typedef struct {
    uint32_t *d;
    size_t n, cap;
} bnum;

#define BN_BASE 1000000000u

static void bn_mul_add(bnum *b, uint32_t mul, uint32_t add)
{
    uint64_t carry = add;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t t = (uint64_t)b->d[i] * mul + carry;
        b->d[i] = (uint32_t)(t % BN_BASE);
        carry = t / BN_BASE;
    }
    while (carry) {
        if (b->n == b->cap) {
            b->cap = b->cap ? b->cap * 2 : 8;
            b->d = xrealloc(b->d, b->cap * sizeof *b->d);
        }
        b->d[b->n++] = (uint32_t)(carry % BN_BASE);
        carry /= BN_BASE;
    }
}

/* b -= sub, assuming b >= sub. */
static void bn_sub_small(bnum *b, uint32_t sub)
{
    uint64_t borrow = sub;
    for (size_t i = 0; i < b->n && borrow; i++) {
        uint64_t cur = b->d[i];
        if (cur >= borrow) {
            b->d[i] = (uint32_t)(cur - borrow);
            borrow = 0;
        } else {
            uint64_t need = borrow - cur;
            uint64_t k = (need + BN_BASE - 1) / BN_BASE;
            b->d[i] = (uint32_t)(cur + k * BN_BASE - borrow);
            borrow = k;
        }
    }
    while (b->n && b->d[b->n - 1] == 0)
        b->n--;
}

/* A new integer value: int64 when it fits, else a bigint of the decimal digits. */
static hv *bn_to_value(const bnum *b, bool neg)
{
    if (b->n == 0)
        return hv_int(0);
    if (b->n <= 3) {
        /* at most 27 digits: fits when the top limb is small enough */
        uint64_t v = 0;
        bool fits = true;
        for (size_t i = b->n; i-- > 0 && fits;) {
            if (v > (UINT64_MAX - b->d[i]) / BN_BASE)
                fits = false;
            else
                v = v * BN_BASE + b->d[i];
        }
        if (fits && !neg && v <= (uint64_t)INT64_MAX)
            return hv_int((int64_t)v);
        if (fits && neg && v <= (uint64_t)INT64_MAX + 1)
            return hv_int(v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v);
    }
    sbuf s = {0};
    if (neg)
        sb_addc(&s, '-');
    sb_addf(&s, "%u", b->d[b->n - 1]);
    for (size_t i = b->n - 1; i-- > 0;)
        sb_addf(&s, "%09u", b->d[i]);
    hv *v = hv_bigint(sb_str(&s), s.len);
    sb_free(&s);
    return v;
}

/* Decimal digits (no sign, no separators) to an integer value, in linear time. */
static hv *decimal_value(const char *digits, size_t n, bool neg)
{
    while (n > 1 && digits[0] == '0') {
        digits++;
        n--;
    }
    if (n <= 18) {
        int64_t v = 0;
        for (size_t i = 0; i < n; i++)
            v = v * 10 + (digits[i] - '0');
        return hv_int(neg ? -v : v);
    }
    /* May still fit (19 digits up to 9223372036854775807/8). */
    if (n == 19) {
        const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
        if (memcmp(digits, lim, 19) <= 0) {
            uint64_t v = 0;
            for (size_t i = 0; i < n; i++)
                v = v * 10 + (uint64_t)(digits[i] - '0');
            return hv_int(neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v);
        }
    }
    sbuf s = {0};
    if (neg)
        sb_addc(&s, '-');
    sb_addn(&s, digits, n);
    hv *v = hv_bigint(sb_str(&s), s.len);
    sb_free(&s);
    return v;
}

/* Decimal digits into a bnum, linear time. */
static void bn_from_decimal(bnum *b, const char *digits, size_t n)
{
    b->n = 0;
    size_t nl = n / 9 + 1;
    if (b->cap < nl) {
        b->cap = nl;
        b->d = xrealloc(b->d, b->cap * sizeof *b->d);
    }
    size_t end = n;
    while (end > 0) {
        size_t start = end >= 9 ? end - 9 : 0;
        uint32_t limb = 0;
        for (size_t i = start; i < end; i++)
            limb = limb * 10 + (uint32_t)(digits[i] - '0');
        b->d[b->n++] = limb;
        end = start;
    }
    while (b->n && b->d[b->n - 1] == 0)
        b->n--;
}

/* Ruby's String#to_i / #to_f prefix rules for the sexagesimal parts: an optional sign, then
 * digits where a single underscore may separate two digits (and for to_f one '.' followed by
 * more such digits); anything else ends the number. Appends the accepted text, without
 * underscores, to out. */
static void ruby_num_prefix(const char *s, size_t n, bool allow_dot, sbuf *out)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        sb_addc(out, s[i++]);
    bool dot = false;
    while (i < n) {
        char ch = s[i];
        if (is_digit(ch)) {
            sb_addc(out, ch);
            i++;
        } else if (ch == '_' && i > 0 && is_digit(s[i - 1]) && i + 1 < n && is_digit(s[i + 1])) {
            i++;
        } else if (ch == '.' && allow_dot && !dot) {
            dot = true;
            sb_addc(out, ch);
            i++;
        } else {
            break;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Psych::ScalarScanner#tokenize, by hand                                                      */

static bool ieq(const char *s, size_t n, const char *word)
{
    size_t wl = strlen(word);
    if (n != wl)
        return false;
    for (size_t i = 0; i < n; i++) {
        char a = s[i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != word[i])
            return false;
    }
    return true;
}

enum { W_STRING, W_NULL, W_TRUE, W_FALSE };

/* The first branch of tokenize (taken for every string holding a newline, and for the words):
 *   return string if string.length > 5
 *   string if /^[^ytonf~]/i, nil if '~' or /^null$/i, true if /^(yes|true|on)$/i,
 *   false if /^(no|false|off)$/i, else string
 * Ruby's ^ and $ match at every line, so "on\nno" is true (a Psych quirk). */
static int word_branch(const char *s, size_t n)
{
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            chars++;
    if (chars > 5)
        return W_STRING;
    for (size_t p = 0; p < n;) { /* /^[^ytonf~]/i: a line that starts with another char */
        if (!strchr("ytonfYTONF~", s[p]) || s[p] == 0)
            return W_STRING;
        const char *nl = memchr(s + p, '\n', n - p);
        if (!nl)
            break;
        p = (size_t)(nl - s) + 1;
    }
    if (n == 1 && s[0] == '~')
        return W_NULL;
    static const struct {
        const char *w;
        int kind;
    } words[] = {{"null", W_NULL}, {"yes", W_TRUE}, {"true", W_TRUE}, {"on", W_TRUE},
                 {"no", W_FALSE}, {"false", W_FALSE}, {"off", W_FALSE}};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        /* checked in Psych's order: null, then true words, then false words */
        for (size_t p = 0; p <= n;) {
            const char *nl = memchr(s + p, '\n', n - p);
            size_t e = nl ? (size_t)(nl - s) : n;
            if (ieq(s + p, e - p, words[w].w))
                return words[w].kind;
            if (!nl)
                break;
            p = e + 1;
        }
    }
    return W_STRING;
}

static size_t count_digits(const char *s, size_t i, size_t n)
{
    size_t k = 0;
    while (i + k < n && is_digit(s[i + k]))
        k++;
    return k;
}

/* The tail of Psych's TIME regex after the seconds: (?:\.\d*)?(?:\s*(?:Z|[-+]\d{1,2}:?(?:\d\d)?))?$ */
static bool time_tail(const char *s, size_t i, size_t n)
{
    if (i < n && s[i] == '.') {
        i++;
        i += count_digits(s, i, n);
    }
    if (i == n)
        return true;
    while (i < n && is_ruby_space(s[i]))
        i++;
    if (i < n && s[i] == 'Z')
        return i + 1 == n;
    if (i >= n || (s[i] != '+' && s[i] != '-'))
        return false;
    i++;
    for (size_t h = 1; h <= 2; h++) { /* \d{1,2}:?(?:\d\d)?$ with backtracking on h */
        if (count_digits(s, i, n) < h)
            break;
        size_t j = i + h;
        if (j < n && s[j] == ':')
            j++;
        if (j == n || (j + 2 == n && count_digits(s, j, n) == 2))
            return true;
    }
    return false;
}

/* TIME = /^-?\d{4}-\d{1,2}-\d{1,2}(?:[Tt]|\s+)\d{1,2}:\d\d:\d\d(?:\.\d*)?(?:\s*(?:Z|[-+]\d{1,2}:?(?:\d\d)?))?$/ */
static bool is_time(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (count_digits(s, i, n) < 4 || i + 4 >= n || s[i + 4] != '-')
        return false;
    if (count_digits(s, i, n) != 4)
        return false;
    i += 5;
    for (int part = 0; part < 2; part++) { /* \d{1,2}- then \d{1,2} */
        size_t k = count_digits(s, i, n);
        if (k < 1 || k > 2)
            return false;
        i += k;
        if (part == 0) {
            if (i >= n || s[i] != '-')
                return false;
            i++;
        }
    }
    if (i < n && (s[i] == 'T' || s[i] == 't')) {
        i++;
    } else {
        size_t sp = 0;
        while (i + sp < n && is_ruby_space(s[i + sp]))
            sp++;
        if (!sp)
            return false;
        i += sp;
    }
    size_t k = count_digits(s, i, n);
    if (k < 1 || k > 2)
        return false;
    i += k;
    for (int part = 0; part < 2; part++) { /* :\d\d twice */
        if (i >= n || s[i] != ':' || count_digits(s, i + 1, n) < 2)
            return false;
        i += 3;
    }
    return time_tail(s, i, n);
}

/* /^\d{4}-(?:1[012]|0\d|\d)-(?:[12]\d|3[01]|0\d|\d)$/ */
static bool is_date(const char *s, size_t n)
{
    if (n < 8 || count_digits(s, 0, n) != 4 || s[4] != '-')
        return false;
    size_t i = 5;
    size_t m = count_digits(s, i, n);
    if (m == 2) {
        if (!(s[i] == '0' || (s[i] == '1' && s[i + 1] <= '2')))
            return false;
    } else if (m != 1) {
        return false;
    }
    i += m;
    if (i >= n || s[i] != '-')
        return false;
    i++;
    size_t d = count_digits(s, i, n);
    if (i + d != n)
        return false;
    if (d == 2)
        return s[i] == '0' || s[i] == '1' || s[i] == '2' || (s[i] == '3' && s[i + 1] <= '1');
    return d == 1;
}

/* /^[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}$/ (want_float: ...\.[0-9_]*$ instead of $).
 * Returns the number of ':' parts (1 or 2), 0 when no match. */
static int sexagesimal_parts(const char *s, size_t n, bool want_float)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i >= n || !is_digit(s[i]))
        return 0;
    while (i < n && (is_digit(s[i]) || s[i] == '_'))
        i++;
    int parts = 0;
    while (parts < 2 && i < n && s[i] == ':') {
        size_t k = count_digits(s, i + 1, n);
        if (k >= 2 && s[i + 1] <= '5')
            k = 2;
        else if (k >= 1)
            k = 1;
        else
            return 0;
        /* [0-5]?[0-9] takes one digit when the second cannot be taken */
        i += 1 + k;
        parts++;
    }
    if (!parts)
        return 0;
    if (!want_float)
        return i == n ? parts : 0;
    if (i >= n || s[i] != '.')
        return 0;
    for (i++; i < n; i++)
        if (!is_digit(s[i]) && s[i] != '_')
            return 0;
    return parts;
}

/* /^(?:[-+]?([0-9][0-9_,]*)?\.[0-9]*([eE][-+][0-9]+)?)$/ */
static bool is_float_form(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i < n && is_digit(s[i]))
        while (i < n && (is_digit(s[i]) || s[i] == '_' || s[i] == ','))
            i++;
    if (i >= n || s[i] != '.')
        return false;
    i++;
    i += count_digits(s, i, n);
    if (i == n)
        return true;
    if (s[i] != 'e' && s[i] != 'E')
        return false;
    i++;
    if (i >= n || (s[i] != '+' && s[i] != '-'))
        return false;
    i++;
    size_t k = count_digits(s, i, n);
    return k > 0 && i + k == n;
}

/* INTEGER_LEGACY: returns the base (2, 8, 10, 16) of the matching branch, 0 when none. */
static int int_form(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i >= n || !is_digit(s[i]))
        return 0;
    const char *b = s + i;
    size_t m = n - i;
    if (m >= 3 && b[0] == '0' && b[1] == 'b') { /* 0b[0-1_,]+ */
        for (size_t j = 2; j < m; j++)
            if (b[j] != '0' && b[j] != '1' && b[j] != '_' && b[j] != ',')
                return 0;
        return 2;
    }
    if (m >= 3 && b[0] == '0' && b[1] == 'x') { /* 0x[0-9a-fA-F_,]+ */
        for (size_t j = 2; j < m; j++)
            if (hex_val(b[j]) < 0 && b[j] != '_' && b[j] != ',')
                return 0;
        return 16;
    }
    if (b[0] == '0') {
        if (m == 1)
            return 10;
        for (size_t j = 1; j < m; j++) /* 0[0-7_,]+ */
            if (!(b[j] >= '0' && b[j] <= '7') && b[j] != '_' && b[j] != ',')
                return 0;
        return 8;
    }
    /* [1-9](?:[0-9]|,[0-9]|_[0-9])* */
    for (size_t j = 1; j < m; j++) {
        if (is_digit(b[j]))
            continue;
        if ((b[j] == ',' || b[j] == '_') && j + 1 < m && is_digit(b[j + 1])) {
            j++;
            continue;
        }
        return 0;
    }
    return 10;
}

/* Integer(string.delete(',_')) for a string of the given INTEGER_LEGACY branch. */
static hv *parse_int(yctx *c, const ynode *nd, const char *s, size_t n, int base)
{
    sbuf t = {0};
    for (size_t i = 0; i < n; i++)
        if (s[i] != ',' && s[i] != '_')
            sb_addc(&t, s[i]);
    const char *p = sb_str(&t);
    size_t len = t.len, i = 0;
    bool neg = false;
    if (p[0] == '+' || p[0] == '-') {
        neg = p[0] == '-';
        i++;
    }
    if (base == 2 || base == 16)
        i += 2; /* 0b / 0x */
    else if (base == 8)
        i += 1;
    hv *v = NULL;
    if (i >= len && base != 8 && base != 10) {
        fail_invalid_value(c, nd, "Integer", p, len); /* "0b_" -> Integer("0b") */
    } else if (base == 10 || (base == 8 && i >= len)) {
        v = decimal_value(p + (base == 8 ? i - 1 : i), len - i + (base == 8 ? 1 : 0), neg);
    } else if (len - i > YAML_MAX_RADIX_DIGITS) {
        fail_at(c, nd->line, nd->col, "YAML document too large (integer literal of %zu digits)", len - i);
    } else {
        bnum b = {0};
        uint32_t bits = base == 2 ? 1 : base == 8 ? 3 : 4;
        uint32_t chunk = 0, nchunk = 0;
        for (; i < len; i++) {
            chunk = (chunk << bits) | (uint32_t)hex_val(p[i]);
            if (++nchunk * bits >= 28) {
                bn_mul_add(&b, 1u << (nchunk * bits), chunk);
                chunk = nchunk = 0;
            }
        }
        if (nchunk)
            bn_mul_add(&b, 1u << (nchunk * bits), chunk);
        v = bn_to_value(&b, neg);
        free(b.d);
    }
    sb_free(&t);
    return v;
}

/* "1:30" -> 5400: Psych sums n.to_i * 60 ** (e - 2).abs over the parts, so two parts weigh
 * 3600 and 60 (a Psych bug kept here: 1:30 is not 90). */
static hv *sexagesimal_int(const char *s, size_t n, int parts)
{
    sbuf first = {0};
    const char *colon = memchr(s, ':', n);
    ruby_num_prefix(s, (size_t)(colon - s), false, &first);
    const char *d = sb_str(&first);
    bool neg = d[0] == '-';
    size_t skip = (d[0] == '-' || d[0] == '+') ? 1 : 0;
    uint32_t rest = 0;
    const char *p = colon + 1;
    for (int k = 1; k <= parts; k++) {
        uint32_t v = 0;
        while (p < s + n && is_digit(*p))
            v = v * 10 + (uint32_t)(*p++ - '0');
        p++; /* ':' */
        rest += v * (k == 1 ? 60u : 1u);
    }
    bnum b = {0};
    bn_from_decimal(&b, d + skip, first.len - skip);
    sb_free(&first);
    hv *v;
    if (b.n == 0) {
        v = hv_int((int64_t)rest);
    } else {
        bn_mul_add(&b, 3600, 0);
        if (neg)
            bn_sub_small(&b, rest); /* -(f * 3600) + rest = -(f * 3600 - rest), rest < 3600 */
        else
            bn_mul_add(&b, 1, rest);
        v = bn_to_value(&b, neg);
    }
    free(b.d);
    return v;
}

/* "1:30.5" -> 5430.0: the same sum with n.to_f. */
static hv *sexagesimal_float(const char *s, size_t n)
{
    double acc = 0;
    static const double weight[3] = {3600.0, 60.0, 1.0};
    size_t start = 0;
    for (int e = 0; start <= n && e < 3; e++) {
        const char *colon = memchr(s + start, ':', n - start);
        size_t end = colon ? (size_t)(colon - s) : n;
        sbuf t = {0};
        ruby_num_prefix(s + start, end - start, true, &t);
        acc += c_strtod(sb_str(&t), NULL) * weight[e];
        sb_free(&t);
        if (!colon)
            break;
        start = end + 1;
    }
    return hv_float(acc);
}

/* The FLOAT branch: Float(string.delete(',_').gsub(/\.([Ee]|$)/, '\1')). */
static hv *parse_float_form(yctx *c, const ynode *nd, const char *s, size_t n)
{
    sbuf t = {0};
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == ',' || ch == '_')
            continue;
        if (ch == '.') {
            /* drop a dot followed by e/E or at the end (after separators are gone) */
            size_t j = i + 1;
            while (j < n && (s[j] == ',' || s[j] == '_'))
                j++;
            if (j == n || s[j] == 'e' || s[j] == 'E')
                continue;
        }
        sb_addc(&t, ch);
    }
    /* What is left is [-+]?digits?(.digits)?([eE][-+]digits)?; Ruby's Float() wants a digit
     * before the exponent: ".e+3" becomes "e+3", an ArgumentError. */
    const char *p = sb_str(&t);
    size_t i = (p[0] == '+' || p[0] == '-') ? 1 : 0;
    hv *v = NULL;
    if (!(is_digit(p[i]) || (p[i] == '.' && is_digit(p[i + 1]))))
        fail_invalid_value(c, nd, "Float", p, t.len);
    else
        v = hv_float(c_strtod(p, NULL));
    sb_free(&t);
    return v;
}

/* Psych::ScalarScanner#tokenize. Returns a new value, or NULL after failing. */
static hv *tokenize(yctx *c, const ynode *nd, const char *s, size_t n)
{
    if (n == 0)
        return hv_undef();
    bool nl = memchr(s, '\n', n) != NULL;
    int w = word_branch(s, n);
    /* Strings with a newline always take the first branch; without one, only the words take
     * it in a way that matters (everything else it catches would end up a string anyway). */
    if (nl || w != W_STRING) {
        switch (w) {
        case W_NULL: return hv_undef();
        case W_TRUE: return hv_true();
        case W_FALSE: return hv_false();
        default: return hv_strn(s, n);
        }
    }
    if (is_time(s, n)) { /* parse_time loads the Time class first */
        fail_class(c, nd, "Time", 4);
        return NULL;
    }
    if (is_date(s, n)) { /* class_loader.date before strptime: even 2024-02-31 */
        fail_class(c, nd, "Date", 4);
        return NULL;
    }
    if (ieq(s, n, ".inf") || ieq(s, n, "+.inf"))
        return hv_float(INFINITY);
    if (ieq(s, n, "-.inf"))
        return hv_float(-INFINITY);
    if (ieq(s, n, ".nan"))
        return hv_float(NAN);
    if (n >= 2 && s[0] == ':') {
        if (!symbol_permitted(c)) { /* class_loader.symbolize loads Symbol first */
            fail_class(c, nd, "Symbol", 6);
            return NULL;
        }
        /* /^:(["'])(.*)\1/ (greedy, not anchored at the end) else the text after ':' */
        const char *name = s + 1;
        size_t nlen = n - 1;
        if (s[1] == '"' || s[1] == '\'') {
            for (size_t j = n; j-- > 2;) {
                if (s[j] == s[1]) {
                    name = s + 2;
                    nlen = j - 2;
                    if (nlen && name[0] == ':') { /* $2.sub(/^:/, '') */
                        name++;
                        nlen--;
                    }
                    break;
                }
            }
        }
        return hv_symbol(name, nlen);
    }
    int parts = sexagesimal_parts(s, n, false);
    if (parts)
        return sexagesimal_int(s, n, parts);
    if (sexagesimal_parts(s, n, true))
        return sexagesimal_float(s, n);
    if (is_float_form(s, n)) {
        size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
        if (n == i + 1) /* /\A[-+]?\.\Z/ stays a string */
            return hv_strn(s, n);
        return parse_float_form(c, nd, s, n);
    }
    int base = int_form(s, n);
    if (base)
        return parse_int(c, nd, s, n, base);
    return hv_strn(s, n);
}

/* ------------------------------------------------------------------------------------------ */
/* Tags on scalars (ToRuby#deserialize)                                                        */

/* String#unpack('m'): lenient base64 as Ruby's pack.c decodes it (skips foreign characters,
 * stops at '=' in the third or fourth place of a group). */
static int b64_val(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

static hv *base64_decode(const char *s, size_t n)
{
    char *out = xmalloc(n / 4 * 3 + 4);
    size_t o = 0, i = 0;
    int a = -1, b = -1, cc = -1, d = -1;
#define B64_AT(k) ((k) < n ? b64_val((unsigned char)s[k]) : -1)
    while (i < n) {
        a = b = cc = d = -1;
        while (i < n && (a = B64_AT(i)) == -1)
            i++;
        if (i >= n) {
            a = -1;
            break;
        }
        i++;
        while (i < n && (b = B64_AT(i)) == -1)
            i++;
        if (i >= n) {
            b = -1;
            break;
        }
        i++;
        while (i < n && (cc = B64_AT(i)) == -1 && s[i] != '=')
            i++;
        if (i >= n || s[i] == '=') {
            cc = -1;
            break;
        }
        i++;
        while (i < n && (d = B64_AT(i)) == -1 && s[i] != '=')
            i++;
        if (i >= n || s[i] == '=') {
            d = -1;
            break;
        }
        i++;
        out[o++] = (char)(a << 2 | b >> 4);
        out[o++] = (char)(b << 4 | cc >> 2);
        out[o++] = (char)(cc << 6 | d);
        a = -1;
    }
#undef B64_AT
    if (a != -1 && b != -1) {
        out[o++] = (char)(a << 2 | b >> 4);
        if (cc != -1)
            out[o++] = (char)(b << 4 | cc >> 2);
    }
    out[o] = 0;
    return hv_str_take(out, o);
}

/* Digits (hex digits when hex) where a single underscore may stand between two digits, copied
 * to t without the underscores; returns how many digits were taken. */
static size_t float_digits(const char *s, size_t *pi, size_t e, bool hex, sbuf *t)
{
    size_t i = *pi, k = 0;
    while (i < e) {
        bool d = hex ? hex_val(s[i]) >= 0 : is_digit(s[i]);
        if (d) {
            sb_addc(t, s[i++]);
            k++;
        } else if (s[i] == '_' && k && i + 1 < e && (hex ? hex_val(s[i + 1]) >= 0 : is_digit(s[i + 1]))) {
            i++;
        } else {
            break;
        }
    }
    *pi = i;
    return k;
}

/* Ruby's strict Float(string): optional blanks around, a sign, then decimal digits with
 * single underscores between digits, an optional fraction (a digit must follow the dot) and
 * exponent, or 0x hex. Returns false when Ruby raises ArgumentError. */
static bool ruby_float_str(const char *s, size_t n, double *out)
{
    size_t i = 0, e = n;
    while (i < n && is_ruby_space(s[i]))
        i++;
    while (e > i && is_ruby_space(s[e - 1]))
        e--;
    sbuf t = {0};
    if (i < e && (s[i] == '+' || s[i] == '-'))
        sb_addc(&t, s[i++]);
    bool ok = true, hex = false;
    if (i + 1 < e && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        hex = true;
        sb_addn(&t, "0x", 2);
        i += 2;
    }
    size_t mant = float_digits(s, &i, e, hex, &t);
    bool frac_seen = false, exp_seen = false;
    if (hex && !mant)
        ok = false; /* "0x.8p1" */
    if (i < e && s[i] == '.') {
        sb_addc(&t, '.');
        i++;
        size_t frac = float_digits(s, &i, e, hex, &t);
        if (!frac)
            ok = false;
        mant += frac;
        frac_seen = true;
    }
    if (!mant)
        ok = false;
    if (ok && i < e && (hex ? (s[i] == 'p' || s[i] == 'P') : (s[i] == 'e' || s[i] == 'E'))) {
        sb_addc(&t, s[i++]);
        if (i < e && (s[i] == '+' || s[i] == '-'))
            sb_addc(&t, s[i++]);
        if (!float_digits(s, &i, e, false, &t))
            ok = false;
        exp_seen = true;
    }
    if (hex && frac_seen && !exp_seen)
        ok = false; /* "0x1.8": a hex fraction needs a binary exponent */
    if (i != e)
        ok = false;
    if (ok)
        *out = c_strtod(sb_str(&t), NULL);
    sb_free(&t);
    return ok;
}

/* Float(tokenize(value)) for !!float / !float. */
static hv *float_tag(yctx *c, const ynode *nd, const char *s, size_t n)
{
    hv *t = tokenize(c, nd, s, n);
    if (!t)
        return NULL;
    hv *v = NULL;
    switch (hv_kind_of(t)) {
    case HV_FLOAT: v = hv_incref(t); break;
    case HV_INT: v = hv_float((double)hv_int_val(t)); break;
    case HV_BIGINT: v = hv_float(c_strtod(hv_bigint_digits(t), NULL)); break;
    case HV_UNDEF: fail_at(c, nd->line, nd->col, "can't convert nil into Float"); break;
    case HV_BOOL:
        fail_at(c, nd->line, nd->col, "can't convert %s into Float", hv_bool_val(t) ? "true" : "false");
        break;
    case HV_SYMBOL: fail_at(c, nd->line, nd->col, "can't convert Symbol into Float"); break;
    default: {
        double d;
        if (memchr(hv_str_ptr(t), 0, hv_str_len(t)))
            fail_at(c, nd->line, nd->col, "string for Float contains null byte");
        else if (ruby_float_str(hv_str_ptr(t), hv_str_len(t), &d))
            v = hv_float(d);
        else
            fail_invalid_value(c, nd, "Float", hv_str_ptr(t), hv_str_len(t));
    }
    }
    hv_decref(t);
    return v;
}

static bool tag_is(const char *tag, const char *want) { return strcmp(tag, want) == 0; }

static const char *tag_prefix(const char *tag, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(tag, prefix, n) == 0 ? tag + n : NULL;
}

/* ClassLoader::Restricted#load(name) for a class named by a tag, where the caller goes on to
 * allocate an instance: "" is nil (NoMethodError on nil), Symbol is permitted but cannot be
 * allocated, anything else is a DisallowedClass. Always fails. */
static void fail_resolve_alloc(yctx *c, const ynode *nd, const char *name)
{
    if (!*name)
        fail_at(c, nd->line, nd->col, "undefined method `allocate' for nil:NilClass");
    else if (tag_is(name, "Symbol") && symbol_permitted(c))
        fail_at(c, nd->line, nd->col, "allocator undefined for Symbol");
    else
        fail_class(c, nd, name, strlen(name));
}

/* /^!(?:str|ruby\/string)(?::(.*))?$/ or tag:yaml.org,2002:str. Sets *klass to the class
 * name ($1, NULL when absent). */
static bool is_str_tag(const char *tag, const char **klass)
{
    *klass = NULL;
    if (tag_is(tag, "tag:yaml.org,2002:str"))
        return true;
    const char *r = tag_prefix(tag, "!str");
    if (!r)
        r = tag_prefix(tag, "!ruby/string");
    if (!r)
        return false;
    if (!*r)
        return true;
    if (*r != ':')
        return false;
    *klass = r + 1;
    return true;
}

/* ToRuby#deserialize: a scalar node to a value. */
static hv *scalar_value(yctx *c, const ynode *nd)
{
    const char *s = pool_str(c, nd->val);
    size_t n = nd->vlen;
    if (nd->quoted)
        return hv_strn(s, n);
    if (!nd->tag)
        return tokenize(c, nd, s, n);
    const char *tag = pool_str(c, nd->tag - 1), *klass, *r;
    if (tag_is(tag, "!binary") || tag_is(tag, "tag:yaml.org,2002:binary"))
        return base64_decode(s, n);
    if (is_str_tag(tag, &klass)) {
        if (klass && *klass) {
            fail_resolve_alloc(c, nd, klass);
            return NULL;
        }
        return hv_strn(s, n);
    }
    if (tag_is(tag, "!ruby/object:BigDecimal") || tag_is(tag, "!ruby/object:DateTime") ||
        tag_is(tag, "!ruby/object:Complex") || tag_is(tag, "!ruby/object:Rational")) {
        fail_class(c, nd, tag + 13, strlen(tag + 13));
        return NULL;
    }
    if (tag_is(tag, "!ruby/encoding")) {
        /* Encoding.find(value): an Encoding object, which libhiera has no value for */
        fail_at(c, nd->line, nd->col, "unsupported Ruby object in YAML: !ruby/encoding %.*s", (int)n, s);
        return NULL;
    }
    if (tag_is(tag, "!ruby/class") || tag_is(tag, "!ruby/module")) {
        if (n == 0)
            return hv_undef(); /* class_loader.load("") is nil */
        if (n == 6 && memcmp(s, "Symbol", 6) == 0 && symbol_permitted(c))
            fail_at(c, nd->line, nd->col, "unsupported Ruby object in YAML: %s Symbol", tag);
        else
            fail_class(c, nd, s, n);
        return NULL;
    }
    if (tag_is(tag, "tag:yaml.org,2002:float") || tag_is(tag, "!float"))
        return float_tag(c, nd, s, n);
    if (tag_is(tag, "!ruby/regexp")) {
        fail_class(c, nd, "Regexp", 6);
        return NULL;
    }
    if (tag_is(tag, "!ruby/range")) {
        fail_class(c, nd, "Range", 5);
        return NULL;
    }
    if ((r = tag_prefix(tag, "!ruby/sym")) != NULL) { /* /^!ruby\/sym(bol)?:?(.*)?$/ */
        if (!symbol_permitted(c)) {
            fail_class(c, nd, "Symbol", 6);
            return NULL;
        }
        return hv_symbol(s, n);
    }
    /* every other tag (!!int, !!bool, !!null, !custom, !ruby/object:Foo on a scalar...) is
     * ignored: the value is tokenized as if untagged, even when it was quoted */
    return tokenize(c, nd, s, n);
}

/* ------------------------------------------------------------------------------------------ */
/* Pass 2: the tree to values, with an explicit stack of frames                               */

typedef enum {
    F_SEQ,      /* an Array */
    F_OMAP,     /* !!omap on a sequence: a Psych::Omap (a Hash) */
    F_MAP,      /* revive_hash: a Hash, with merge keys */
    F_STRMAP,   /* !!str on a mapping: the value of its "str" key */
    F_HIVARS,   /* !ruby/hash-with-ivars: "elements" and "ivars" */
    F_IVARS,    /* the "ivars" mapping of the above (accepted, then dropped) */
    F_FAIL,     /* !ruby/exception: children are accepted, then the class is refused */
} frame_kind;

typedef struct {
    frame_kind kind;
    uint32_t node;   /* the node whose children are walked */
    uint32_t owner;  /* the node the result belongs to (anchor, line) */
    uint32_t cur;    /* current child + 1 (0: not started) */
    uint32_t entry;  /* F_OMAP: current entry node + 1 */
    int stage;       /* 0: next is a key (or entry), 1: next is a value */
    bool borrowed;   /* F_MAP into another frame's hash: no value of its own */
    hv *result;
    hv *key;
    char *fail_msg;  /* F_FAIL: the class; F_STRMAP: the NameError of the first bad ivar */
    size_t members;  /* F_STRMAP: keys other than "str" */
    bool first_bad;  /* F_STRMAP: the first member's ivar name is bad */
    uint64_t gen;    /* anchor registration at the start */
    bool sym_class;  /* F_STRMAP: tagged !str:Symbol */
} frame;

typedef struct {
    yctx *c;
    frame *f;
    size_t n, cap;
} fstack;

static frame *push_frame(fstack *st, frame_kind kind, uint32_t node, uint32_t owner, hv *result)
{
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 32;
        st->f = xrealloc(st->f, st->cap * sizeof *st->f);
    }
    frame *f = &st->f[st->n++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->node = node;
    f->owner = owner;
    f->result = result;
    return f;
}

static void free_frame(frame *f)
{
    if (!f->borrowed)
        hv_decref(f->result);
    hv_decref(f->key);
    free(f->fail_msg);
}

static hv *new_container(yctx *c, const ynode *nd, bool hash)
{
    if (!spend(c, 1, nd->line))
        return NULL;
    hv *v = hash ? hv_hash() : hv_array();
    hv_set_line(v, nd->line);
    return v;
}

/* Hash keys are hashed deeply (as Ruby's Array#hash): refuse a key that expands beyond the
 * budget (an alias bomb used as a key), so hashing it stays cheap. */
static bool key_ok(yctx *c, const ynode *nd, const hv *key)
{
    if (!hv_is(key, HV_ARRAY) && !hv_is(key, HV_HASH))
        return true;
    const hv **stack = NULL;
    size_t n = 0, cap = 0, seen = 0;
    bool ok = true;
#define KPUSH(v)                                                                             \
    do {                                                                                     \
        if (n == cap) {                                                                      \
            cap = cap ? cap * 2 : 64;                                                        \
            stack = xrealloc(stack, cap * sizeof *stack);                                    \
        }                                                                                    \
        stack[n++] = (v);                                                                    \
    } while (0)
    KPUSH(key);
    while (n && ok) {
        const hv *v = stack[--n];
        if (++seen > 1000000) {
            ok = false;
            break;
        }
        if (hv_is(v, HV_ARRAY)) {
            for (size_t i = 0; i < hv_array_len(v); i++)
                KPUSH(hv_array_get(v, i));
        } else if (hv_is(v, HV_HASH)) {
            for (size_t i = 0; i < hv_hash_len(v); i++) {
                KPUSH(hv_hash_key_at(v, i));
                KPUSH(hv_hash_val_at(v, i));
            }
        }
    }
#undef KPUSH
    free(stack);
    if (ok)
        ok = spend(c, seen, nd->line);
    else
        fail_at(c, nd->line, nd->col, "YAML document too large (a hash key expands to more than 1000000 nodes)");
    return ok;
}

/* hash.merge!(src): existing keys keep their place, new ones are appended. */
static bool merge_into(yctx *c, const ynode *nd, hv *hash, const hv *src)
{
    size_t n = hv_hash_len(src);
    if (!spend(c, n, nd->line))
        return false;
    for (size_t i = 0; i < n; i++)
        hv_hash_set(hash, hv_incref(hv_hash_key_at(src, i)), hv_incref(hv_hash_val_at(src, i)));
    return true;
}

static bool is_merge_key(yctx *c, const hv *key, const ynode *knode)
{
    if (!hv_is(key, HV_STRING) || hv_str_len(key) != 2 || memcmp(hv_str_ptr(key), "<<", 2) != 0)
        return false;
    return !(knode->tag && tag_is(pool_str(c, knode->tag - 1), "tag:yaml.org,2002:str"));
}

/* The Hash a merge key would merge: v itself, or for a placeholder of a Hash still being built,
 * that Hash as it is so far (Psych merges the very object). NULL when not a Hash. */
static hv *as_hash(fstack *st, hv *v)
{
    if (hv_is(v, HV_HASH))
        return v;
    if (!hv_is(v, HV_SYMBOL))
        return NULL;
    yctx *c = st->c;
    for (size_t i = 0; i < c->nrecs; i++) {
        if (c->recs[i].ph != v)
            continue;
        size_t fi = c->recs[i].frame;
        if (fi < st->n && hv_is(st->f[fi].result, HV_HASH) && !st->f[fi].borrowed)
            return st->f[fi].result;
        return NULL;
    }
    return NULL;
}

/* One key/value pair of revive_hash. Steals key and val. */
static bool map_pair(fstack *st, hv *hash, hv *key, const ynode *knode, const ynode *vnode, hv *val)
{
    yctx *c = st->c;
    if (!is_merge_key(c, key, knode)) {
        if (!key_ok(c, knode, key)) {
            hv_decref(key);
            hv_decref(val);
            return false;
        }
        hv_hash_set(hash, key, val);
        return true;
    }
    bool ok = true, merged = false;
    if ((vnode->type == N_ALIAS || vnode->type == N_MAP) && as_hash(st, val)) {
        hv *src = as_hash(st, val);
        if (src != hash) /* merging a hash into itself changes nothing */
            ok = merge_into(c, vnode, hash, src);
        merged = true;
    } else if (vnode->type == N_SEQ && hv_is(val, HV_ARRAY)) {
        /* h = {}; val.reverse_each { |v| h.merge!(v) }; hash.merge!(h) - a TypeError (a
         * non-hash element) makes the whole list the value of "<<" */
        size_t n = hv_array_len(val);
        bool all_hashes = true;
        for (size_t i = 0; i < n && all_hashes; i++)
            all_hashes = as_hash(st, hv_array_get(val, i)) != NULL;
        if (all_hashes) {
            hv *h = hv_hash();
            for (size_t i = n; i-- > 0 && ok;)
                ok = merge_into(c, vnode, h, as_hash(st, hv_array_get(val, i)));
            if (ok)
                ok = merge_into(c, vnode, hash, h);
            hv_decref(h);
            merged = true;
        }
    } else if (vnode->type == N_SEQ && hv_is(val, HV_HASH) && hv_hash_len(val) == 0) {
        merged = true; /* an empty !!omap: reverse_each yields nothing */
    }
    if (merged) {
        hv_decref(key);
        hv_decref(val);
        return ok;
    }
    hv_hash_set(hash, key, val);
    return true;
}

/* Ruby's instance variable names: "@" then a letter, '_' or non-ASCII, then also digits. */
static bool ivar_name_ok(const char *s, size_t n)
{
    if (n < 2 || s[0] != '@')
        return false;
    for (size_t i = 1; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch >= 0x80;
        if (!alpha && !(i > 1 && ch >= '0' && ch <= '9'))
            return false;
    }
    return true;
}

/* What ToRuby does with a node: produce its value now, push a frame, or fail. */
enum { ST_VALUE, ST_PUSHED, ST_ERROR };

static int begin_seq(fstack *st, uint32_t idx, hv **out)
{
    yctx *c = st->c;
    const ynode *nd = &c->nodes[idx];
    const char *tag = nd->tag ? pool_str(c, nd->tag - 1) : NULL;
    frame_kind kind = F_SEQ;
    if (tag && (tag_is(tag, "!omap") || tag_is(tag, "tag:yaml.org,2002:omap"))) {
        kind = F_OMAP;
    } else if (tag) {
        const char *r = tag_prefix(tag, "!seq:");
        if (!r)
            r = tag_prefix(tag, "!ruby/array:");
        if (r) {
            fail_resolve_alloc(c, nd, r);
            return ST_ERROR;
        }
    }
    hv *v = new_container(c, nd, kind == F_OMAP);
    if (!v)
        return ST_ERROR;
    uint64_t gen = anchor_set(c, nd, NULL, st->n); /* registered before the children */
    push_frame(st, kind, idx, idx, v)->gen = gen;
    (void)out;
    return ST_PUSHED;
}

static int begin_map(fstack *st, uint32_t idx, hv **out)
{
    yctx *c = st->c;
    const ynode *nd = &c->nodes[idx];
    const char *tag = nd->tag ? pool_str(c, nd->tag - 1) : NULL, *r, *klass;
    frame_kind kind = F_MAP;
    bool sym_class = false;
    (void)out;
    if (!tag) {
        kind = F_MAP;
    } else if ((r = tag_prefix(tag, "!ruby/struct")) != NULL) {
        if (*r == ':')
            r++;
        if (*r)
            fail_resolve_alloc(c, nd, r);
        else
            fail_class(c, nd, "Struct", 6);
        return ST_ERROR;
    } else if ((r = tag_prefix(tag, "!ruby/object")) != NULL) {
        if (*r == ':')
            r++;
        if (c->mode == YAML_PUPPET_FACTS_CACHE && tag_is(r, "Puppet::Node::Facts") &&
            (idx == c->root || !c->plain_too || c->facts_root)) {
            /* revive(Puppet::Node::Facts, o): its init_with gets the members as a Hash */
            if (idx != c->root) {
                fail_at(c, nd->line, nd->col,
                        "(%s): a Puppet::Node::Facts object inside the facts is not supported (only the document itself may be one)",
                        c->name);
                return ST_ERROR;
            }
            c->facts_root = true;
        } else if (!tag_is(r, "Hash")) { /* !ruby/object:Hash is a plain Hash */
            if (!*r)
                fail_class(c, nd, "Object", 6);
            else if (tag_is(r, "Symbol") && symbol_permitted(c))
                fail_at(c, nd->line, nd->col, "allocator undefined for Symbol");
            else
                fail_class(c, nd, r, strlen(r));
            return ST_ERROR;
        }
    } else if (is_str_tag(tag, &klass)) {
        if (klass && *klass && !(tag_is(klass, "Symbol") && symbol_permitted(c))) {
            fail_resolve_alloc(c, nd, klass);
            return ST_ERROR;
        }
        kind = F_STRMAP; /* Symbol is permitted; it only fails to allocate at a "str" key */
        sym_class = klass && *klass;
    } else if ((r = tag_prefix(tag, "!ruby/array:")) != NULL) {
        fail_resolve_alloc(c, nd, r);
        return ST_ERROR;
    } else if (tag_is(tag, "!ruby/range")) {
        fail_class(c, nd, "Range", 5);
        return ST_ERROR;
    } else if ((r = tag_prefix(tag, "!ruby/exception")) != NULL) {
        /* Hash[*o.children.map { |c| accept c }] comes before the class is resolved */
        if (*r == ':')
            r++;
        frame *f = push_frame(st, F_FAIL, idx, idx, NULL);
        if (!*r)
            f->fail_msg = xstrdup("Exception");
        else
            f->fail_msg = xstrdup(r);
        return ST_PUSHED;
    } else if (tag_is(tag, "!set") || tag_is(tag, "tag:yaml.org,2002:set")) {
        fail_class(c, nd, "Psych::Set", 10);
        return ST_ERROR;
    } else if ((r = tag_prefix(tag, "!ruby/hash-with-ivars")) != NULL) {
        if (*r == ':') {
            fail_resolve_alloc(c, nd, r + 1);
            return ST_ERROR;
        }
        if (*r)
            kind = F_MAP; /* "!ruby/hash-with-ivarsX" matches no branch: a plain Hash */
        else
            kind = F_HIVARS;
    } else if ((r = tag_prefix(tag, "!map:")) != NULL || (r = tag_prefix(tag, "!ruby/hash:")) != NULL ||
               (r = tag_prefix(tag, "!ruby/marshalable:")) != NULL) {
        fail_resolve_alloc(c, nd, r);
        return ST_ERROR;
    } else if (tag_is(tag, "!omap") || tag_is(tag, "tag:yaml.org,2002:omap")) {
        fail_class(c, nd, "Psych::Omap", 11);
        return ST_ERROR;
    }
    if (kind == F_STRMAP) {
        push_frame(st, F_STRMAP, idx, idx, NULL)->sym_class = sym_class;
        return ST_PUSHED;
    }
    hv *v = new_container(c, nd, true);
    if (!v)
        return ST_ERROR;
    uint64_t gen = anchor_set(c, nd, NULL, st->n);
    push_frame(st, kind, idx, idx, v)->gen = gen;
    return ST_PUSHED;
}

static int begin_node(fstack *st, uint32_t idx, hv **out)
{
    yctx *c = st->c;
    const ynode *nd = &c->nodes[idx];
    switch (nd->type) {
    case N_ALIAS: {
        const char *name = pool_str(c, nd->val);
        /* NoAliasRuby (YAML.load, aliases: false) refuses every alias the same way */
        anchor_slot *s = c->mode == YAML_HIERA3 ? NULL : anchor_find(c, name, false);
        if (!s && c->mode == YAML_HIERA3 && rubyver() == RUBY_33) {
            /* Psych 5 (Ruby 3.3) refuses aliases with AliasesNotEnabled, whatever the name */
            fail_at(c, nd->line, nd->col,
                    "Alias parsing was not enabled. To enable it, pass `aliases: true` to `Psych::load` or `Psych::safe_load`.");
            return ST_ERROR;
        }
        if (!s) {
            /* (Psych 5: AnchorNotDefined, a BadAlias of its own words) */
            fail_at(c, nd->line, nd->col,
                    rubyver() == RUBY_33 ? "An alias referenced an unknown anchor: %s" : "Unknown alias: %s", name);
            return ST_ERROR;
        }
        if (!s->val) {
            /* Psych builds a recursive structure (Puppet then overflows the stack walking
             * it); hv cannot hold one. Later errors still come first, as in Psych. */
            if (!s->ph) {
                /* a fresh object: only its identity matters (the name keeps it unequal to
                 * any symbol of the document and to the other placeholders) */
                char buf[48];
                int bl = snprintf(buf, sizeof buf, "%c<recursive YAML alias %zu>", 0, c->nrecs);
                s->ph = hv_symbol(buf, (size_t)bl);
                c->recs = xrealloc(c->recs, (c->nrecs + 1) * sizeof *c->recs);
                recursion *r = &c->recs[c->nrecs++];
                r->ph = hv_incref(s->ph);
                r->frame = s->frame;
                r->name = xstrdup(name);
                r->line = nd->line;
                r->col = nd->col;
            }
            *out = hv_incref(s->ph);
            return ST_VALUE;
        }
        *out = hv_incref(s->val);
        return ST_VALUE;
    }
    case N_SCALAR: {
        if (!spend(c, 1, nd->line))
            return ST_ERROR;
        hv *v = scalar_value(c, nd);
        if (!v)
            return ST_ERROR;
        hv_set_line(v, nd->line);
        anchor_set(c, nd, v, 0);
        *out = v;
        return ST_VALUE;
    }
    case N_SEQ:
        return begin_seq(st, idx, out);
    default:
        return begin_map(st, idx, out);
    }
}

/* Next child node to convert for the top frame; false when the frame is complete. */
static int frame_next(fstack *st, frame *f, uint32_t *child)
{
    yctx *c = st->c;
    const ynode *nd = &c->nodes[f->node];
    switch (f->kind) {
    case F_OMAP: {
        /* each entry a: map[accept(a.children.first)] = accept(a.children.last) */
        if (f->stage == 1) {
            *child = c->nodes[f->entry - 1].last - 1;
            return ST_PUSHED;
        }
        f->entry = f->entry ? c->nodes[f->entry - 1].next : nd->first;
        if (!f->entry)
            return ST_VALUE;
        const ynode *a = &c->nodes[f->entry - 1];
        if (a->type == N_SCALAR || a->type == N_ALIAS) {
            fail_at(c, a->line, a->col, "undefined method `first' for nil:NilClass");
            return ST_ERROR;
        }
        if (!a->first) {
            fail_at(c, a->line, a->col, "undefined method `visit_NilClass' for Psych::Visitors::ToRuby");
            return ST_ERROR;
        }
        *child = a->first - 1;
        return ST_PUSHED;
    }
    case F_HIVARS:
        for (;;) {
            /* case key.value when 'elements' / 'ivars': keys are not accepted */
            f->cur = f->cur ? c->nodes[c->nodes[f->cur - 1].next - 1].next : nd->first;
            if (!f->cur)
                return ST_VALUE;
            const ynode *k = &c->nodes[f->cur - 1], *v = &c->nodes[k->next - 1];
            if (k->type != N_SCALAR) {
                fail_at(c, k->line, k->col, "undefined method `value' for a Psych::Nodes::%s",
                        k->type == N_ALIAS ? "Alias" : k->type == N_SEQ ? "Sequence" : "Mapping");
                return ST_ERROR;
            }
            const char *kv = pool_str(c, k->val);
            bool elements = k->vlen == 8 && memcmp(kv, "elements", 8) == 0;
            bool ivars = k->vlen == 5 && memcmp(kv, "ivars", 5) == 0;
            if (!elements && !ivars)
                continue;
            if (v->type == N_SCALAR || v->type == N_ALIAS) {
                fail_at(c, v->line, v->col, "undefined method `each_slice' for nil:NilClass");
                return ST_ERROR;
            }
            uint32_t vidx = k->next - 1;
            frame_kind kind = elements ? F_MAP : F_IVARS;
            hv *target = elements ? f->result : NULL; /* borrowed: not released by the sub-frame */
            uint32_t owner = f->owner;
            frame *sub = push_frame(st, kind, vidx, owner, target); /* f may move */
            sub->borrowed = elements;
            *child = UINT32_MAX; /* a frame was pushed */
            return ST_PUSHED;
        }
    case F_SEQ:
    case F_FAIL:
        f->cur = f->cur ? c->nodes[f->cur - 1].next : nd->first;
        if (!f->cur)
            return ST_VALUE;
        *child = f->cur - 1;
        return ST_PUSHED;
    default:
        /* maps: f->cur is the current key; its value is the key's next sibling */
        if (f->stage == 1) {
            uint32_t vi = c->nodes[f->cur - 1].next;
            if (!vi) { /* each_slice(2) over an odd list (elements: given as a sequence) */
                const ynode *k = &c->nodes[f->cur - 1];
                fail_at(c, k->line, k->col, "undefined method `visit_NilClass' for Psych::Visitors::ToRuby");
                return ST_ERROR;
            }
            *child = vi - 1;
            return ST_PUSHED;
        }
        if (!f->cur) {
            f->cur = nd->first;
        } else {
            uint32_t vi = c->nodes[f->cur - 1].next;
            f->cur = vi ? c->nodes[vi - 1].next : 0;
        }
        if (!f->cur)
            return ST_VALUE;
        *child = f->cur - 1;
        return ST_PUSHED;
    }
}

/* Ruby's inspect of a scalar (never a string here: those are names already), malloc'ed. */
static char *ruby_inspect_value(const hv *v)
{
    sbuf b = {0};
    ruby_inspect(&b, v);
    return sb_take(&b);
}

/* The NameError of instance_variable_set(:"@#{k}") for a !!str mapping's member key
 * (k = key.to_s.sub(/^@/, '')), or NULL when the name is fine. */
static char *ivar_error(const hv *key)
{
    sbuf name = {0};
    sb_addc(&name, '@');
    if (hv_is(key, HV_STRING) || hv_is(key, HV_SYMBOL)) {
        const char *k = hv_str_ptr(key);
        size_t kl = hv_str_len(key);
        if (kl && k[0] == '@') {
            k++;
            kl--;
        }
        sb_addn(&name, k, kl);
    } else if (!hv_is(key, HV_UNDEF)) {
        char *t = hv_is_scalar(key) ? ruby_inspect_value(key) : hjson_debug(key);
        sb_adds(&name, t);
        free(t);
    }
    char *msg = NULL;
    if (!ivar_name_ok(sb_str(&name), name.len))
        msg = xasprintf("`%s' is not allowed as an instance variable name", sb_str(&name));
    sb_free(&name);
    return msg;
}

/* Gives the value of the child just converted to the top frame (stealing v). */
static bool frame_take(fstack *st, frame *f, hv *v)
{
    yctx *c = st->c;
    switch (f->kind) {
    case F_SEQ:
        hv_array_push(f->result, v);
        return true;
    case F_OMAP:
        if (f->stage == 0) {
            f->key = v;
            f->stage = 1;
            return true;
        }
        f->stage = 0;
        if (!key_ok(c, &c->nodes[f->entry - 1], f->key)) {
            hv_decref(v);
            return false;
        }
        hv_hash_set(f->result, f->key, v);
        f->key = NULL;
        return true;
    case F_FAIL:
        hv_decref(v);
        return true;
    default:
        break;
    }
    if (f->stage == 0) { /* a key */
        f->key = v;
        f->stage = 1;
        return true;
    }
    f->stage = 0;
    const ynode *knode = &c->nodes[f->cur - 1];
    const ynode *vnode = &c->nodes[knode->next - 1];
    hv *key = f->key;
    f->key = NULL;
    if (f->kind == F_MAP)
        return map_pair(st, f->result, key, knode, vnode, v);
    if (f->kind == F_IVARS) {
        /* hash.instance_variable_set(key, value): the ivar is invisible to us, but a bad
         * name is a NameError */
        bool ok = true;
        if (!hv_is(key, HV_STRING) && !hv_is(key, HV_SYMBOL)) {
            char *dbg = hv_is_scalar(key) || hv_is(key, HV_UNDEF) ? ruby_inspect_value(key) : hjson_debug(key);
            fail_at(c, knode->line, knode->col, "%s is not a symbol nor a string", dbg);
            free(dbg);
            ok = false;
        } else if (!ivar_name_ok(hv_str_ptr(key), hv_str_len(key))) {
            fail_at(c, knode->line, knode->col, "`%s' is not allowed as an instance variable name", hv_str_ptr(key));
            ok = false;
        }
        hv_decref(key);
        hv_decref(v);
        return ok;
    }
    /* F_STRMAP: members[key] = value, except key 'str' which is the string itself */
    if (hv_is(key, HV_STRING) && hv_str_len(key) == 3 && memcmp(hv_str_ptr(key), "str", 3) == 0) {
        if (f->sym_class) { /* klass.allocate.replace value */
            fail_at(c, knode->line, knode->col, "allocator undefined for Symbol");
            hv_decref(key);
            hv_decref(v);
            return false;
        }
        hv_decref(f->result);
        f->result = v;
        anchor_set(c, &c->nodes[f->owner], v, 0);
    } else {
        f->members++;
        char *bad = ivar_error(key);
        if (bad && f->members == 1)
            f->first_bad = true;
        if (bad && !f->fail_msg)
            f->fail_msg = bad;
        else
            free(bad);
        hv_decref(v);
    }
    hv_decref(key);
    return true;
}

/* Ruby's #inspect of a scalar that cannot hold instance variables (FrozenError messages). */
/* The top frame is complete: its value (or NULL with *none for borrowed frames). */
static hv *frame_finish(fstack *st, frame *f, bool *none)
{
    yctx *c = st->c;
    const ynode *owner = &c->nodes[f->owner];
    *none = false;
    switch (f->kind) {
    case F_FAIL:
        if (tag_is(f->fail_msg, "Symbol") && symbol_permitted(c))
            fail_at(c, owner->line, owner->col, "allocator undefined for Symbol");
        else
            fail_class(c, owner, f->fail_msg, strlen(f->fail_msg));
        return NULL;
    case F_IVARS:
        *none = true;
        return NULL;
    case F_STRMAP: {
        hv *v = f->result;
        if (f->members) {
            /* init_with sets the members as instance variables of the string */
            hv_kind k = hv_kind_of(v);
            /* each member: instance_variable_set checks the name, then frozenness */
            if (f->fail_msg && (f->first_bad || !(!v || k == HV_UNDEF || k == HV_BOOL || k == HV_INT ||
                                                  k == HV_BIGINT || k == HV_FLOAT || k == HV_SYMBOL))) {
                fail_at(c, owner->line, owner->col, "%s", f->fail_msg);
                return NULL;
            }
            if (!v || k == HV_UNDEF || k == HV_BOOL || k == HV_INT || k == HV_BIGINT || k == HV_FLOAT ||
                k == HV_SYMBOL) {
                char *dbg = v ? ruby_inspect_value(v) : xstrdup("nil");
                fail_at(c, owner->line, owner->col, "can't modify frozen %s: %s", ruby_class_name(v), dbg);
                free(dbg);
                return NULL;
            }
        }
        f->result = NULL;
        return v ? v : hv_undef();
    }
    default:
        break;
    }
    if (f->borrowed) {
        *none = true;
        return NULL;
    }
    hv *v = f->result;
    f->result = NULL;
    anchor_finish(c, owner, f->gen, v);
    return v;
}

/* A set of shared containers (pointer -> expanded size and depth), open addressing. */
typedef struct {
    const hv *key;
    uint64_t size;
    uint32_t depth;
} pm_ent;
typedef struct {
    pm_ent *e;
    size_t n, cap; /* cap: a power of two or 0 */
} pmap;

static size_t pm_hash(const hv *k, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)k;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

/* The entry of k; with create, a new zeroed entry when absent (*fresh set). */
static pm_ent *pm_get(pmap *m, const hv *k, bool create, bool *fresh)
{
    if (create && (m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        pm_ent *ne = xcalloc(ncap, sizeof *ne);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].key)
                continue;
            size_t j = pm_hash(m->e[i].key, ncap);
            while (ne[j].key)
                j = (j + 1) & (ncap - 1);
            ne[j] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = ncap;
    }
    if (fresh)
        *fresh = false;
    if (!m->cap)
        return NULL;
    size_t j = pm_hash(k, m->cap);
    while (m->e[j].key) {
        if (m->e[j].key == k)
            return &m->e[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!create)
        return NULL;
    m->e[j].key = k;
    m->n++;
    if (fresh)
        *fresh = true;
    return &m->e[j];
}

/* Whether a placeholder of recursive data is still reachable from v (each container is
 * visited once, so shared values cost nothing extra). Psych would hand Puppet recursive data
 * then; a placeholder left only in overwritten values is harmless. */
static const recursion *find_recursion(yctx *c, const hv *v)
{
    const hv **stack = NULL;
    size_t n = 0, cap = 0;
    pmap seen = {0};
    const recursion *found = NULL;
    stack = xrealloc(stack, (cap = 64) * sizeof *stack);
    stack[n++] = v;
    while (n && !found) {
        const hv *x = stack[--n];
        if (hv_is(x, HV_SYMBOL)) {
            for (size_t i = 0; i < c->nrecs && !found; i++)
                if (c->recs[i].ph == x)
                    found = &c->recs[i];
            continue;
        }
        if (!hv_is(x, HV_ARRAY) && !hv_is(x, HV_HASH))
            continue;
        if (hv_is_shared(x)) { /* only shared containers can be met twice */
            bool fresh;
            pm_get(&seen, x, true, &fresh);
            if (!fresh)
                continue;
        }
        size_t k = hv_is(x, HV_ARRAY) ? hv_array_len(x) : 2 * hv_hash_len(x);
        if (cap - n < k)
            stack = xrealloc(stack, (cap = (n + k) * 2) * sizeof *stack);
        for (size_t i = 0; i < k; i++)
            stack[n++] = hv_is(x, HV_ARRAY) ? hv_array_get(x, i)
                                            : (i % 2 ? hv_hash_val_at(x, i / 2) : hv_hash_key_at(x, i / 2));
    }
    free(stack);
    free(seen.e);
    return found;
}

/* What a full walk of v meets: *size values (aliases counted each time) and *depth levels of
 * containers (v's own included; 0 for a scalar). Shared containers are measured once (memo).
 * level is the number of containers above v: a container at a level past YAML_MAX_VALUE_DEPTH
 * fails, so the recursion never goes deeper. Returns false, with *size or *depth past its cap,
 * as soon as a cap is passed. */
static bool expansion(pmap *memo, const hv *v, uint32_t level, uint64_t *size, uint32_t *depth)
{
    bool arr = hv_is(v, HV_ARRAY);
    *size = 1;
    *depth = 0;
    if (!arr && !hv_is(v, HV_HASH))
        return true;
    bool shared = hv_is_shared(v);
    if (shared) {
        const pm_ent *e = pm_get(memo, v, false, NULL);
        if (e) {
            *size = e->size;
            *depth = e->depth;
            return level + e->depth <= YAML_MAX_VALUE_DEPTH + 1;
        }
    }
    if (level > YAML_MAX_VALUE_DEPTH) {
        *depth = 1;
        return false;
    }
    size_t k = arr ? hv_array_len(v) : 2 * hv_hash_len(v);
    for (size_t i = 0; i < k; i++) {
        const hv *x = arr ? hv_array_get(v, i) : (i % 2 ? hv_hash_val_at(v, i / 2) : hv_hash_key_at(v, i / 2));
        uint64_t cs;
        uint32_t cd;
        bool ok = expansion(memo, x, level + 1, &cs, &cd);
        *size += cs;
        if (cd + 1 > *depth)
            *depth = cd + 1;
        if (!ok || *size > YAML_MAX_EXPANDED)
            return false;
    }
    if (shared) {
        pm_ent *e = pm_get(memo, v, true, NULL);
        e->size = *size;
        e->depth = *depth;
    }
    return true;
}

/* Refuses a document whose aliases make its values too many or too deep to walk (see
 * YAML_MAX_EXPANDED, YAML_MAX_VALUE_DEPTH). */
static bool check_expansion(yctx *c, const hv *v)
{
    pmap memo = {0};
    uint64_t size;
    uint32_t depth;
    bool ok = expansion(&memo, v, 0, &size, &depth);
    free(memo.e);
    if (ok)
        return true;
    if (size > YAML_MAX_EXPANDED)
        fail_at(c, hv_line(v), 0, "(%s): YAML document too large (its aliases expand to more than %u values)",
                c->name, YAML_MAX_EXPANDED);
    else
        fail_at(c, hv_line(v), 0, "stack level too deep (YAML aliases nest values deeper than %u levels in %s)",
                YAML_MAX_VALUE_DEPTH, c->name);
    return false;
}

/* ToRuby#accept of the root node, without recursion. */
static hv *convert(yctx *c, uint32_t root)
{
    fstack st = {c, NULL, 0, 0};
    hv *v = NULL, *result = NULL;
    int state = begin_node(&st, root, &v);
    for (;;) {
        if (state == ST_ERROR)
            break;
        if (state == ST_VALUE) {
            if (st.n == 0) {
                result = v;
                break;
            }
            if (!frame_take(&st, &st.f[st.n - 1], v))
                break;
        }
        /* step the top frame */
        frame *f = &st.f[st.n - 1];
        uint32_t child = 0;
        int r = frame_next(&st, f, &child);
        if (r == ST_ERROR)
            break;
        if (r == ST_PUSHED) {
            if (child == UINT32_MAX) { /* frame_next pushed a frame of its own */
                state = ST_PUSHED;
                continue;
            }
            v = NULL;
            state = begin_node(&st, child, &v);
            continue;
        }
        bool none = false;
        v = frame_finish(&st, f, &none);
        free_frame(f);
        st.n--;
        if (c->failed)
            break;
        if (none) {
            state = ST_PUSHED; /* nothing to deliver: step the parent */
            continue;
        }
        state = ST_VALUE;
    }
    while (st.n > 0)
        free_frame(&st.f[--st.n]);
    free(st.f);
    return result;
}

static hv *parse(const char *text, size_t len, const char *name, yaml_mode mode, bool plain_too, bool *facts_object,
                 herr *err)
{
    herr dummy = {0};
    yctx c;
    memset(&c, 0, sizeof c);
    c.mode = mode;
    c.plain_too = plain_too;
    c.name = name ? name : "<unknown>";
    c.file = name;
    c.err = err ? err : &dummy;
    uint32_t root;
    hv *v = NULL;
    if (!text)
        text = "";
    if (build_tree(&c, text, len, &root)) {
        c.root = root;
        v = root == UINT32_MAX ? hv_undef() : convert(&c, root);
    }
    if (v && c.nrecs) {
        const recursion *r = find_recursion(&c, v);
        if (r) {
            hv_decref(v);
            v = NULL;
            fail_at(&c, r->line, r->col, "stack level too deep (the YAML alias *%s is inside its own anchor)",
                    r->name);
        }
    }
    if (v && c.nanchors && !check_expansion(&c, v)) {
        hv_decref(v);
        v = NULL;
    }
    if (!v && !c.failed) /* cannot happen, but never return NULL without a message */
        fail_at(&c, 0, 0, "(%s): YAML could not be loaded", c.name);
    anchors_free(&c);
    free(c.nodes);
    free(c.pool);
    herr_clear(&dummy);
    if (facts_object)
        *facts_object = c.facts_root;
    return v;
}

hv *yaml_parse(const char *text, size_t len, const char *name, yaml_mode mode, herr *err)
{
    return parse(text, len, name, mode, false, NULL, err);
}

hv *yaml_parse_facts_cache(const char *text, size_t len, const char *name, bool plain_too, bool *facts_object,
                           herr *err)
{
    return parse(text, len, name, YAML_PUPPET_FACTS_CACHE, plain_too, facts_object, err);
}

hv *yaml_load_file(const char *path, yaml_mode mode, herr *err)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, NULL, &fe)) {
        sb_free(&b);
        herr_file_read(err, HERR_ERROR, path, &fe); /* Ruby's File.read messages */
        return NULL;
    }
    /* Hiera 3 reads with File.read(path, encoding: 'BOM|UTF-8'), which drops a UTF-8 BOM;
     * Puppet reads with encoding 'utf-8' and leaves it to libyaml, which skips a BOM only
     * where it would skip blanks: "<BOM>---" is a syntax error for Puppet, fine for Hiera 3. */
    size_t skip = mode == YAML_HIERA3 && b.len >= 3 && memcmp(b.s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    hv *v = yaml_parse(sb_str(&b) + skip, b.len - skip, path, mode, err);
    sb_free(&b);
    return v;
}

hv *yaml_plain_scalar(const char *s, size_t n, herr *err)
{
    herr dummy = {0};
    yctx c;
    memset(&c, 0, sizeof c);
    c.mode = YAML_PUPPET;
    c.name = "<unknown>";
    c.err = err ? err : &dummy;
    ynode nd;
    memset(&nd, 0, sizeof nd);
    hv *v = tokenize(&c, &nd, s, n);
    herr_clear(&dummy);
    return v;
}
