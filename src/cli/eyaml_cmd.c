/* eyaml_cmd.c - `hiera eyaml ...`: the `eyaml` command of hiera-eyaml 3.3 for its PKCS7
 * encryptor: encrypt, decrypt and createkeys, with the same options (global, subcommand and
 * pkcs7 plugin options, defaults from /etc/eyaml/config.yaml, ~/.eyaml/config.yaml and
 * $EYAML_CONFIG) and the same output bytes (block layout, labels, `puts` newlines).
 *
 * The files eyaml reads are scanned with the tool's own parsers, which differ from the one
 * Puppet's lookup uses (src/crypto/eyaml.c): `decrypt` finds ENC[...] strings without whitespace and
 * ">\n<indent>ENC[...]" folded blocks, `-e` files hold DEC::PKCS7[...]! tokens.
 *
 * Differences: errors exit 1 (eyaml's option parser exits 255), error lines carry no ANSI
 * colours, `edit`/`recrypt` are not provided, and an unknown encryption method is an error
 * message instead of a Ruby backtrace.
 */
#include "cli/eyaml_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "crypto/eyaml.h"
#include "base/fileio.h"
#include "base/util.h"
#include "base/value.h"
#include "formats/psych.h"

#define EYAML_VERSION "3.3.0"

/* ------------------------------------------------------------------ options */

enum {
    O_METHOD,
    O_VERSION,
    O_VERBOSE,
    O_TRACE,
    O_QUIET,
    O_HELP,
    O_PASSWORD,
    O_STRING,
    O_FILE,
    O_STDIN,
    O_EYAML,
    O_OUTPUT,
    O_LABEL,
    O_PRIV,
    O_PUB,
    O_PRIV_ENV,
    O_PUB_ENV,
    O_SUBJECT,
    O_KEYSIZE,
    O_DIGEST,
    O_COUNT
};

enum { C_ENCRYPT = 1, C_DECRYPT = 2, C_CREATEKEYS = 4, C_OTHER = 8, C_ALL = 15 };

typedef struct {
    const char *name; /* long name with underscores, as in eyaml's option table */
    char shortname;
    bool arg;
    unsigned cmds;
    const char *dflt;
    const char *desc;
} optdef;

static const optdef OPTS[O_COUNT] = {
    [O_METHOD] = {"encrypt_method", 'n', true, C_ALL, "pkcs7", "Override default encryption and decryption method (default is PKCS7)"},
    [O_VERSION] = {"version", 0, false, C_ALL, NULL, "Show version information"},
    [O_VERBOSE] = {"verbose", 'v', false, C_ALL, NULL, "Be more verbose"},
    [O_TRACE] = {"trace", 't', false, C_ALL, NULL, "Enable trace debug"},
    [O_QUIET] = {"quiet", 'q', false, C_ALL, NULL, "Be less verbose"},
    [O_HELP] = {"help", 'h', false, C_ALL, NULL, "Information on how to use this command"},
    [O_PASSWORD] = {"password", 'p', false, C_ENCRYPT, NULL, "Source input is a password entered on the terminal"},
    [O_STRING] = {"string", 's', true, C_ENCRYPT | C_DECRYPT, NULL, "Source input is a string provided as an argument"},
    [O_FILE] = {"file", 'f', true, C_ENCRYPT | C_DECRYPT, NULL, "Source input is a regular file"},
    [O_STDIN] = {"stdin", 0, false, C_ENCRYPT | C_DECRYPT, NULL, "Source input is taken from stdin"},
    [O_EYAML] = {"eyaml", 'e', true, C_ENCRYPT | C_DECRYPT, NULL, "Source input is an eyaml file"},
    [O_OUTPUT] = {"output", 'o', true, C_ENCRYPT, "examples", "Output format of final result (examples, block, string)"},
    [O_LABEL] = {"label", 'l', true, C_ENCRYPT, NULL, "Apply a label to the encrypted result"},
    [O_PRIV] = {"pkcs7_private_key", 0, true, C_ALL, "./keys/private_key.pkcs7.pem", "Path to private key"},
    [O_PUB] = {"pkcs7_public_key", 0, true, C_ALL, "./keys/public_key.pkcs7.pem", "Path to public key"},
    [O_PRIV_ENV] = {"pkcs7_private_key_env_var", 0, true, C_ALL, NULL, "Name of environment variable to read private key from"},
    [O_PUB_ENV] = {"pkcs7_public_key_env_var", 0, true, C_ALL, NULL, "Name of environment variable to read public key from"},
    [O_SUBJECT] = {"pkcs7_subject", 0, true, C_ALL, "/", "Subject to use for certificate when creating keys"},
    [O_KEYSIZE] = {"pkcs7_keysize", 0, true, C_ALL, "2048", "Key size used for encryption"},
    [O_DIGEST] = {"pkcs7_digest", 0, true, C_ALL, "SHA256", "Hash function used for PKCS7"},
};

typedef struct {
    const char *cmdname;
    unsigned cmd;
    char *val[O_COUNT]; /* malloc'ed values (defaults included) */
    bool given[O_COUNT];
} cliopts;

static void opts_free(cliopts *o)
{
    for (int i = 0; i < O_COUNT; i++)
        free(o->val[i]);
}

/* Optimist-style errors: "Error: <msg>." then a hint. */
static int usage_error(const char *msg)
{
    fprintf(stderr, "Error: %s.\nTry --help for help.\n", msg);
    return 1;
}

/* hiera-eyaml's LoggingHelper.warn, without the colours. */
static int fail_msg(const char *msg)
{
    fprintf(stderr, "[hiera-eyaml-core] %s\n", msg);
    return 1;
}

static void info_msg(const cliopts *o, const char *msg)
{
    if (!o->given[O_QUIET])
        fprintf(stderr, "[hiera-eyaml-core] %s\n", msg);
}

static bool long_name_is(const char *name, size_t n, const char *arg)
{
    if (strlen(name) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char a = arg[i] == '-' ? '_' : arg[i];
        if (a != name[i])
            return false;
    }
    return true;
}

static void opt_dash_name(char *buf, size_t size, int id)
{
    snprintf(buf, size, "--%s", OPTS[id].name);
    for (char *p = buf; *p; p++)
        if (*p == '_')
            *p = '-';
}

static int set_opt(cliopts *o, int id, const char *value, const char *spelled)
{
    if (o->given[id]) {
        char *m = xasprintf("option '%s' specified multiple times", spelled);
        int r = usage_error(m);
        free(m);
        return r;
    }
    o->given[id] = true;
    if (OPTS[id].arg) {
        free(o->val[id]);
        o->val[id] = xstrdup(value);
    }
    return 0;
}

/* Parses argv[1..] (argv[0] is the subcommand). Returns 0, or the exit status of an error. */
static int parse_args(cliopts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (a[0] == '-' && a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t n = eq ? (size_t)(eq - name) : strlen(name);
            int id = -1;
            for (int k = 0; k < O_COUNT; k++)
                if ((OPTS[k].cmds & o->cmd) && long_name_is(OPTS[k].name, n, name))
                    id = k;
            if (id < 0) {
                char *m = xasprintf("unknown argument '%.*s'", (int)(n + 2), a);
                int r = usage_error(m);
                free(m);
                return r;
            }
            char spelled[64];
            snprintf(spelled, sizeof spelled, "--%.*s", (int)n, name);
            const char *value = NULL;
            if (OPTS[id].arg) {
                if (eq)
                    value = eq + 1;
                else if (i + 1 < argc)
                    value = argv[++i];
                else {
                    char *m = xasprintf("option '%s' needs a parameter", spelled);
                    int r = usage_error(m);
                    free(m);
                    return r;
                }
            } else if (eq) {
                char *m = xasprintf("option '%s' doesn't take a parameter", spelled);
                int r = usage_error(m);
                free(m);
                return r;
            }
            int r = set_opt(o, id, value, spelled);
            if (r)
                return r;
        } else if (a[0] == '-' && a[1]) {
            for (const char *c = a + 1; *c; c++) {
                int id = -1;
                for (int k = 0; k < O_COUNT; k++)
                    if ((OPTS[k].cmds & o->cmd) && OPTS[k].shortname == *c)
                        id = k;
                char spelled[3] = {'-', *c, 0};
                if (id < 0) {
                    char *m = xasprintf("unknown argument '%s'", spelled);
                    int r = usage_error(m);
                    free(m);
                    return r;
                }
                const char *value = NULL;
                if (OPTS[id].arg) {
                    if (c[1])
                        value = c + 1;
                    else if (i + 1 < argc)
                        value = argv[++i];
                    else {
                        char *m = xasprintf("option '%s' needs a parameter", spelled);
                        int r = usage_error(m);
                        free(m);
                        return r;
                    }
                }
                int r = set_opt(o, id, value, spelled);
                if (r)
                    return r;
                if (OPTS[id].arg)
                    break;
            }
        }
        /* other words are left over, as Optimist leaves them, and ignored */
    }
    return 0;
}

/* ------------------------------------------------------------------ files */

/* File.read, with Ruby's Errno messages. */
static char *read_path(const char *path, size_t *len, char **errmsg)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, NULL, &fe)) {
        sb_free(&b);
        *errmsg = file_read_ruby_message(path, &fe);
        return NULL;
    }
    *len = b.len;
    return sb_take(&b);
}

static char *read_stream(FILE *f, size_t *len)
{
    sbuf b = {0};
    char buf[65536];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0)
        sb_addn(&b, buf, r);
    *len = b.len;
    return sb_take(&b);
}

static bool is_regular_file(const char *path)
{
    struct stat st;
    return path && *path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Subcommand.load_config_file: every config file that exists supplies option defaults (string
 * keys named like the options, e.g. pkcs7_private_key). */
static int load_config_files(cliopts *o)
{
    const char *home = getenv("HOME"), *env = getenv("EYAML_CONFIG");
    char *files[3] = {xstrdup("/etc/eyaml/config.yaml"), xasprintf("%s/.eyaml/config.yaml", home ? home : ""),
                      xstrdup(env ? env : "")};
    int status = 0;
    for (int f = 0; f < 3 && status == 0; f++) {
        if (!is_regular_file(files[f]))
            continue;
        herr err = {0};
        hv *cfg = yaml_load_file(files[f], YAML_HIERA3, &err);
        herr_clear(&err);
        if (!cfg || !hv_is(cfg, HV_HASH)) {
            char *m = xasprintf("Could not open config file \"%s\" for reading", files[f]);
            status = fail_msg(m);
            free(m);
            hv_decref(cfg);
            break;
        }
        for (int id = 0; id < O_COUNT; id++) {
            const hv *v = hv_hash_gets(cfg, OPTS[id].name);
            if (!v)
                continue;
            char *text = NULL;
            if (hv_is(v, HV_STRING))
                text = xstrdup(hv_str_ptr(v));
            else if (hv_is(v, HV_INT))
                text = xasprintf("%lld", (long long)hv_int_val(v));
            if (text) {
                free(o->val[id]);
                o->val[id] = text;
            }
        }
        hv_decref(cfg);
    }
    for (int f = 0; f < 3; f++)
        free(files[f]);
    return status;
}

/* ------------------------------------------------------------------ token scanners */

static bool word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Ruby's \s */
static bool space_char(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

typedef struct {
    bool block;                /* the ">\n<indent>..." form */
    size_t start, end;         /* the whole match */
    size_t indent, indent_len; /* block indentation */
    size_t scheme, scheme_len; /* 0 length: none */
    size_t body, body_len;     /* base64 (ENC) or plaintext (DEC) */
} token;

/* ENC\[(\w+,)?([class]+?)\] at i; the class is [a-zA-Z0-9+/=] or, for blocks, with \s. */
static bool enc_at(const char *s, size_t len, size_t i, bool spaces, token *t)
{
    eyaml_enc_block m;
    if (!eyaml_enc_at(s, len, i, spaces ? EYAML_ENC_TOOL_BLOCK : EYAML_ENC_TOOL_STRING, &m))
        return false;
    t->end = m.end;
    t->scheme = m.scheme;
    t->scheme_len = m.scheme_len;
    t->body = m.payload;
    t->body_len = m.payload_len;
    return true;
}

/* Finds the first "]!" at or after q, remembering answers (the scans move forward, so DEC
 * candidates without a close stay linear). */
typedef struct {
    size_t none_from; /* no "]!" at or after this position (0 with !known_none: unknown) */
    bool known_none;
    size_t from, at; /* the first "]!" at or after `from` is at `at` */
    bool have;
} close_cache;

static size_t find_close(const char *s, size_t len, size_t q, close_cache *cc)
{
    if (cc->known_none && q >= cc->none_from)
        return SIZE_MAX;
    if (cc->have && q >= cc->from && q <= cc->at)
        return cc->at;
    const char *hit = q < len ? memmem(s + q, len - q, "]!", 2) : NULL;
    if (!hit) {
        if (!cc->known_none || q < cc->none_from)
            cc->none_from = q;
        cc->known_none = true;
        return SIZE_MAX;
    }
    cc->have = true;
    cc->from = q;
    cc->at = (size_t)(hit - s);
    return cc->at;
}

/* DEC(\(\d+\))?::(\w+)\[(.+?)\]! (with /m: the body may span lines) at i. */
static bool dec_at(const char *s, size_t len, size_t i, close_cache *cc, token *t)
{
    if (len - i < 3 || memcmp(s + i, "DEC", 3) != 0)
        return false;
    size_t p = i + 3;
    if (p < len && s[p] == '(') {
        size_t q = p + 1;
        while (q < len && s[q] >= '0' && s[q] <= '9')
            q++;
        if (q > p + 1 && q < len && s[q] == ')')
            p = q + 1;
    }
    if (len - p < 2 || s[p] != ':' || s[p + 1] != ':')
        return false;
    p += 2;
    size_t w = p;
    while (p < len && word_char((unsigned char)s[p]))
        p++;
    if (p == w || p >= len || s[p] != '[')
        return false;
    size_t body = p + 1;
    /* (.+?) takes at least one character */
    size_t close = find_close(s, len, body + 1, cc);
    if (close == SIZE_MAX)
        return false;
    t->scheme = w;
    t->scheme_len = p - w;
    t->body = body;
    t->body_len = close - body;
    t->end = close + 2;
    return true;
}

typedef struct {
    const char *s;
    size_t len;
    bool dec;          /* DEC tokens (encrypt -e) instead of ENC tokens */
    close_cache cc;
    /* per token type (0 string, 1 block): the leftmost match found so far, or none left */
    bool have[2], none[2];
    token tok[2];
} scanner;

/* The block form: >\n(\s*) then the token. */
static bool block_at(scanner *sc, size_t i, token *t)
{
    const char *s = sc->s;
    size_t len = sc->len;
    if (len - i < 2 || s[i] != '>' || s[i + 1] != '\n')
        return false;
    size_t p = i + 2;
    while (p < len && space_char((unsigned char)s[p]))
        p++;
    if (!(sc->dec ? dec_at(s, len, p, &sc->cc, t) : enc_at(s, len, p, true, t)))
        return false;
    t->block = true;
    t->start = i;
    t->indent = i + 2;
    t->indent_len = p - (i + 2);
    return true;
}

static bool string_at(scanner *sc, size_t i, token *t)
{
    if (!(sc->dec ? dec_at(sc->s, sc->len, i, &sc->cc, t) : enc_at(sc->s, sc->len, i, false, t)))
        return false;
    t->block = false;
    t->start = i;
    t->indent_len = 0;
    return true;
}

/* StringScanner#check_until for one token type: the leftmost match at or after pos. A match
 * found earlier that starts at or after pos is still the leftmost. */
static bool find_type(scanner *sc, int type, size_t pos)
{
    if (sc->none[type])
        return false;
    if (sc->have[type] && sc->tok[type].start >= pos)
        return true;
    sc->have[type] = false;
    const char *lead = type == 1 ? ">\n" : sc->dec ? "DEC" : "ENC[";
    size_t leadlen = strlen(lead);
    for (size_t i = pos; i + leadlen <= sc->len;) {
        const char *hit = memmem(sc->s + i, sc->len - i, lead, leadlen);
        if (!hit)
            break;
        size_t at = (size_t)(hit - sc->s);
        if (type == 1 ? block_at(sc, at, &sc->tok[1]) : string_at(sc, at, &sc->tok[0])) {
            sc->have[type] = true;
            return true;
        }
        i = at + 1;
    }
    sc->none[type] = true;
    return false;
}

/* hiera-eyaml's Parser: at each position the string type, then the block type; otherwise
 * plain text up to the earliest position where either matches (they cannot start at the same
 * place). Returns the next token at or after pos, or false. */
static bool next_token(scanner *sc, size_t pos, token *t)
{
    bool a = find_type(sc, 0, pos), b = find_type(sc, 1, pos);
    if (!a && !b)
        return false;
    if (a && (!b || sc->tok[0].start < sc->tok[1].start))
        *t = sc->tok[0];
    else
        *t = sc->tok[1];
    return true;
}

/* ------------------------------------------------------------------ shared steps */

static hv *key_options(const cliopts *o)
{
    hv *h = hv_hash();
    static const int ids[] = {O_PRIV, O_PUB, O_PRIV_ENV, O_PUB_ENV};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (o->val[ids[i]])
            hv_hash_sets(h, OPTS[ids[i]].name, hv_str(o->val[ids[i]]));
    return h;
}

/* Encryptor.find(method): only PKCS7 exists. */
static bool method_ok(const cliopts *o)
{
    const char *m = o->val[O_METHOD] ? o->val[O_METHOD] : "pkcs7";
    if (strcasecmp(m, "pkcs7") == 0)
        return true;
    char *lower = xstrdup(m);
    for (char *p = lower; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    char *base = strrchr(lower, '/');
    char *msg = xasprintf("cannot load such file -- hiera/backend/eyaml/encryptors/%s", base ? base + 1 : lower);
    fail_msg(msg);
    free(msg);
    free(lower);
    return false;
}

/* `puts text`: a newline unless text ends with one. */
static int put_result(const char *text, size_t len)
{
    fwrite(text, 1, len, stdout);
    if (len == 0 || text[len - 1] != '\n')
        fputc('\n', stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "[hiera-eyaml-core] error writing output: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* EncToken#to_encrypted in :block format: "ENC[...]" cut in 60-character lines, each
 * indented. */
static void add_block_lines(sbuf *out, const char *block, size_t n, const char *indent, size_t indent_len)
{
    sb_addn(out, indent, indent_len);
    for (size_t i = 0; i < n; i += 60) {
        if (i) {
            sb_addc(out, '\n');
            sb_addn(out, indent, indent_len);
        }
        sb_addn(out, block + i, n - i < 60 ? n - i : 60);
    }
}

/* Reads the chosen source. sources lists the option ids in eyaml's order for the command. */
static int read_source(cliopts *o, const int *sources, size_t nsources, int *which, char **data, size_t *len)
{
    int chosen[5], n = 0;
    for (size_t i = 0; i < nsources; i++)
        if (o->given[sources[i]])
            chosen[n++] = sources[i];
    if (n == 0)
        return usage_error("You must specify a source");
    if (n > 1) {
        sbuf b = {0};
        sb_adds(&b, "You can only specify one of (");
        for (int i = 0; i < n; i++)
            sb_addf(&b, "%s%s", i ? ", " : "", OPTS[chosen[i]].name);
        sb_adds(&b, ")");
        int r = usage_error(sb_str(&b));
        sb_free(&b);
        return r;
    }
    *which = chosen[0];
    char *errmsg = NULL;
    switch (chosen[0]) {
    case O_STRING:
        *len = strlen(o->val[O_STRING]);
        *data = xstrdup(o->val[O_STRING]);
        return 0;
    case O_FILE:
    case O_EYAML:
        *data = read_path(o->val[chosen[0]], len, &errmsg);
        if (!*data) {
            int r = fail_msg(errmsg);
            free(errmsg);
            return r;
        }
        return 0;
    case O_STDIN:
        *data = read_stream(stdin, len);
        return 0;
    case O_PASSWORD: {
        /* HighlineHelper.read_password: one line, surrounding whitespace stripped; the prompt
         * and the masking only on a terminal (and on stderr: stdout carries the result) */
        bool tty = isatty(STDIN_FILENO);
        struct termios saved, quiet;
        if (tty) {
            fputs("Enter password: ", stderr);
            fflush(stderr);
            if (tcgetattr(STDIN_FILENO, &saved) == 0) {
                quiet = saved;
                quiet.c_lflag &= ~(tcflag_t)ECHO;
                tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
            } else
                tty = false;
        }
        sbuf b = {0};
        int c;
        while ((c = getchar()) != EOF && c != '\n')
            sb_addc(&b, (char)c);
        if (tty) {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved);
            fputc('\n', stderr);
        }
        size_t s = 0, e = b.len;
        while (s < e && space_char((unsigned char)b.s[s]))
            s++;
        while (e > s && space_char((unsigned char)b.s[e - 1]))
            e--;
        *len = e - s;
        *data = xstrndup(b.s ? b.s + s : "", e - s);
        sb_free(&b);
        return 0;
    }
    }
    return usage_error("You must specify a source");
}

/* ------------------------------------------------------------------ encrypt */

static int encrypt_eyaml_file(cliopts *o, eyaml_ctx *e, const char *data, size_t len, sbuf *out)
{
    hv *opts = key_options(o);
    size_t pos = 0;
    token t;
    int status = 0;
    scanner sc = {.s = data, .len = len, .dec = true};
    while (pos < len && next_token(&sc, pos, &t)) {
        sb_addn(out, data + pos, t.start - pos);
        char *scheme = xstrndup(data + t.scheme, t.scheme_len);
        if (strcasecmp(scheme, "pkcs7") != 0) {
            for (char *p = scheme; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                    *p = (char)(*p - 'A' + 'a');
            char *m = xasprintf("cannot load such file -- hiera/backend/eyaml/encryptors/%s", scheme);
            status = fail_msg(m);
            free(m);
            free(scheme);
            break;
        }
        free(scheme);
        herr err = {0};
        char *block = eyaml_encrypt_options(e, data + t.body, t.body_len, opts, &err);
        if (!block) {
            status = fail_msg(err.msg ? err.msg : "encryption failed");
            herr_clear(&err);
            break;
        }
        if (t.block) {
            sb_adds(out, ">\n");
            add_block_lines(out, block, strlen(block), data + t.indent, t.indent_len);
        } else
            sb_adds(out, block);
        free(block);
        pos = t.end;
    }
    if (status == 0 && pos < len)
        sb_addn(out, data + pos, len - pos);
    hv_decref(opts);
    return status;
}

static int cmd_encrypt(cliopts *o)
{
    static const int sources[] = {O_PASSWORD, O_STRING, O_FILE, O_STDIN, O_EYAML};
    int which;
    char *data = NULL;
    size_t len = 0;
    int status = read_source(o, sources, 5, &which, &data, &len);
    if (status)
        return status;
    if (!method_ok(o)) {
        free(data);
        return 1;
    }
    eyaml_ctx *e = eyaml_new();
    sbuf out = {0};
    if (which == O_EYAML) {
        status = encrypt_eyaml_file(o, e, data, len, &out);
    } else {
        hv *opts = key_options(o);
        herr err = {0};
        char *block = eyaml_encrypt_options(e, data, len, opts, &err);
        hv_decref(opts);
        if (!block) {
            status = fail_msg(err.msg ? err.msg : "encryption failed");
            herr_clear(&err);
        } else {
            const char *fmt = o->val[O_OUTPUT] ? o->val[O_OUTPUT] : "examples";
            const char *label = o->val[O_LABEL];
            size_t n = strlen(block);
            if (strcmp(fmt, "block") == 0) {
                if (label)
                    sb_addf(&out, "%s: >\n", label);
                add_block_lines(&out, block, n, "  ", 2);
            } else if (strcmp(fmt, "string") == 0) {
                if (label)
                    sb_addf(&out, "%s: ", label);
                sb_adds(&out, block);
            } else if (strcmp(fmt, "examples") == 0) {
                sb_addf(&out, "%s: %s\n\nOR\n\n%s: >\n", label ? label : "string", block, label ? label : "block");
                add_block_lines(&out, block, n, "  ", 2);
            } else
                sb_adds(&out, block);
            free(block);
        }
    }
    if (status == 0)
        status = put_result(sb_str(&out), out.len);
    sb_free(&out);
    if (data)
        memset(data, 0, len);
    free(data);
    eyaml_free(e);
    return status;
}

/* ------------------------------------------------------------------ decrypt */

static int cmd_decrypt(cliopts *o)
{
    static const int sources[] = {O_EYAML, O_STRING, O_FILE, O_STDIN};
    int which;
    char *data = NULL;
    size_t len = 0;
    int status = read_source(o, sources, 4, &which, &data, &len);
    if (status)
        return status;
    eyaml_ctx *e = eyaml_new();
    hv *opts = key_options(o);
    const char *method = o->val[O_METHOD] ? o->val[O_METHOD] : "pkcs7";
    sbuf out = {0};
    size_t pos = 0;
    bool yamled = false; /* a plain-text token came before (decrypt.rb's `yamled`) */
    token t;
    scanner sc = {.s = data, .len = len, .dec = false};
    while (status == 0 && pos < len && next_token(&sc, pos, &t)) {
        if (t.start > pos) {
            sb_addn(&out, data + pos, t.start - pos);
            yamled = true;
        }
        herr err = {0};
        size_t plen = 0;
        /* a block without a scheme uses the default one (-n) */
        const char *scheme = t.scheme_len ? data + t.scheme : method;
        size_t scheme_len = t.scheme_len ? t.scheme_len : strlen(method);
        char *plain = eyaml_decrypt_block(e, scheme, scheme_len, data + t.body, t.body_len, opts, &plen, &err);
        if (!plain) {
            status = fail_msg(err.msg ? err.msg : "decryption failed");
            herr_clear(&err);
            break;
        }
        if (which == O_EYAML) {
            /* to_decrypted: DEC::PKCS7[plain]!, blocks keep their chevron and indentation */
            if (t.block) {
                sb_adds(&out, ">\n");
                sb_addn(&out, data + t.indent, t.indent_len);
            }
            sb_adds(&out, "DEC::PKCS7[");
            sb_addn(&out, plain, plen);
            sb_adds(&out, "]!");
        } else if (yamled && (memchr(plain, '\n', plen) || memchr(plain, '\r', plen))) {
            /* a multi-line secret after YAML text becomes a literal block: "|\n  " and two
             * spaces after every run of line breaks */
            yamled = false;
            sb_adds(&out, "|\n  ");
            for (size_t i = 0; i < plen;) {
                if (plain[i] == '\n' || plain[i] == '\r') {
                    while (i < plen && (plain[i] == '\n' || plain[i] == '\r'))
                        sb_addc(&out, plain[i++]);
                    sb_adds(&out, "  ");
                } else
                    sb_addc(&out, plain[i++]);
            }
        } else {
            yamled = false;
            sb_addn(&out, plain, plen);
        }
        memset(plain, 0, plen);
        free(plain);
        pos = t.end;
    }
    if (status == 0) {
        if (pos < len)
            sb_addn(&out, data + pos, len - pos);
        status = put_result(sb_str(&out), out.len);
    }
    if (out.s)
        memset(out.s, 0, out.len);
    sb_free(&out);
    hv_decref(opts);
    free(data);
    eyaml_free(e);
    return status;
}

/* ------------------------------------------------------------------ createkeys */

/* EncryptHelper.ensure_key_dir_exists: mkdir -p of the file's directory. */
static int ensure_key_dir(const cliopts *o, const char *file)
{
    char *dir = xstrdup(file);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        free(dir);
        return 0;
    }
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        free(dir);
        return 0;
    }
    bool ok = true;
    for (char *p = dir + 1; ok; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(dir, 0777) != 0 && errno != EEXIST)
                ok = false;
            else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
                ok = false;
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    char *m = xasprintf(ok ? "Created key directory: %s" : "Cannot create key directory: %s", dir);
    int status = 0;
    if (ok)
        info_msg(o, m);
    else
        status = fail_msg(m);
    free(m);
    free(dir);
    return status;
}

/* write_important_file's question before overwriting. */
static int confirm_overwrite(const char *file)
{
    struct stat st;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    fprintf(stderr, "Are you sure you want to overwrite \"%s\"? (y/N): ", file);
    fflush(stderr);
    char line[64] = "";
    if (!fgets(line, sizeof line, stdin))
        line[0] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0)
        return 0;
    return fail_msg("User aborted");
}

static int cmd_createkeys(cliopts *o)
{
    if (!method_ok(o))
        return 1;
    const char *priv = o->val[O_PRIV], *pub = o->val[O_PUB];
    char *end = NULL;
    long keysize = strtol(o->val[O_KEYSIZE] ? o->val[O_KEYSIZE] : "2048", &end, 10);
    if (!end || *end || keysize <= 0 || keysize > 16384)
        return usage_error("option '--pkcs7-keysize' needs an integer");
    int status = ensure_key_dir(o, priv);
    if (!status)
        status = confirm_overwrite(priv);
    if (!status)
        status = ensure_key_dir(o, pub);
    if (!status)
        status = confirm_overwrite(pub);
    if (status)
        return status;
    herr err = {0};
    if (!eyaml_createkeys(priv, pub, o->val[O_SUBJECT], (int)keysize, o->val[O_DIGEST], &err)) {
        status = fail_msg(err.msg ? err.msg : "key creation failed");
        herr_clear(&err);
        return status;
    }
    info_msg(o, "Keys created OK");
    return 0;
}

/* ------------------------------------------------------------------ help */

static void print_help(const cliopts *o, const char *description)
{
    printf("eyaml %s: %s\n\nUsage: hiera eyaml %s [options]\n\nOptions:\n", o->cmdname, description, o->cmdname);
    for (int id = 0; id < O_COUNT; id++) {
        if (!(OPTS[id].cmds & o->cmd))
            continue;
        char name[64];
        opt_dash_name(name, sizeof name, id);
        char left[96];
        if (OPTS[id].shortname)
            snprintf(left, sizeof left, "-%c, %s%s", OPTS[id].shortname, name, OPTS[id].arg ? "=<s>" : "");
        else
            snprintf(left, sizeof left, "%s%s", name, OPTS[id].arg ? "=<s>" : "");
        printf("  %-33s  %s", left, OPTS[id].desc);
        if (OPTS[id].dflt)
            printf(" (default: %s)", OPTS[id].dflt);
        printf("\n");
    }
}

static void print_main_help(void)
{
    printf("Welcome to eyaml %s (hiera eyaml)\n\n"
           "Usage:\n"
           "hiera eyaml subcommand [global-opts] [subcommand-opts]\n\n"
           "Available subcommands:\n"
           "     createkeys: create a set of keys with which to encrypt/decrypt eyaml data\n"
           "        decrypt: decrypt some data\n"
           "        encrypt: encrypt some data\n"
           "        version: show version information\n\n"
           "For more help on an individual command, use --help on that command\n",
           EYAML_VERSION);
}

/* ------------------------------------------------------------------ main */

int eyaml_main(int argc, char **argv)
{
    if (argc < 1 || argv[0][0] == '-' || strcmp(argv[0], "help") == 0) {
        print_main_help();
        return 0;
    }
    cliopts o = {0};
    o.cmdname = argv[0];
    const char *description = "";
    if (strcmp(argv[0], "encrypt") == 0) {
        o.cmd = C_ENCRYPT;
        description = "encrypt some data";
    } else if (strcmp(argv[0], "decrypt") == 0) {
        o.cmd = C_DECRYPT;
        description = "decrypt some data";
    } else if (strcmp(argv[0], "createkeys") == 0) {
        o.cmd = C_CREATEKEYS;
        description = "create a set of keys with which to encrypt/decrypt eyaml data";
    } else if (strcmp(argv[0], "version") == 0) {
        o.cmd = C_OTHER;
        description = "show version information";
    } else {
        fprintf(stderr,
                "Unknown subcommand: %s\n\nUsage: hiera eyaml <subcommand>\n\n"
                "Please use one of the following subcommands or help for more help:\n"
                "  createkeys, decrypt, encrypt, version\n",
                argv[0]);
        return 1;
    }
    for (int id = 0; id < O_COUNT; id++)
        o.val[id] = OPTS[id].dflt ? xstrdup(OPTS[id].dflt) : NULL;
    int status = load_config_files(&o);
    if (status == 0)
        status = parse_args(&o, argc, argv);
    if (status == 0 && o.given[O_HELP]) {
        print_help(&o, description);
    } else if (status == 0 && o.given[O_VERSION]) {
        printf("Hiera-eyaml version %s\n", EYAML_VERSION);
    } else if (status == 0) {
        switch (o.cmd) {
        case C_ENCRYPT: status = cmd_encrypt(&o); break;
        case C_DECRYPT: status = cmd_decrypt(&o); break;
        case C_CREATEKEYS: status = cmd_createkeys(&o); break;
        default: info_msg(&o, "hiera-eyaml (core): " EYAML_VERSION); break;
        }
    }
    opts_free(&o);
    return status;
}
