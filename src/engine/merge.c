/* merge.c - Puppet's merge strategies (lib/puppet/pops/merge_strategy.rb) and the deep_merge gem's
 * deep_merge! (deep_merge/core.rb 1.1.1) that the deep strategy and Hiera 3 use. The behaviour of
 * both is followed to the letter, quirks included: a higher nil never overrides in a deep merge,
 * knock-outs leave "" behind, arrays union with the lower side first, the prefix is an unescaped
 * regexp anchored with ^ (start of any line). */
#include "engine/merge.h"
#include "engine/memo.h"
#include "types/ptype.h"
#include "formats/render.h"
#include "base/rregex.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ strategies */

static const struct {
    const char *name;
    ms_kind kind;
} strategy_names[] = {
    {"first", MS_FIRST},   {"default", MS_DEFAULT}, {"unique", MS_UNIQUE},
    {"hash", MS_HASH},     {"deep", MS_DEEP},       {"unconstrained_deep", MS_UNCONSTRAINED_DEEP},
    {"reverse_deep", MS_REVERSE_DEEP},
};

const char *ms_name(const merge_strategy *ms)
{
    for (size_t i = 0; i < sizeof strategy_names / sizeof *strategy_names; i++)
        if (strategy_names[i].kind == ms->kind)
            return strategy_names[i].name;
    return "?";
}

bool ms_is_first(const merge_strategy *ms) { return ms->kind == MS_FIRST || ms->kind == MS_DEFAULT; }

merge_strategy *ms_new(ms_kind kind)
{
    merge_strategy *ms = xcalloc(1, sizeof *ms);
    ms->kind = kind;
    return ms;
}

void ms_free(merge_strategy *ms)
{
    if (!ms)
        return;
    hv_decref(ms->options);
    free(ms->knockout_prefix);
    free(ms->unpack_arrays);
    free(ms);
}

/* The option types of merge_strategy.rb (options_t), checked as Puppet checks them. */
static const char *options_type(ms_kind kind)
{
    switch (kind) {
    case MS_FIRST: return "Struct[{strategy=>Optional[Pattern[/first/]]}]";
    case MS_DEFAULT: return "Struct[{strategy=>Optional[Pattern[/default/]]}]";
    case MS_UNIQUE: return "Struct[{strategy=>Optional[Pattern[/unique/]]}]";
    case MS_HASH: return "Struct[{strategy=>Optional[Pattern[/hash/]]}]";
    case MS_DEEP:
        return "Struct[{strategy=>Optional[Pattern[deep]],knockout_prefix=>Optional[String],"
               "merge_debug=>Optional[Boolean],merge_hash_arrays=>Optional[Boolean],"
               "sort_merged_arrays=>Optional[Boolean],}]";
    case MS_UNCONSTRAINED_DEEP:
    case MS_REVERSE_DEEP:
        return "Hash[String[1],Any]";
    }
    return "Any";
}

/* The types the strategies check: each strategy's options (indexed by ms_kind), then the operands
 * of the hash and unique merges. Each is parsed when first needed (parsing all of them took a
 * quarter of a million instructions, 4% of a one-shot lookup that needs one or two) and frozen:
 * every thread shares them. */
enum { T_HASH_OPERAND = MS_REVERSE_DEEP + 1, T_UNIQUE_OPERAND, N_CHECKED_TYPES };
static ptype *checked_types[N_CHECKED_TYPES];
static bool checked_failed[N_CHECKED_TYPES]; /* (under the lock) */
static pthread_mutex_t checked_types_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *checked_type_text(int which)
{
    switch (which) {
    case T_HASH_OPERAND: return "Hash[String,Data]";
    case T_UNIQUE_OPERAND: return "Variant[Scalar,Array[Data]]";
    default: return options_type((ms_kind)which);
    }
}

/* The type `which`, parsed and frozen on first use; NULL when it does not parse. */
static const ptype *checked_type(int which)
{
    ptype *t = __atomic_load_n(&checked_types[which], __ATOMIC_ACQUIRE);
    if (t)
        return t;
    pthread_mutex_lock(&checked_types_lock);
    t = checked_types[which];
    if (!t && !checked_failed[which]) {
        herr perr = {0};
        t = ptype_parse(checked_type_text(which), &perr);
        herr_clear(&perr);
        if (t) {
            ptype_freeze(t);
            __atomic_store_n(&checked_types[which], t, __ATOMIC_RELEASE);
        } else {
            checked_failed[which] = true;
        }
    }
    pthread_mutex_unlock(&checked_types_lock);
    return t;
}

/* Type-checks value against one of the types above; on mismatch fills err (HERR_PUPPET, a
 * TypeAssertionError) with "<subject> has wrong type, ...". */
static bool check_type(int which, const hv *value, const char *subject, herr *err)
{
    const ptype *t = checked_type(which);
    if (!t) {
        herr_set(err, HERR_ERROR, "internal type '%s' does not parse", checked_type_text(which));
        return false;
    }
    if (ptype_match(t, value))
        return true;
    char *msg = ptype_mismatch(t, value, subject);
    herr_set(err, HERR_PUPPET, "%s", msg);
    free(msg);
    return false;
}

static bool opt_bool(const hv *options, const char *key)
{
    return hv_truthy(hv_hash_gets(options, key));
}

/* Options that plainly match their strategy's type (options_type), told without the type
 * (which a one-shot lookup would parse for this alone): deep's named options with values of
 * their types and "strategy" the strategy's own name, any string keys for the unconstrained
 * ones. false says nothing: the type decides (and words the error). */
static bool str_is(const hv *v, const char *text)
{
    size_t n = strlen(text);
    return hv_is(v, HV_STRING) && hv_str_len(v) == n && memcmp(hv_str_ptr(v), text, n) == 0;
}

static bool options_surely_valid(ms_kind kind, const hv *options)
{
    if (kind != MS_DEEP && kind != MS_UNCONSTRAINED_DEEP && kind != MS_REVERSE_DEEP)
        return false;
    for (size_t i = 0; i < hv_hash_len(options); i++) {
        const hv *k = hv_hash_key_at(options, i), *v = hv_hash_val_at(options, i);
        if (!hv_is(k, HV_STRING) || !hv_str_len(k))
            return false;
        if (kind != MS_DEEP)
            continue;
        bool undef = hv_is(v, HV_UNDEF);
        if (str_is(k, "strategy")) {
            if (!undef && !str_is(v, "deep"))
                return false;
        } else if (str_is(k, "knockout_prefix")) {
            if (!undef && !hv_is(v, HV_STRING))
                return false;
        } else if (str_is(k, "merge_debug") || str_is(k, "merge_hash_arrays") || str_is(k, "sort_merged_arrays")) {
            if (!undef && !hv_is(v, HV_BOOL))
                return false;
        } else {
            return false;
        }
    }
    return true;
}

merge_strategy *ms_from_value(const hv *merge, herr *err)
{
    if (!merge || hv_is(merge, HV_UNDEF) || (hv_is(merge, HV_BOOL) && !hv_bool_val(merge)))
        return ms_new(MS_DEFAULT);
    const hv *name;
    const hv *options = NULL;
    if (hv_is(merge, HV_HASH)) {
        name = hv_hash_gets(merge, "strategy");
        if (!name || hv_is(name, HV_UNDEF)) {
            herr_set(err, HERR_ERROR, "The hash given as 'merge' must contain the name of a strategy in string form for the key 'strategy'");
            return NULL;
        }
        if (hv_hash_len(merge) != 1)
            options = merge;
    } else {
        name = merge;
    }
    ms_kind kind = MS_DEFAULT;
    bool known = false;
    if (hv_is(name, HV_STRING) || hv_is(name, HV_SYMBOL)) {
        for (size_t i = 0; i < sizeof strategy_names / sizeof *strategy_names; i++)
            if (strcmp(strategy_names[i].name, hv_str_ptr(name)) == 0) {
                kind = strategy_names[i].kind;
                known = true;
            }
    }
    if (!known) {
        sbuf b = {0};
        ruby_to_s(&b, name);
        herr_set(err, HERR_ERROR, "Unknown merge strategy: '%s'", sb_str(&b));
        sb_free(&b);
        return NULL;
    }
    if (options && !options_surely_valid(kind, options) && !check_type((int)kind, options, "The merge options", err))
        return NULL;
    merge_strategy *ms = ms_new(kind);
    if (options) {
        ms->options = hv_incref((hv *)options);
        const hv *ko = hv_hash_gets(options, "knockout_prefix");
        if (ko && hv_is(ko, HV_STRING))
            ms->knockout_prefix = xstrndup(hv_str_ptr(ko), hv_str_len(ko));
        ms->sort_merged_arrays = opt_bool(options, "sort_merged_arrays");
        ms->merge_hash_arrays = opt_bool(options, "merge_hash_arrays");
        ms->merge_debug = opt_bool(options, "merge_debug");
        ms->preserve_unmergeables = opt_bool(options, "preserve_unmergeables");
        const hv *ua = hv_hash_gets(options, "unpack_arrays");
        if (ua && hv_is(ua, HV_STRING))
            ms->unpack_arrays = xstrndup(hv_str_ptr(ua), hv_str_len(ua));
    }
    return ms;
}

/* ------------------------------------------------------------------ unique */

static void flatten_into(hv *out, const hv *v)
{
    if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            flatten_into(out, hv_array_get(v, i));
    } else {
        hv_array_push(out, hv_incref((hv *)v));
    }
}

/* Up to this many elements, whether an element is in a union is asked of the elements one by
 * one (hv_eql: what a hash lookup ends with too); past it, of a hash of them, made then. Most
 * merged arrays are short: the hash cost more than the comparisons. */
#define UNION_LINEAR 16

/* Appends to *out the elements of src it does not hold yet (Ruby's eql?/hash identity: Array#|
 * and #uniq). *out holds each element once; *index, NULL at first, is the hash of its elements
 * once it grew long (the caller frees it). */
static void union_into(hv *out, hv **index, const hv *src)
{
    for (size_t i = 0; i < hv_array_len(src); i++) {
        hv *e = hv_array_get(src, i);
        size_t n = hv_array_len(out);
        if (!*index && n >= UNION_LINEAR) {
            *index = hv_hash_sized(2 * n);
            for (size_t j = 0; j < n; j++)
                hv_hash_set(*index, hv_incref(hv_array_get(out, j)), hv_true());
        }
        if (*index) {
            if (hv_hash_get(*index, e))
                continue;
            hv_hash_set(*index, hv_incref(e), hv_true());
        } else {
            size_t j = 0;
            while (j < n && !hv_eql(hv_array_get(out, j), e))
                j++;
            if (j < n)
                continue;
        }
        hv_array_push(out, hv_incref(e));
    }
}

static hv *array_uniq(const hv *a)
{
    hv *out = hv_array_sized(hv_array_len(a)), *index = NULL;
    union_into(out, &index, a);
    hv_decref(index);
    return out;
}

static hv *unique_convert(hv *v)
{
    hv *out = hv_array();
    if (hv_is(v, HV_ARRAY))
        flatten_into(out, v);
    else
        hv_array_push(out, hv_incref(v));
    return out;
}

hv *ms_convert_value(const merge_strategy *ms, hv *v)
{
    if (ms->kind == MS_UNIQUE)
        return unique_convert(v);
    return hv_incref(v);
}

hv *ms_merge_single(const merge_strategy *ms, hv *v)
{
    if (ms->kind == MS_UNIQUE && hv_is(v, HV_ARRAY))
        return array_uniq(v);
    return hv_incref(v);
}

/* ------------------------------------------------------------------ deep_merge! */

typedef struct {
    const dm_options *o;
    rregex *ko_re; /* /^prefix/ (NULL when the prefix has no regexp syntax: ko_lit) */
    const char *ko_lit;
    size_t ko_len;
    herr *err;
    int depth;
    /* copy on write: inputs may be shared (cached data); a container is copied right before it
     * would be changed. Ruby edits them in place; the edits only show in an explanation (the
     * found values it holds), so explaining works on private copies instead. */
    bool cow;
    /* inside deep_merge!(src_value, src_value.dup) (a key dest lacks): the dup is shallow, so
     * there a value met on both sides at the same address is one Ruby object */
    int alias_ctx;
    int peak; /* the deepest depth reached (dm_remembered) */
} dm_state;

#define DM_MAX_DEPTH 2000

static hv *dm(dm_state *s, hv *source, hv *dest);
static hv *dm_remembered(dm_state *s, hv *source, hv *dest);

/* Ruby's shallow dup of a value (arrays and hashes get a new container sharing the elements). */
static hv *shallow_dup(hv *v)
{
    if (hv_is(v, HV_ARRAY) || hv_is(v, HV_HASH))
        return hv_copy(v);
    return hv_incref(v);
}

/* A literal prefix matched at the start of any line (Ruby's ^): the regexp without Oniguruma. */
static inline bool lit_at(const dm_state *s, const char *p, const char *end)
{
    return (size_t)(end - p) >= s->ko_len && p[0] == s->ko_lit[0] && memcmp(p, s->ko_lit, s->ko_len) == 0;
}

static inline bool is_ko_string(dm_state *s, const hv *v)
{
    if (!hv_is(v, HV_STRING))
        return false;
    if (s->ko_re)
        return rregex_search(s->ko_re, hv_str_ptr(v), hv_str_len(v));
    if (!s->ko_lit)
        return false;
    const char *p = hv_str_ptr(v), *end = p + hv_str_len(v);
    for (const char *line = p; line <= end;) {
        if (lit_at(s, line, end))
            return true;
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            break;
        line = nl + 1;
    }
    return false;
}

/* Whether deep_merge!(v, v.dup) gives v again (an equal value, keys in the same order): v holds
 * only hashes, scalars that are not knock-out strings, and short arrays of such scalars without
 * two equal ones (the merge of an array with itself is its union: the same elements), and the
 * options neither sort nor unpack arrays. Hashes and scalars go through the merge unchanged. */
static bool self_merge_plain(dm_state *s, const hv *v, int depth)
{
    if (depth > 32)
        return false;
    switch (hv_kind_of(v)) {
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            const hv *e = hv_hash_val_at(v, i);
            hv_kind k = hv_kind_of(e);
            if (k == HV_STRING ? is_ko_string(s, e) : (k == HV_HASH || k == HV_ARRAY) && !self_merge_plain(s, e, depth + 1))
                return false;
        }
        return true;
    case HV_ARRAY: {
        size_t n = hv_array_len(v);
        if (n > 8 || s->o->sort_merged_arrays || s->o->unpack_arrays)
            return false;
        for (size_t i = 0; i < n; i++) {
            const hv *e = hv_array_get(v, i);
            if (hv_is(e, HV_ARRAY) || hv_is(e, HV_HASH) || is_ko_string(s, e))
                return false;
            for (size_t j = 0; j < i; j++)
                if (hv_equal(hv_array_get(v, j), e))
                    return false;
        }
        return true;
    }
    case HV_STRING:
        return !is_ko_string(s, v);
    default:
        return true;
    }
}

/* deep_merge!(v, v.dup): what a key of source that dest lacks becomes. Inside, a value met on
 * both sides at one address is one Ruby object (alias_ctx). For a stable v the result depends on
 * v and the options only: a frozen cache remembers it (every merge into a lower level that lacks
 * a key would otherwise go through the whole of its value again). */
static hv *self_merge_of(dm_state *s, hv *v)
{
    struct {
        char tag;
        const void *options;
        const hv *value;
    } key;
    memo *m = s->cow && s->o->memo && hv_is_stable(v) ? s->o->memo : NULL;
    if (m) {
        memset(&key, 0, sizeof key);
        key.tag = 'm';
        key.options = s->o->memo_id;
        key.value = v;
    }
    /* a stable container's answer is looked up first, the plain ones' too (v itself): a fold
     * meets the same values of the levels above step after step, and self_merge_plain goes
     * through the whole of each */
    bool container = hv_is(v, HV_HASH) || hv_is(v, HV_ARRAY);
    hv *known;
    if (m && container && (known = memo_get(m, &key, sizeof key)))
        return hv_incref(known);
    if (s->cow && self_merge_plain(s, v, 0)) {
        if (m && container)
            memo_put(m, &key, sizeof key, v);
        return hv_incref(v); /* (copy on write: whoever changes it copies it first) */
    }
    if (m && !container && (known = memo_get(m, &key, sizeof key)))
        return hv_incref(known);
    s->alias_ctx++;
    hv *merged = dm(s, hv_incref(v), shallow_dup(v));
    s->alias_ctx--;
    if (m && merged)
        memo_put(m, &key, sizeof key, merged);
    return merged;
}

/* Copy on write: makes *v private before it is changed in place. */
static void own(dm_state *s, hv **v)
{
    if (s->cow && hv_is_shared(*v)) {
        hv *c = hv_copy(*v);
        hv_decref(*v);
        *v = c;
    }
}

/* ko_item.gsub(/^prefix/, ""): a new string, or NULL when nothing matched */
static hv *ko_strip(dm_state *s, const hv *v)
{
    if (s->ko_re) {
        size_t n;
        char *r = rregex_gsub_empty(s->ko_re, hv_str_ptr(v), hv_str_len(v), &n);
        return r ? hv_str_take(r, n) : NULL;
    }
    if (!is_ko_string(s, v))
        return NULL;
    const char *p = hv_str_ptr(v), *end = p + hv_str_len(v);
    sbuf b = {0};
    for (const char *line = p; line <= end;) {
        if (lit_at(s, line, end))
            line += s->ko_len;
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl) {
            sb_addn(&b, line, (size_t)(end - line));
            break;
        }
        sb_addn(&b, line, (size_t)(nl + 1 - line));
        line = nl + 1;
    }
    size_t n = b.len;
    return hv_str_take(sb_take(&b), n);
}

/* Whether a knockout prefix is plain text for Ruby's regexp engine (no metacharacters). */
static bool regexp_literal(const char *p)
{
    for (; *p; p++)
        if (strchr(".^$|()[]{}*+?\\#", *p) || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x80)
            return false;
    return true;
}

/* Array#delete(item): removes every element == item (Ruby ==) */
static void array_delete_equal(hv *a, const hv *item)
{
    size_t w = 0, n = hv_array_len(a);
    hv *keep = hv_array_sized(n);
    for (size_t i = 0; i < n; i++) {
        hv *e = hv_array_get(a, i);
        if (!hv_equal(e, item))
            hv_array_push(keep, hv_incref(e));
    }
    hv_array_truncate(a, 0);
    for (w = 0; w < hv_array_len(keep); w++)
        hv_array_push(a, hv_incref(hv_array_get(keep, w)));
    hv_decref(keep);
}

static hv *overwrite_unmergeables(dm_state *s, hv *source, hv *dest)
{
    bool overwrite = !s->o->preserve_unmergeables;
    if (s->o->knockout_prefix && overwrite) {
        if (hv_is(source, HV_STRING)) {
            hv *stripped = ko_strip(s, source);
            hv_decref(dest);
            if (stripped) {
                /* the knock-out found: dest becomes "" (the string is not removed) */
                hv_decref(stripped);
                hv_decref(source);
                return hv_str("");
            }
            return source;
        }
        if (hv_is(source, HV_ARRAY)) {
            /* source.delete_if { String matching the prefix }; the edited source replaces dest */
            own(s, &source);
            hv *keep = hv_array();
            for (size_t i = 0; i < hv_array_len(source); i++) {
                hv *e = hv_array_get(source, i);
                if (!is_ko_string(s, e))
                    hv_array_push(keep, hv_incref(e));
            }
            hv_array_truncate(source, 0);
            for (size_t i = 0; i < hv_array_len(keep); i++)
                hv_array_push(source, hv_incref(hv_array_get(keep, i)));
            hv_decref(keep);
        }
        hv_decref(dest);
        return source;
    }
    if (overwrite) {
        hv_decref(dest);
        return source;
    }
    hv_decref(source);
    return dest;
}

/* ---- Ruby's <=> for Array#sort! ---- */

static int cmp_bigint_digits(const char *a, const char *b)
{
    bool na = *a == '-', nb = *b == '-';
    if (na != nb)
        return na ? -1 : 1;
    if (na) {
        a++;
        b++;
    }
    size_t la = strlen(a), lb = strlen(b);
    int r = la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
    if (r > 0)
        r = 1;
    if (r < 0)
        r = -1;
    return na ? -r : r;
}

/* Returns -1/0/1, or 2 when Ruby's <=> would give nil (incomparable). */
static int ruby_cmp(const hv *a, const hv *b)
{
    hv_kind ka = hv_kind_of(a), kb = hv_kind_of(b);
    bool numa = ka == HV_INT || ka == HV_FLOAT || ka == HV_BIGINT;
    bool numb = kb == HV_INT || kb == HV_FLOAT || kb == HV_BIGINT;
    if (numa && numb) {
        if (ka == HV_BIGINT || kb == HV_BIGINT) {
            if (ka == HV_BIGINT && kb == HV_BIGINT)
                return cmp_bigint_digits(hv_bigint_digits(a), hv_bigint_digits(b));
            const hv *big = ka == HV_BIGINT ? a : b;
            int sign = hv_bigint_digits(big)[0] == '-' ? -1 : 1; /* beyond any int64/double we hold */
            return ka == HV_BIGINT ? sign : -sign;
        }
        double x = ka == HV_INT ? (double)hv_int_val(a) : hv_float_val(a);
        double y = kb == HV_INT ? (double)hv_int_val(b) : hv_float_val(b);
        if (ka == HV_INT && kb == HV_INT)
            return hv_int_val(a) < hv_int_val(b) ? -1 : hv_int_val(a) > hv_int_val(b);
        if (x != x || y != y)
            return 2;
        return x < y ? -1 : x > y;
    }
    if (ka == HV_STRING && kb == HV_STRING) {
        size_t la = hv_str_len(a), lb = hv_str_len(b);
        int r = memcmp(hv_str_ptr(a), hv_str_ptr(b), la < lb ? la : lb);
        if (r)
            return r < 0 ? -1 : 1;
        return la < lb ? -1 : la > lb;
    }
    if (ka == HV_ARRAY && kb == HV_ARRAY) {
        size_t la = hv_array_len(a), lb = hv_array_len(b);
        for (size_t i = 0; i < la && i < lb; i++) {
            int r = ruby_cmp(hv_array_get(a, i), hv_array_get(b, i));
            if (r)
                return r;
        }
        return la < lb ? -1 : la > lb;
    }
    /* Object#<=>: 0 when ==, otherwise nil */
    return hv_equal(a, b) ? 0 : 2;
}

static bool merge_sort(hv **items, hv **tmp, size_t n, const hv **bad_a, const hv **bad_b)
{
    if (n < 2)
        return true;
    size_t h = n / 2;
    if (!merge_sort(items, tmp, h, bad_a, bad_b) || !merge_sort(items + h, tmp, n - h, bad_a, bad_b))
        return false;
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int r = ruby_cmp(items[i], items[j]);
        if (r == 2) {
            *bad_a = items[i];
            *bad_b = items[j];
            return false;
        }
        tmp[k++] = r <= 0 ? items[i++] : items[j++];
    }
    while (i < h)
        tmp[k++] = items[i++];
    while (j < n)
        tmp[k++] = items[j++];
    memcpy(items, tmp, n * sizeof *items);
    return true;
}

/* Array#sort! with Ruby's comparison; false with err "comparison of X with Y failed". */
static bool ruby_sort(hv *a, herr *err)
{
    size_t n = hv_array_len(a);
    if (n < 2)
        return true;
    hv **items = xmalloc(n * sizeof *items), **tmp = xmalloc(n * sizeof *tmp);
    for (size_t i = 0; i < n; i++)
        items[i] = hv_incref(hv_array_get(a, i));
    const hv *ba = NULL, *bb = NULL;
    bool ok = merge_sort(items, tmp, n, &ba, &bb);
    if (ok) {
        hv_array_truncate(a, 0);
        for (size_t i = 0; i < n; i++)
            hv_array_push(a, items[i]);
    } else {
        herr_set(err, HERR_ERROR, "comparison of %s with %s failed", ruby_class_name(ba), ruby_class_name(bb));
        for (size_t i = 0; i < n; i++)
            hv_decref(items[i]);
    }
    free(items);
    free(tmp);
    return ok;
}

/* array.join(c).split(c) of deep_merge's unpack_arrays */
/* Ruby's Array#join: a nested array is joined in place as one element (so an empty one still
 * takes a separator: [[], 0].join(",") is ",0"). */
static void join_elem(sbuf *b, const hv *v, const char *sep, bool *first)
{
    if (!*first)
        sb_adds(b, sep);
    *first = false;
    if (hv_is(v, HV_ARRAY)) {
        bool inner_first = true;
        for (size_t i = 0; i < hv_array_len(v); i++)
            join_elem(b, hv_array_get(v, i), sep, &inner_first);
        return;
    }
    ruby_to_s(b, v);
}

static hv *join_split(const hv *a, const char *sep)
{
    sbuf b = {0};
    bool first = true;
    for (size_t i = 0; i < hv_array_len(a); i++)
        join_elem(&b, hv_array_get(a, i), sep, &first);
    hv *out = hv_array();
    size_t seplen = strlen(sep);
    const char *s = sb_str(&b), *end = s + b.len;
    if (seplen == 0) {
        for (const char *p = s; p < end; p++)
            hv_array_push(out, hv_strn(p, 1));
    } else {
        const char *p = s;
        while (p <= end) {
            const char *q = p < end ? strstr(p, sep) : NULL;
            if (!q || q > end)
                q = end;
            hv_array_push(out, hv_strn(p, (size_t)(q - p)));
            p = q + seplen;
            if (q == end)
                break;
        }
        /* Ruby's split drops trailing empty strings */
        while (hv_array_len(out) && hv_str_len(hv_array_get(out, hv_array_len(out) - 1)) == 0)
            hv_array_truncate(out, hv_array_len(out) - 1);
    }
    sb_free(&b);
    return out;
}

static bool all_hashes(const hv *a)
{
    for (size_t i = 0; i < hv_array_len(a); i++)
        if (!hv_is(hv_array_get(a, i), HV_HASH))
            return false;
    return true;
}

/* The block of source.delete_if: when item is a knock-out (the prefix, then a value), deletes the
 * value and the item from target and answers true. */
static bool ko_delete(dm_state *s, hv *target, const hv *item)
{
    hv *stripped = hv_is(item, HV_STRING) ? ko_strip(s, item) : NULL;
    bool out = stripped && !hv_eql(stripped, item);
    if (out) {
        array_delete_equal(target, stripped);
        array_delete_equal(target, item);
    }
    hv_decref(stripped);
    return out;
}

/* source.delete_if { knocked out: dest.delete(item); dest.delete(ko_item) } when source and dest
 * are one array: Array#reject! as Ruby 3.1 runs it (a read index, a write index, and at the end
 * the unread tail moved down) while the block deletes from the array it walks. */
static void reject_ko_same_array(dm_state *s, hv *a)
{
    size_t i1 = 0, i2 = 0;
    for (; i1 < hv_array_len(a); i1++) {
        hv *v = hv_incref(hv_array_get(a, i1));
        if (!ko_delete(s, a, v)) {
            if (i1 != i2)
                hv_array_set(a, i2, hv_incref(v));
            i2++;
        }
        hv_decref(v);
    }
    size_t len = hv_array_len(a);
    if (i2 < len && i2 < i1) {
        size_t tail = i1 < len ? len - i1 : 0;
        for (size_t k = 0; k < tail; k++)
            hv_array_set(a, i2 + k, hv_incref(hv_array_get(a, i1 + k)));
        hv_array_truncate(a, i2 + tail);
    }
}

/* `dest | source`, or with merge_hash_arrays the hashes merged by position, then sort! when asked
 * (the end of deep_merge!'s array branch). Consumes source and dest. */
static hv *merge_arrays(dm_state *s, hv *source, hv *dest)
{
    const dm_options *o = s->o;
    hv *result;
    if (o->merge_hash_arrays && all_hashes(source) && all_hashes(dest)) {
        size_t nd = hv_array_len(dest), ns = hv_array_len(source);
        result = hv_array_sized(nd > ns ? nd : ns);
        for (size_t i = 0; i < nd; i++) {
            hv *si = i < ns ? hv_incref(hv_array_get(source, i)) : hv_hash();
            hv *r = dm_remembered(s, si, hv_incref(hv_array_get(dest, i)));
            if (!r) {
                hv_decref(result);
                hv_decref(source);
                hv_decref(dest);
                return NULL;
            }
            hv_array_push(result, r);
        }
        for (size_t i = nd; i < ns; i++)
            hv_array_push(result, hv_incref(hv_array_get(source, i)));
    } else {
        result = hv_array_sized(hv_array_len(dest) + hv_array_len(source));
        hv *index = NULL;
        union_into(result, &index, dest);
        union_into(result, &index, source);
        hv_decref(index);
    }
    hv_decref(source);
    hv_decref(dest);
    if (o->sort_merged_arrays && !ruby_sort(result, s->err)) {
        hv_decref(result);
        return NULL;
    }
    return result;
}

static hv *dm_array(dm_state *s, hv *source, hv *dest)
{
    const dm_options *o = s->o;
    if (source == dest && s->alias_ctx > 0 && !o->unpack_arrays) {
        /* one Ruby array on both sides (see alias_ctx): a naked prefix clears it, knocked-out
         * items go as reject! leaves them, then the merge of the array with itself */
        hv_decref(dest);
        own(s, &source);
        if (o->knockout_prefix) {
            hv *bare = hv_str(o->knockout_prefix);
            for (size_t i = 0; i < hv_array_len(source); i++)
                if (hv_equal(hv_array_get(source, i), bare)) {
                    hv_array_truncate(source, 0); /* dest.clear empties source too */
                    break;
                }
            hv_decref(bare);
            reject_ko_same_array(s, source);
        }
        return merge_arrays(s, source, hv_incref(source));
    }
    if (o->unpack_arrays) {
        hv *ns = join_split(source, o->unpack_arrays);
        hv_decref(source);
        source = ns;
        if (hv_is(dest, HV_ARRAY)) {
            hv *nd = join_split(dest, o->unpack_arrays);
            hv_decref(dest);
            dest = nd;
        }
    }
    if (o->knockout_prefix) {
        /* a bare prefix element clears dest (in place, as Ruby's clear) and is removed */
        hv *bare = hv_str(o->knockout_prefix);
        bool has = false;
        for (size_t i = 0; i < hv_array_len(source); i++)
            if (hv_equal(hv_array_get(source, i), bare))
                has = true;
        if (has) {
            if (hv_is(dest, HV_ARRAY)) {
                own(s, &dest);
                hv_array_truncate(dest, 0);
            } else if (hv_is(dest, HV_HASH)) {
                own(s, &dest);
                while (hv_hash_len(dest))
                    hv_hash_del(dest, hv_hash_key_at(dest, 0));
            } else if (hv_is(dest, HV_STRING)) {
                hv_decref(dest);
                dest = hv_str("");
            } else {
                hv_decref(dest);
                dest = hv_undef();
            }
            own(s, &source);
            array_delete_equal(source, bare);
        }
        hv_decref(bare);
    }
    if (hv_is(dest, HV_ARRAY)) {
        if (o->knockout_prefix) {
            own(s, &dest);
            own(s, &source);
            hv *keep = hv_array();
            for (size_t i = 0; i < hv_array_len(source); i++) {
                if (i >= hv_array_len(source))
                    break; /* source and dest are one array (Ruby aliasing): it shrank */
                hv *item = hv_incref(hv_array_get(source, i));
                if (!ko_delete(s, dest, item))
                    hv_array_push(keep, hv_incref(item));
                hv_decref(item);
            }
            hv_array_truncate(source, 0);
            for (size_t i = 0; i < hv_array_len(keep); i++)
                hv_array_push(source, hv_incref(hv_array_get(keep, i)));
            hv_decref(keep);
        }
        return merge_arrays(s, source, dest);
    }
    if (!o->preserve_unmergeables)
        return overwrite_unmergeables(s, source, dest);
    hv_decref(source);
    return dest;
}

static hv *dm(dm_state *s, hv *source, hv *dest);

/* dm(source, dest) of two stable values met under a key both hold (copy on write, not inside a
 * self-merge: then the result depends on the two values and the options alone), remembered in a
 * frozen cache's table under their addresses with how much deeper the merge went: found again
 * when it would not go past DM_MAX_DEPTH from here. A fold merges the same values of the levels
 * for the keys they share node after node; the result, stable, is found again at the next
 * level. Consumes source and dest. */
static hv *dm_remembered(dm_state *s, hv *source, hv *dest)
{
    memo *m = s->cow && s->alias_ctx == 0 && s->o->memo && hv_is_stable(source) && hv_is_stable(dest) ? s->o->memo : NULL;
    if (!m)
        return dm(s, source, dest);
    struct {
        char tag;
        const void *options;
        const hv *source, *dest;
    } key;
    memset(&key, 0, sizeof key);
    key.tag = 'n';
    key.options = s->o->memo_id;
    key.source = source;
    key.dest = dest;
    const hv *known = memo_get(m, &key, sizeof key);
    if (known) {
        int64_t deeper = hv_int_val(hv_array_get(known, 1));
        if (s->depth + deeper <= DM_MAX_DEPTH) {
            if (s->depth + deeper > s->peak)
                s->peak = (int)(s->depth + deeper);
            hv_decref(source);
            hv_decref(dest);
            return hv_incref((hv *)hv_array_get(known, 0));
        }
    }
    int outer_peak = s->peak, at = s->depth;
    s->peak = at;
    hv *merged = dm(s, source, dest);
    int deeper = s->peak - at;
    if (outer_peak > s->peak)
        s->peak = outer_peak;
    if (merged && !known) {
        hv *e = hv_array_sized(2);
        hv_array_push(e, merged);
        hv_array_push(e, hv_int(deeper));
        if (memo_put(m, &key, sizeof key, e))
            merged = hv_incref((hv *)hv_array_get(e, 0)); /* (stable now) */
        else
            hv_incref(merged);
        hv_decref(e);
    }
    return merged;
}

static hv *dm(dm_state *s, hv *source, hv *dest)
{
    if (++s->depth > s->peak)
        s->peak = s->depth;
    if (s->depth > DM_MAX_DEPTH) {
        herr_set(s->err, HERR_ERROR, "deep_merge: values nested deeper than %d levels", DM_MAX_DEPTH);
        hv_decref(source);
        hv_decref(dest);
        s->depth--;
        return NULL;
    }
    hv *result = NULL;
    bool overwrite = !s->o->preserve_unmergeables;
    if (hv_is(source, HV_UNDEF)) {
        hv_decref(source);
        result = dest;
    } else if (!hv_truthy(dest) && overwrite) {
        hv_decref(dest);
        result = source;
    } else if (hv_is(source, HV_HASH)) {
        result = dest;
        /* once an unmergeable dest was overwritten by source itself, Ruby's dest IS source: the
         * next keys merge each value with itself (one object on both sides) */
        int self_merge = 0;
        for (size_t i = 0; i < hv_hash_len(source) && result; i++) {
            hv *k = hv_hash_key_at(source, i), *sv = hv_hash_val_at(source, i);
            if (hv_is(result, HV_HASH)) {
                if (s->cow && hv_is_shared(result)) {
                    hv *own = hv_copy(result);
                    hv_decref(result);
                    result = own;
                }
                long at = hv_hash_index(result, k);
                hv *dv = at >= 0 ? hv_hash_val_at(result, (size_t)at) : NULL;
                hv *merged;
                if (hv_truthy(dv)) {
                    s->alias_ctx += self_merge;
                    merged = dm_remembered(s, hv_incref(sv), hv_incref(dv));
                    s->alias_ctx -= self_merge;
                } else {
                    merged = self_merge_of(s, sv);
                }
                if (!merged) {
                    hv_decref(result);
                    result = NULL;
                    break;
                }
                hv_hash_put_at(result, at, hv_incref(k), merged);
            } else if (overwrite) {
                result = overwrite_unmergeables(s, hv_incref(source), result);
                self_merge = result == source;
            }
        }
        hv_decref(source);
    } else if (hv_is(source, HV_ARRAY)) {
        result = dm_array(s, source, dest);
    } else {
        result = overwrite_unmergeables(s, source, dest);
    }
    s->depth--;
    return result;
}

static hv *deep_merge_impl(hv *source, hv *dest, const dm_options *o, bool cow, herr *err)
{
    dm_state s = {o, NULL, NULL, 0, err, 0, cow, 0, 0};
    if (o->knockout_prefix) {
        if (!*o->knockout_prefix) {
            herr_set(err, HERR_ERROR, "knockout_prefix cannot be an empty string in deep_merge!");
            hv_decref(source);
            hv_decref(dest);
            return NULL;
        }
        if (o->preserve_unmergeables) {
            herr_set(err, HERR_ERROR, "overwrite_unmergeable must be true if knockout_prefix is specified in deep_merge!");
            hv_decref(source);
            hv_decref(dest);
            return NULL;
        }
        if (regexp_literal(o->knockout_prefix)) {
            s.ko_lit = o->knockout_prefix;
            s.ko_len = strlen(o->knockout_prefix);
        } else {
            sbuf src = {0};
            sb_addc(&src, '^');
            sb_adds(&src, o->knockout_prefix);
            s.ko_re = rregex_new(src.s, src.len, err);
            sb_free(&src);
        }
        if (!s.ko_re && !s.ko_lit) {
            hv_decref(source);
            hv_decref(dest);
            return NULL;
        }
    }
    hv *r = dm_remembered(&s, source, dest);
    rregex_free(s.ko_re);
    return r;
}

hv *deep_merge_bang(hv *source, hv *dest, const dm_options *o, herr *err)
{
    return deep_merge_impl(source, dest, o, false, err);
}

hv *deep_merge_cow(hv *source, hv *dest, const dm_options *o, herr *err)
{
    return deep_merge_impl(source, dest, o, true, err);
}

/* ------------------------------------------------------------------ merge(e1, e2) */

static hv *hash_merge(hv *e1, hv *e2)
{
    /* e2.merge(e1): e2's keys in order, e1's values winning, e1's new keys appended */
    hv *out = hv_copy(e2);
    for (size_t i = 0; i < hv_hash_len(e1); i++)
        hv_hash_set(out, hv_incref(hv_hash_key_at(e1, i)), hv_incref(hv_hash_val_at(e1, i)));
    return out;
}

hv *ms_merge(const merge_strategy *ms, hv *e1, hv *e2, bool inplace, herr *err)
{
    switch (ms->kind) {
    case MS_FIRST:
    case MS_DEFAULT:
        return hv_incref(e1);
    case MS_HASH:
        if (!check_type(T_HASH_OPERAND, e1, "The first element of the merge", err) ||
            !check_type(T_HASH_OPERAND, e2, "The second element of the merge", err))
            return NULL;
        return hash_merge(e1, e2);
    case MS_UNIQUE: {
        if (!check_type(T_UNIQUE_OPERAND, e1, "The first element of the merge", err) ||
            !check_type(T_UNIQUE_OPERAND, e2, "The second element of the merge", err))
            return NULL;
        hv *a = unique_convert(e1), *b = unique_convert(e2);
        hv *out = hv_array_sized(hv_array_len(a) + hv_array_len(b)), *index = NULL;
        union_into(out, &index, a);
        union_into(out, &index, b);
        hv_decref(index);
        hv_decref(a);
        hv_decref(b);
        return out;
    }
    case MS_DEEP:
    case MS_UNCONSTRAINED_DEEP:
    case MS_REVERSE_DEEP: {
        dm_options o = {ms->knockout_prefix, ms->kind != MS_DEEP && ms->preserve_unmergeables,
                        ms->sort_merged_arrays, ms->merge_hash_arrays, ms->unpack_arrays,
                        ms->stable && !inplace ? ms->memo : NULL, ms};
        hv *src = e1, *dst = e2;
        if (ms->kind == MS_REVERSE_DEEP) {
            src = e2;
            dst = e1;
        }
        /* Puppet: deep_merge!(e1, deep_clone(e2)) edits e1. Explaining (inplace) shows that; the
         * knock-out edits need private copies; otherwise copy on write keeps shared data intact */
        if (inplace)
            return deep_merge_impl(hv_incref(src), hv_deep_copy(dst), &o, false, err);
        return deep_merge_cow(hv_incref(src), hv_incref(dst), &o, err);
    }
    }
    return NULL;
}
