/* json.c - jansson values to hv values. */
#include "formats/json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Numbers jansson refuses but Ruby's JSON accepts (integers beyond 64 bits stay exact, floats
 * beyond double range become Infinity) are rewritten before parsing as marker strings
 * "\u0000N<digits>" / "\u0000F<text>" and turned back afterwards. In that rewritten text a
 * string value of the data that starts with NUL gets one more NUL, taken off again, so that no
 * data string is read as a marker (jansson refuses a NUL in object keys anyway). */
#define NUM_MARK "\\u0000"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static char *quote_overflowing_numbers(const char *text, size_t len, size_t *outlen, bool *changed)
{
    sbuf b = {0};
    *changed = false;
    size_t i = 0;
    while (i < len) {
        char c = text[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && text[j] != '"') {
                if (text[j] == '\\' && j + 1 < len)
                    j++;
                j++;
            }
            if (j < len)
                j++;
            if (j - i >= 7 && memcmp(text + i + 1, "\\u0000", 6) == 0)
                sb_adds(&b, "\"" NUM_MARK), i++; /* a data string starting with NUL: one NUL more */
            sb_addn(&b, text + i, j - i);
            i = j;
            continue;
        }
        if (c == '-' || is_digit(c)) {
            size_t j = i;
            bool is_float = false;
            if (text[j] == '-')
                j++;
            while (j < len && is_digit(text[j]))
                j++;
            if (j < len && text[j] == '.') {
                is_float = true;
                j++;
                while (j < len && is_digit(text[j]))
                    j++;
            }
            if (j < len && (text[j] == 'e' || text[j] == 'E')) {
                is_float = true;
                j++;
                if (j < len && (text[j] == '+' || text[j] == '-'))
                    j++;
                while (j < len && is_digit(text[j]))
                    j++;
            }
            char *tok = xstrndup(text + i, j - i);
            bool overflow = false;
            const char *digits = tok[0] == '-' ? tok + 1 : tok;
            if (digits[0] == '0' && is_digit(digits[1])) {
                sb_adds(&b, tok); /* a leading zero: not JSON, left for the parser to refuse */
                free(tok);
                i = j > i ? j : i + 1;
                continue;
            }
            if (is_float) {
                double d = strtod(tok, NULL);
                overflow = isinf(d);
            } else {
                const char *d = tok[0] == '-' ? tok + 1 : tok;
                size_t nd = strlen(d);
                overflow = nd > 19 || (nd == 19 && strcmp(d, tok[0] == '-' ? "9223372036854775808" : "9223372036854775807") > 0);
            }
            if (overflow) {
                sb_addf(&b, "\"" NUM_MARK "%c%s\"", is_float ? 'F' : 'N', tok);
                *changed = true;
            } else {
                sb_adds(&b, tok);
            }
            free(tok);
            i = j > i ? j : i + 1;
            continue;
        }
        sb_addc(&b, c);
        i++;
    }
    *outlen = b.len;
    return sb_take(&b);
}

static hv *from_jansson(json_t *j, bool marks)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        hv *h = hv_hash_sized(json_object_size(j));
        const char *k;
        size_t klen;
        json_t *v;
        void *tmp;
        json_object_keylen_foreach_safe(j, tmp, k, klen, v) hv_hash_set(h, hv_strn(k, klen), from_jansson(v, marks));
        return h;
    }
    case JSON_ARRAY: {
        size_t i, n = json_array_size(j);
        hv *a = hv_array_sized(n);
        for (i = 0; i < n; i++)
            hv_array_push(a, from_jansson(json_array_get(j, i), marks));
        return a;
    }
    case JSON_STRING: {
        const char *str = json_string_value(j);
        size_t n = json_string_length(j);
        if (marks && n >= 1 && str[0] == 0) {
            if (n > 2 && str[1] == 'N')
                return hv_bigint(str + 2, n - 2);
            if (n > 2 && str[1] == 'F')
                return hv_float(str[2] == '-' ? -INFINITY : INFINITY);
            return hv_strn(str + 1, n - 1); /* a data string: the NUL added in front goes */
        }
        return hv_strn(str, n);
    }
    case JSON_INTEGER:
        return hv_int((int64_t)json_integer_value(j));
    case JSON_REAL:
        return hv_float(json_real_value(j));
    case JSON_TRUE:
        return hv_true();
    case JSON_FALSE:
        return hv_false();
    case JSON_NULL:
    default:
        return hv_undef();
    }
}

/* Ruby's JSON.parse (which Puppet's json_data, `--facts` and Hiera 3's json backend call) has
 * max_nesting 100: the 101st nested array or object raises JSON::NestingError "nesting of 101
 * is too deep" where it opens. Returns the offset of that bracket, or len when there is none. */
#define RUBY_JSON_MAX_NESTING 100

static size_t nesting_overflow_at(const char *text, size_t len)
{
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '"') {
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
        } else if (c == '[' || c == '{') {
            if (++depth > RUBY_JSON_MAX_NESTING)
                return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return len;
}

static void nesting_error(const char *text, size_t at, const char *name, herr *err)
{
    int line = 1, col = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    herr_set(err, HERR_ERROR, "Unable to parse (%s): nesting of %d is too deep", name, RUBY_JSON_MAX_NESTING + 1);
    herr_at(err, name, line, col);
}

hv *hjson_parse(const char *text, size_t len, const char *name, herr *err)
{
    json_error_t je;
    bool marks = false;
    size_t deep = nesting_overflow_at(text, len);
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j && (strstr(je.text, "too big") || strstr(je.text, "overflow"))) {
        size_t n2;
        bool changed;
        char *t2 = quote_overflowing_numbers(text, len, &n2, &changed);
        if (changed) {
            j = json_loadb(t2, n2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
            marks = j != NULL;
        }
        free(t2);
    }
    if (deep < len && (j || je.position < 0 || (size_t)je.position > deep)) {
        /* Ruby stops at the too-deep bracket, before any later syntax error */
        json_decref(j);
        nesting_error(text, deep, name, err);
        return NULL;
    }
    if (!j) {
        herr_set(err, HERR_ERROR, "Unable to parse (%s): %s", name, je.text);
        herr_at(err, name, je.line > 0 ? je.line : 0, je.column > 0 ? je.column : 0);
        return NULL;
    }
    hv *v = from_jansson(j, marks);
    json_decref(j);
    return v;
}

hv *hjson_load_file(const char *path, herr *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        herr_set(err, HERR_ERROR, "Unable to read %s", path);
        herr_at(err, path, 0, 0);
        return NULL;
    }
    sbuf b = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_addn(&b, buf, n);
    fclose(f);
    hv *v = hjson_parse(sb_str(&b), b.len, path, err);
    sb_free(&b);
    return v;
}

static void debug_str(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            sb_addc(b, '\\');
            sb_addc(b, (char)c);
        } else if (c < 0x20) {
            sb_addf(b, "\\u%04x", c);
        } else {
            sb_addc(b, (char)c);
        }
    }
    sb_addc(b, '"');
}

static void debug_val(sbuf *b, const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: sb_adds(b, "null"); break;
    case HV_BOOL: sb_adds(b, hv_bool_val(v) ? "true" : "false"); break;
    case HV_INT: sb_addf(b, "%lld", (long long)hv_int_val(v)); break;
    case HV_BIGINT: sb_adds(b, hv_bigint_digits(v)); break;
    case HV_FLOAT: sb_addf(b, "%.17g", hv_float_val(v)); break;
    case HV_STRING: debug_str(b, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SYMBOL: sb_adds(b, "{\"symbol\":"); debug_str(b, hv_str_ptr(v), hv_str_len(v)); sb_addc(b, '}'); break;
    case HV_SENSITIVE: sb_adds(b, "{\"sensitive\":"); debug_val(b, hv_sensitive_inner(v)); sb_addc(b, '}'); break;
    case HV_ARRAY:
        sb_addc(b, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_addc(b, ',');
            debug_val(b, hv_array_get(v, i));
        }
        sb_addc(b, ']');
        break;
    case HV_HASH:
        sb_addc(b, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            hv *k = hv_hash_key_at(v, i);
            if (i)
                sb_addc(b, ',');
            if (hv_is(k, HV_STRING)) {
                debug_str(b, hv_str_ptr(k), hv_str_len(k));
            } else {
                sbuf kb = {0};
                debug_val(&kb, k);
                debug_str(b, sb_str(&kb), kb.len);
                sb_free(&kb);
            }
            sb_addc(b, ':');
            debug_val(b, hv_hash_val_at(v, i));
        }
        sb_addc(b, '}');
        break;
    }
}

char *hjson_debug(const hv *v)
{
    sbuf b = {0};
    debug_val(&b, v);
    return sb_take(&b);
}
