/* eyaml.c - hiera-eyaml 3.3's ENC[PKCS7,<base64>] blocks through OpenSSL 3.
 *
 * Decryption follows what Puppet's eyaml_lookup_key runs: the `encrypted?` test, hiera-eyaml's
 * "hiera backend parser" (ENC[...] blocks anywhere in a string, spaces and newlines allowed in
 * the base64), Base64.decode64, and the Pkcs7 encryptor (read the private key file, parse it as
 * OpenSSL::PKey::RSA.new does, read the certificate, OpenSSL::PKCS7.new, PKCS7#decrypt).
 * Every failure carries the message of the Ruby exception the reference raises at that step,
 * which Ruby's openssl extension builds from OpenSSL's error queue: we call the same OpenSSL
 * functions in the same order so that the queue, and hence the text, is the same.
 *
 * A context caches keys by path (re-read when stat() says the file changed) and decrypted
 * blocks by (key generation, block text), so a block costs one RSA operation per process.
 * Plaintext never enters an error message; cached plaintext is wiped when freed.
 */
#include "crypto/eyaml.h"
#include "base/diag.h"
#include "base/fileio.h"
#include "formats/render.h"
#include "base/fsjournal.h"
#include "base/lazylib.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* ------------------------------------------------------------------ context */

/* One loaded private key or certificate. */
typedef struct keyslot {
    struct keyslot *next;
    bool cert;     /* certificate (pkcs7_public_key) or private key (pkcs7_private_key) */
    bool from_env; /* name is an environment variable (pkcs7_*_key_env_var) instead of a path */
    char *name;
    /* identity of the file when it was read */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
    /* the PEM text of an environment variable, to notice a change */
    char *content;
    size_t content_len;
    EVP_PKEY *pkey;
    bool is_private;
    X509 *x509;
    unsigned long gen; /* unique per load: part of the block cache key */
} keyslot;

/* One decrypted block (or the error it gave). */
typedef struct blockent {
    struct blockent *next;
    uint64_t hash;
    unsigned long priv_gen, cert_gen;
    char *b64; /* the block's base64 with whitespace removed */
    size_t b64_len;
    char *plain; /* NULL when the block failed */
    size_t plain_len;
    char *errmsg;
    eyaml_errclass errclass;
} blockent;

struct eyaml_ctx {
    keyslot *keys;
    blockent **buckets;
    size_t nbuckets, nblocks;
    unsigned long next_gen;
    unsigned long decrypts;
    eyaml_errclass last_class;
    bool frozen; /* key files are not re-checked */
    bool v42;    /* hiera-eyaml 4.2 on ruby/openssl 3.2 (Debian 13) rather than 3.3 on 3.0 */
};

static void wipe_free(char *p, size_t n)
{
    if (p) {
        OPENSSL_cleanse(p, n);
        free(p);
    }
}

void eyaml_freeze(eyaml_ctx *e) { e->frozen = true; }

void eyaml_set_debian13(eyaml_ctx *e, bool on) { e->v42 = on; }

eyaml_ctx *eyaml_new(void)
{
    eyaml_ctx *e = xcalloc(1, sizeof *e);
    e->nbuckets = 64;
    e->buckets = xcalloc(e->nbuckets, sizeof *e->buckets);
    e->next_gen = 1;
    return e;
}

static void keyslot_free(keyslot *k)
{
    free(k->name);
    wipe_free(k->content, k->content_len);
    EVP_PKEY_free(k->pkey);
    X509_free(k->x509);
    free(k);
}

static void blockent_free(blockent *b)
{
    free(b->b64);
    wipe_free(b->plain, b->plain_len);
    free(b->errmsg);
    free(b);
}

void eyaml_free(eyaml_ctx *e)
{
    if (!e)
        return;
    while (e->keys) {
        keyslot *k = e->keys;
        e->keys = k->next;
        keyslot_free(k);
    }
    for (size_t i = 0; i < e->nbuckets; i++) {
        while (e->buckets[i]) {
            blockent *b = e->buckets[i];
            e->buckets[i] = b->next;
            blockent_free(b);
        }
    }
    free(e->buckets);
    free(e);
}

eyaml_errclass eyaml_last_error_class(const eyaml_ctx *e) { return e ? e->last_class : EYAML_ERR_NONE; }

unsigned long eyaml_decrypt_count(const eyaml_ctx *e) { return e ? e->decrypts : 0; }

/* Records a failure: the message for err, the class for the caller's wrapping decision. */
static void fail(eyaml_ctx *e, herr *err, eyaml_errclass cls, const char *msg)
{
    if (e)
        e->last_class = cls;
    herr_set(err, cls == EYAML_ERR_LOAD ? HERR_ERROR : HERR_LOOKUP, "%s", msg);
}

/* OpenSSL usable: libhiera links it, the hiera command opens it on first use (a harmless call
 * opens it here) and may find it missing; false with the reason as a LoadError (Ruby's
 * `require 'openssl'` would fail so). Called before the first OpenSSL call of every entry. */
static bool crypto_ready(eyaml_ctx *e, herr *err)
{
    ERR_clear_error();
    const char *why = lazylib_failure(LAZYLIB_CRYPTO);
    if (__builtin_expect(why == NULL, 1))
        return true;
    fail(e, err, EYAML_ERR_LOAD, why);
    return false;
}

/* ------------------------------------------------------------------ Ruby-shaped messages */

/* Ruby's openssl extension (ossl_make_error): "<msg>: <reason of the last queued error>", or
 * just the reason when msg is empty; from 3.1 on (Ruby 3.3's 3.2) the error's data follows in
 * parentheses ("no start line (Expecting: PKCS7)"). The queue is then cleared. */
static char *ossl_message(const char *msg, bool with_data)
{
    sbuf b = {0};
    sb_adds(&b, msg);
    const char *data = NULL;
    int flags = 0;
    unsigned long code = with_data ? ERR_peek_last_error_data(&data, &flags) : ERR_peek_last_error();
    if (code) {
        const char *reason = ERR_reason_error_string(code);
        if (b.len)
            sb_adds(&b, ": ");
        sb_adds(&b, reason ? reason : "(null)");
        if (data && (flags & ERR_TXT_STRING) && *data)
            sb_addf(&b, " (%s)", data);
    }
    ERR_clear_error();
    return sb_take(&b);
}

static void fail_ossl(eyaml_ctx *e, herr *err, eyaml_errclass cls, const char *msg)
{
    char *m = ossl_message(msg, e && e->v42);
    fail(e, err, cls, m);
    free(m);
}

/* ------------------------------------------------------------------ options */

/* hiera-eyaml's Options.set turns every key into a Symbol, so "k" and :k name the same option
 * and the later entry wins. Returns the value (BORROWED) or NULL. */
static const hv *opt_get(const hv *options, const char *name)
{
    if (!options || !hv_is(options, HV_HASH))
        return NULL;
    const hv *found = NULL;
    size_t n = strlen(name);
    for (size_t i = 0; i < hv_hash_len(options); i++) {
        const hv *k = hv_hash_key_at(options, i);
        if ((hv_is(k, HV_STRING) || hv_is(k, HV_SYMBOL)) && hv_str_len(k) == n && memcmp(hv_str_ptr(k), name, n) == 0)
            found = hv_hash_val_at(options, i);
    }
    return found;
}

/* ------------------------------------------------------------------ base64 */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Ruby's Base64.decode64 (String#unpack1("m")), which never fails: characters outside the
 * alphabet are skipped, a '=' in the third or fourth place of a group ends the decoding
 * (whatever follows is ignored), and a trailing partial group still yields its bytes. */
static unsigned char *ruby_decode64(const char *s, size_t n, size_t *outlen)
{
    unsigned char *out = xmalloc(n / 4 * 3 + 3);
    size_t o = 0, i = 0;
    int a = -1, b = -1, c = -1, d = -1;
    while (i < n) {
        a = b = c = d = -1;
        while (i < n && (a = b64_value((unsigned char)s[i])) == -1)
            i++;
        if (i >= n)
            break;
        i++;
        while (i < n && (b = b64_value((unsigned char)s[i])) == -1)
            i++;
        if (i >= n)
            break;
        i++;
        while (i < n && (c = b64_value((unsigned char)s[i])) == -1 && s[i] != '=')
            i++;
        if (i >= n || s[i] == '=')
            break;
        i++;
        while (i < n && (d = b64_value((unsigned char)s[i])) == -1 && s[i] != '=')
            i++;
        if (i >= n || s[i] == '=')
            break;
        i++;
        out[o++] = (unsigned char)(a << 2 | b >> 4);
        out[o++] = (unsigned char)(b << 4 | c >> 2);
        out[o++] = (unsigned char)(c << 6 | d);
        a = -1;
    }
    if (a != -1 && b != -1) {
        out[o++] = (unsigned char)(a << 2 | b >> 4);
        if (c != -1)
            out[o++] = (unsigned char)(b << 4 | c >> 2);
    }
    *outlen = o;
    return out;
}

/* Base64.strict_encode64: no line breaks. */
static char *strict_encode64(const unsigned char *p, size_t n)
{
    char *out = xmalloc((n + 2) / 3 * 4 + 1);
    size_t o = 0;
    /* EVP_EncodeBlock takes an int length: feed it in slices that are multiples of 3 */
    while (n > 0) {
        size_t chunk = n > 3u * (1u << 20) ? 3u * (1u << 20) : n;
        o += (size_t)EVP_EncodeBlock((unsigned char *)out + o, p, (int)chunk);
        p += chunk;
        n -= chunk;
    }
    out[o] = '\0';
    return out;
}

/* ------------------------------------------------------------------ the hiera backend parser */

static bool is_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The payload classes: [a-zA-Z0-9+/=] and the white space each admits. EncHieraTokenType admits
 * only spaces and newlines (not tabs or carriage returns); the eyaml tool's block form any \s. */
static bool is_payload_char(unsigned char c, eyaml_enc_class cls)
{
    if (b64_value(c) >= 0 || c == '=')
        return true;
    switch (cls) {
    case EYAML_ENC_HIERA: return c == ' ' || c == '\n';
    case EYAML_ENC_TOOL_BLOCK: return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
    case EYAML_ENC_TOOL_STRING: break;
    }
    return false;
}

bool eyaml_enc_at(const char *s, size_t len, size_t i, eyaml_enc_class cls, eyaml_enc_block *m)
{
    if (i > len || len - i < 4 || memcmp(s + i, "ENC[", 4) != 0)
        return false;
    size_t p = i + 4;
    /* (\w+,) first, as the regexp tries it, then without it */
    for (int with_scheme = 1; with_scheme >= 0; with_scheme--) {
        size_t q = p, scheme_len = 0;
        if (with_scheme) {
            while (q < len && is_word_char((unsigned char)s[q]))
                q++;
            if (q == p || q >= len || s[q] != ',')
                continue;
            scheme_len = q - p;
            q++;
        }
        size_t payload = q;
        bool blank = true;
        for (; q < len && is_payload_char((unsigned char)s[q], cls); q++)
            if (b64_value((unsigned char)s[q]) >= 0 || s[q] == '=')
                blank = false;
        if (q == payload || q >= len || s[q] != ']')
            continue;
        *m = (eyaml_enc_block){.start = i, .end = q + 1, .scheme = p, .scheme_len = scheme_len,
                               .payload = payload, .payload_len = q - payload, .blank = blank};
        return true;
    }
    return false;
}

bool eyaml_enc_find(const char *s, size_t len, size_t from, eyaml_enc_class cls, eyaml_enc_block *m)
{
    while (from + 4 <= len) {
        const char *hit = memmem(s + from, len - from, "ENC[", 4);
        if (!hit)
            return false;
        size_t i = (size_t)(hit - s);
        if (eyaml_enc_at(s, len, i, cls, m))
            return true;
        from = i + 1;
    }
    return false;
}

/* eyaml_lookup_key's `encrypted?`: /.*ENC\[.*?\]/ =~ data. '.' stops at "\n", so "ENC[" and a
 * later "]" must share a line: a literal block scalar holding a multi-line block is NOT
 * encrypted for Puppet and passes through as it is (a folded one is). */
bool eyaml_is_encrypted(const char *s, size_t len)
{
    if (!s)
        return false;
    bool open = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\n')
            open = false;
        else if (!open && c == 'E' && len - i >= 4 && memcmp(s + i, "ENC[", 4) == 0) {
            open = true;
            i += 3;
        } else if (open && c == ']')
            return true;
    }
    return false;
}

/* ------------------------------------------------------------------ key files */

/* File.read(path), with Ruby's words when it fails; the buffers the key passes through wiped. */
static bool read_file(eyaml_ctx *e, const char *path, char **out, size_t *outlen, struct stat *st, herr *err)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, &(file_read_opts){.secret = true, .st = st}, &fe)) {
        wipe_free(b.s, b.cap);
        char *m = file_read_ruby_message(path, &fe);
        fail(e, err, EYAML_ERR_STANDARD, m);
        free(m);
        return false;
    }
    *outlen = b.len;
    *out = sb_take(&b);
    return true;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return -1;
}

/* Tries one OSSL_DECODER pass over the BIO, restarting after each PEM block it skipped, as
 * Ruby's ossl_pkey_read_generic loops. */
static bool decode_pkey_pass(OSSL_DECODER_CTX *dctx, BIO *bio)
{
    long pos = 0;
    for (;;) {
        if (OSSL_DECODER_from_bio(dctx, bio) == 1)
            return true;
        if (BIO_eof(bio))
            return false;
        long pos2 = BIO_tell(bio);
        if (pos2 < 0 || pos2 <= pos)
            return false;
        ERR_clear_error();
        pos = pos2;
    }
}

/* OpenSSL::PKey::RSA.new(pem) of ruby/openssl 3.0: DER of any key kind, then PEM private
 * keys, then any PEM key; "Neither PUB key nor PRIV key: <reason>" when nothing decodes and
 * "incorrect pkey type: <sn>" for a key that is not RSA. An encrypted key cannot be used
 * (Ruby would prompt on the terminal for its pass phrase). */
static EVP_PKEY *parse_private_key(eyaml_ctx *e, const char *pem, size_t len, herr *err)
{
    if (len > INT_MAX) {
        fail(e, err, EYAML_ERR_STANDARD, "Neither PUB key nor PRIV key");
        return NULL;
    }
    ERR_clear_error();
    EVP_PKEY *pkey = NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    OSSL_DECODER_CTX *dctx = OSSL_DECODER_CTX_new_for_pkey(&pkey, "DER", NULL, NULL, 0, NULL, NULL);
    bool ok = false;
    if (bio && dctx && OSSL_DECODER_CTX_set_pem_password_cb(dctx, no_passphrase, NULL) == 1) {
        ok = OSSL_DECODER_from_bio(dctx, bio) == 1;
        if (!ok) {
            (void)BIO_reset(bio);
            ERR_clear_error();
            if (OSSL_DECODER_CTX_set_input_type(dctx, "PEM") == 1 &&
                OSSL_DECODER_CTX_set_selection(dctx, EVP_PKEY_KEYPAIR) == 1)
                ok = decode_pkey_pass(dctx, bio);
        }
        if (!ok) {
            (void)BIO_reset(bio);
            ERR_clear_error();
            if (OSSL_DECODER_CTX_set_selection(dctx, 0) == 1)
                ok = decode_pkey_pass(dctx, bio);
        }
    }
    OSSL_DECODER_CTX_free(dctx);
    BIO_free(bio);
    if (!ok || !pkey) {
        EVP_PKEY_free(pkey);
        fail_ossl(e, err, EYAML_ERR_STANDARD, "Neither PUB key nor PRIV key");
        return NULL;
    }
    ERR_clear_error();
    int type = EVP_PKEY_get_base_id(pkey);
    if (type != EVP_PKEY_RSA) {
        const char *sn = OBJ_nid2sn(type);
        char *m = xasprintf("incorrect pkey type: %s", sn ? sn : "(null)");
        fail(e, err, EYAML_ERR_STANDARD, m);
        free(m);
        EVP_PKEY_free(pkey);
        return NULL;
    }
    return pkey;
}

/* Whether an RSA key has its private exponent (Ruby's PKey#private?). */
static bool pkey_has_private(EVP_PKEY *pkey)
{
    BIGNUM *d = NULL;
    bool yes = EVP_PKEY_get_bn_param(pkey, "d", &d) == 1 && d != NULL;
    BN_clear_free(d);
    ERR_clear_error();
    return yes;
}

/* OpenSSL::X509::Certificate.new(pem): DER, then PEM; "PEM_read_bio_X509: <reason>". */
static X509 *parse_certificate(eyaml_ctx *e, const char *pem, size_t len, herr *err)
{
    X509 *x = NULL;
    ERR_clear_error();
    BIO *bio = len <= INT_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    if (bio) {
        x = d2i_X509_bio(bio, NULL);
        if (!x) {
            (void)BIO_reset(bio);
            ERR_clear_error();
            x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        }
        BIO_free(bio);
    }
    if (!x) {
        fail_ossl(e, err, EYAML_ERR_STANDARD, "PEM_read_bio_X509");
        return NULL;
    }
    ERR_clear_error();
    return x;
}

static keyslot *slot_find(eyaml_ctx *e, bool cert, bool from_env, const char *name)
{
    for (keyslot *k = e->keys; k; k = k->next)
        if (k->cert == cert && k->from_env == from_env && strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

static bool same_file(const keyslot *k, const struct stat *st)
{
    return k->dev == st->st_dev && k->ino == st->st_ino && k->size == st->st_size &&
           k->mtim.tv_sec == st->st_mtim.tv_sec && k->mtim.tv_nsec == st->st_mtim.tv_nsec &&
           k->ctim.tv_sec == st->st_ctim.tv_sec && k->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/* Drops the cached blocks decrypted with a key generation that is gone. */
static void purge_blocks(eyaml_ctx *e, unsigned long gen)
{
    for (size_t i = 0; i < e->nbuckets; i++) {
        blockent **pp = &e->buckets[i];
        while (*pp) {
            blockent *b = *pp;
            if (b->priv_gen == gen || b->cert_gen == gen) {
                *pp = b->next;
                blockent_free(b);
                e->nblocks--;
            } else
                pp = &b->next;
        }
    }
}

/* Parses text as a key or certificate and stores it in the slot for (cert, from_env, name),
 * replacing an older load. */
static keyslot *slot_store(eyaml_ctx *e, bool cert, bool from_env, const char *name, const char *text, size_t len,
                           const struct stat *st, herr *err)
{
    EVP_PKEY *pkey = NULL;
    X509 *x509 = NULL;
    if (cert)
        x509 = parse_certificate(e, text, len, err);
    else
        pkey = parse_private_key(e, text, len, err);
    if (!x509 && !pkey)
        return NULL;
    keyslot *k = slot_find(e, cert, from_env, name);
    if (k) {
        purge_blocks(e, k->gen);
        EVP_PKEY_free(k->pkey);
        X509_free(k->x509);
        wipe_free(k->content, k->content_len);
        k->content = NULL;
        k->content_len = 0;
    } else {
        k = xcalloc(1, sizeof *k);
        k->cert = cert;
        k->from_env = from_env;
        k->name = xstrdup(name);
        k->next = e->keys;
        e->keys = k;
    }
    k->pkey = pkey;
    k->x509 = x509;
    k->is_private = pkey && pkey_has_private(pkey);
    k->gen = e->next_gen++;
    if (st) {
        k->dev = st->st_dev;
        k->ino = st->st_ino;
        k->size = st->st_size;
        k->mtim = st->st_mtim;
        k->ctim = st->st_ctim;
    } else {
        k->content = xmalloc(len + 1);
        memcpy(k->content, text, len);
        k->content[len] = '\0';
        k->content_len = len;
    }
    return k;
}

static keyslot *slot_from_file(eyaml_ctx *e, bool cert, const char *path, herr *err)
{
    struct stat st;
    keyslot *k = slot_find(e, cert, false, path);
    if (k && (e->frozen || (fs_stat(path, &st) == 0 && same_file(k, &st))))
        return k;
    char *text;
    size_t len;
    if (!read_file(e, path, &text, &len, &st, err))
        return NULL;
    k = slot_store(e, cert, false, path, text, len, &st, err);
    wipe_free(text, len);
    return k;
}

static keyslot *slot_from_env(eyaml_ctx *e, bool cert, const char *var, const char *text, herr *err)
{
    size_t len = strlen(text);
    keyslot *k = slot_find(e, cert, true, var);
    if (k && k->content_len == len && memcmp(k->content, text, len) == 0)
        return k;
    return slot_store(e, cert, true, var, text, len, NULL, err);
}

/* Ruby's checks of a String option used as an environment variable's name (ENV[var]) or a
 * file's (File.read(path)): false, with err, when Ruby raises. */
static bool ruby_string_arg(eyaml_ctx *e, const hv *v, bool env_name, herr *err)
{
    if (!v || !hv_is(v, HV_STRING)) {
        char *m = xasprintf("no implicit conversion of %s into String", v ? ruby_conversion_name(v) : "nil");
        fail(e, err, EYAML_ERR_STANDARD, m);
        free(m);
        return false;
    }
    if (memchr(hv_str_ptr(v), 0, hv_str_len(v))) {
        fail(e, err, EYAML_ERR_STANDARD, env_name ? "bad environment variable name: contains null byte"
                                                  : "path name contains null byte");
        return false;
    }
    return true;
}

/* The key hiera-eyaml's Pkcs7 encryptor reads for option `base` ("pkcs7_private_key" or
 * "pkcs7_public_key"): the environment variable named by <base>_env_var when that option is
 * set and the variable exists, else File.read(<base>). */
static keyslot *load_key(eyaml_ctx *e, const hv *options, const char *base, bool cert, herr *err)
{
    char envopt[64];
    snprintf(envopt, sizeof envopt, "%s_env_var", base);
    const hv *path = opt_get(options, base), *var = opt_get(options, envopt);
    if (var && hv_truthy(var)) {
        /* ENV[name] */
        if (!ruby_string_arg(e, var, true, err))
            return NULL;
        const char *text = fs_getenv(hv_str_ptr(var));
        if (text)
            return slot_from_env(e, cert, hv_str_ptr(var), text, err);
    }
    /* File.read(path) */
    if (!ruby_string_arg(e, path, false, err))
        return NULL;
    return slot_from_file(e, cert, hv_str_ptr(path), err);
}

/* Pkcs7.load_ANY_key_pem of hiera-eyaml 4.2 for the private key: the environment variable
 * pkcs7_private_key_env_var names wins over the file pkcs7_private_key (a warning when both are
 * given), and must be set; the file must exist. */
static keyslot *load_private_key_42(eyaml_ctx *e, const hv *options, herr *err)
{
    const hv *path = opt_get(options, "pkcs7_private_key"), *var = opt_get(options, "pkcs7_private_key_env_var");
    bool has_path = path && hv_truthy(path), has_var = var && hv_truthy(var);
    if (has_path && has_var) /* (Kernel#warn) */
        diag_warn("eyaml-keys", NULL, 0, 0, "both private_key and private_key_env_var specified, using private_key_env_var");
    if (has_var) {
        if (!ruby_string_arg(e, var, true, err))
            return NULL;
        const char *text = fs_getenv(hv_str_ptr(var));
        if (!text) {
            char *m = xasprintf("env %s is not set", hv_str_ptr(var));
            fail(e, err, EYAML_ERR_STANDARD, m);
            free(m);
            return NULL;
        }
        return slot_from_env(e, false, hv_str_ptr(var), text, err);
    }
    if (!has_path) {
        fail(e, err, EYAML_ERR_STANDARD, "pkcs7_private_key is not defined");
        return NULL;
    }
    if (!ruby_string_arg(e, path, false, err))
        return NULL;
    if (!path_exists(hv_str_ptr(path))) { /* File.exist? */
        char *m = xasprintf("file %s does not exist", hv_str_ptr(path));
        fail(e, err, EYAML_ERR_STANDARD, m);
        free(m);
        return NULL;
    }
    return slot_from_file(e, false, hv_str_ptr(path), err);
}

/* Whether the option pair (<base>, <base>_env_var) names a key at all (Ruby truthiness). */
static bool key_defined(const hv *options, const char *base)
{
    char envopt[64];
    snprintf(envopt, sizeof envopt, "%s_env_var", base);
    const hv *a = opt_get(options, base), *b = opt_get(options, envopt);
    return (a && hv_truthy(a)) || (b && hv_truthy(b));
}

/* ------------------------------------------------------------------ block cache */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t block_hash(unsigned long pg, unsigned long cg, const char *b64, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    h = fnv1a(h, &pg, sizeof pg);
    h = fnv1a(h, &cg, sizeof cg);
    return fnv1a(h, b64, n);
}

static blockent *block_get(eyaml_ctx *e, uint64_t h, unsigned long pg, unsigned long cg, const char *b64, size_t n)
{
    for (blockent *b = e->buckets[h % e->nbuckets]; b; b = b->next)
        if (b->hash == h && b->priv_gen == pg && b->cert_gen == cg && b->b64_len == n && memcmp(b->b64, b64, n) == 0)
            return b;
    return NULL;
}

static void block_put(eyaml_ctx *e, blockent *b)
{
    if (e->nblocks >= e->nbuckets * 2) {
        size_t nn = e->nbuckets * 2;
        blockent **nb = xcalloc(nn, sizeof *nb);
        for (size_t i = 0; i < e->nbuckets; i++) {
            while (e->buckets[i]) {
                blockent *x = e->buckets[i];
                e->buckets[i] = x->next;
                x->next = nb[x->hash % nn];
                nb[x->hash % nn] = x;
            }
        }
        free(e->buckets);
        e->buckets = nb;
        e->nbuckets = nn;
    }
    b->next = e->buckets[b->hash % e->nbuckets];
    e->buckets[b->hash % e->nbuckets] = b;
    e->nblocks++;
}

/* ------------------------------------------------------------------ PKCS7 */

/* OpenSSL::PKCS7.new(der) of ruby/openssl 3.0: DER first, then PEM; the message names the
 * reason of the last attempt ("Could not parse the PKCS7: no start line" for most garbage). */
static PKCS7 *parse_pkcs7(eyaml_ctx *e, const unsigned char *der, size_t len, herr *err)
{
    static const unsigned char empty[1];
    PKCS7 *p7 = NULL;
    ERR_clear_error();
    BIO *bio = len <= INT_MAX ? BIO_new_mem_buf(len ? der : empty, (int)len) : NULL;
    if (bio) {
        p7 = d2i_PKCS7_bio(bio, NULL);
        if (!p7) {
            (void)BIO_reset(bio);
            ERR_clear_error();
            p7 = PEM_read_bio_PKCS7(bio, NULL, NULL, NULL);
        }
        BIO_free(bio);
    }
    if (!p7) {
        fail_ossl(e, err, EYAML_ERR_STANDARD, "Could not parse the PKCS7");
        return NULL;
    }
    ERR_clear_error();
    return p7;
}

/* Whether the private key opens the content key of the recipient that PKCS7_decrypt would
 * pick for this certificate (the first whose issuer and serial match it). When the RSA
 * decryption fails, PKCS7_decrypt goes on with a random content key (OpenSSL's defence against
 * Bleichenbacher's attack) and 1 time in 256 the padding of the garbage it decrypts passes,
 * giving garbage instead of "bad decrypt"; asking first makes a wrong key fail every time, with
 * the message it gives the other 255 times. 1 also when there is nothing to ask (not enveloped,
 * a key that does not match the certificate, no matching recipient: PKCS7_decrypt reports
 * those, in its order). */
static int recipient_key_fits(PKCS7 *p7, EVP_PKEY *pkey, X509 *cert)
{
    if (!p7 || OBJ_obj2nid(p7->type) != NID_pkcs7_enveloped || !p7->d.enveloped ||
        !X509_check_private_key(cert, pkey))
        return 1;
    STACK_OF(PKCS7_RECIP_INFO) *rsk = p7->d.enveloped->recipientinfo;
    PKCS7_RECIP_INFO *ri = NULL;
    for (int i = 0; i < sk_PKCS7_RECIP_INFO_num(rsk); i++) {
        PKCS7_RECIP_INFO *r = sk_PKCS7_RECIP_INFO_value(rsk, i);
        if (r && r->issuer_and_serial && r->enc_key &&
            X509_NAME_cmp(r->issuer_and_serial->issuer, X509_get_issuer_name(cert)) == 0 &&
            ASN1_INTEGER_cmp(X509_get_serialNumber(cert), r->issuer_and_serial->serial) == 0) {
            ri = r;
            break;
        }
    }
    if (!ri)
        return 1;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pkey, NULL);
    if (!ctx)
        return 1;
    int fits = 1;
    if (EVP_PKEY_decrypt_init(ctx) > 0) {
        /* OpenSSL 3.2+ answers a random key instead of failing unless told not to;
         * 3.0 and 3.1 do not know the setting and always fail */
        (void)EVP_PKEY_CTX_ctrl_str(ctx, "rsa_pkcs1_implicit_rejection", "0");
        const unsigned char *in = ASN1_STRING_get0_data(ri->enc_key);
        size_t inlen = (size_t)ASN1_STRING_length(ri->enc_key), outlen = 0;
        if (EVP_PKEY_decrypt(ctx, NULL, &outlen, in, inlen) > 0 && outlen > 0) {
            unsigned char *key = xmalloc(outlen);
            fits = EVP_PKEY_decrypt(ctx, key, &outlen, in, inlen) > 0;
            OPENSSL_cleanse(key, outlen);
            free(key);
        }
    }
    EVP_PKEY_CTX_free(ctx);
    ERR_clear_error();
    return fits;
}

/* PKCS7#decrypt(key, cert): PKCS7_decrypt with no flags; a PKCS7Error carries only the
 * reason of the last queued error ("bad decrypt", "private key does not match certificate",
 * "decrypt error"...). */
static char *pkcs7_decrypt(eyaml_ctx *e, PKCS7 *p7, keyslot *priv, keyslot *cert, size_t *outlen, herr *err)
{
    fsj_taint("a value was decrypted (a secret is not written to disk)");
    if (!priv->is_private) {
        fail(e, err, EYAML_ERR_STANDARD, "private key is needed");
        return NULL;
    }
    ERR_clear_error();
    BIO *out = BIO_new(BIO_s_mem());
    if (!out) {
        fail_ossl(e, err, EYAML_ERR_PKCS7, "");
        return NULL;
    }
    e->decrypts++;
    if (!recipient_key_fits(p7, priv->pkey, cert->x509)) {
        BIO_free(out);
        fail(e, err, EYAML_ERR_PKCS7, "bad decrypt");
        return NULL;
    }
    if (!PKCS7_decrypt(p7, priv->pkey, cert->x509, out, 0)) {
        BIO_free(out);
        fail_ossl(e, err, EYAML_ERR_PKCS7, "");
        return NULL;
    }
    ERR_clear_error();
    char *data = NULL;
    long n = BIO_get_mem_data(out, &data);
    if (n < 0)
        n = 0;
    char *plain = xmalloc((size_t)n + 1);
    if (n)
        memcpy(plain, data, (size_t)n);
    plain[n] = '\0';
    OPENSSL_cleanse(data, (size_t)n);
    BIO_free(out);
    *outlen = (size_t)n;
    return plain;
}

/* Strips whitespace from a block's base64 (the block text is the cache key). */
static char *strip_space(const char *s, size_t n, size_t *outlen)
{
    char *o = xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != '\v')
            o[k++] = c;
    }
    o[k] = '\0';
    *outlen = k;
    return o;
}

/* hiera-eyaml 4.2's certificate for PKCS7#decrypt: the first recipient's issuer and serial
 * with the private key's public key (pkcs7.recipients[0]: a NoMethodError on nil when there is
 * none). A keyslot that owns it (free with keyslot_free), or NULL with err. */
static keyslot *recipient_cert(eyaml_ctx *e, PKCS7 *p7, keyslot *priv, herr *err)
{
    STACK_OF(PKCS7_RECIP_INFO) *rsk = NULL;
    int type = OBJ_obj2nid(p7->type);
    if (type == NID_pkcs7_enveloped && p7->d.enveloped)
        rsk = p7->d.enveloped->recipientinfo;
    else if (type == NID_pkcs7_signedAndEnveloped && p7->d.signed_and_enveloped)
        rsk = p7->d.signed_and_enveloped->recipientinfo;
    PKCS7_RECIP_INFO *ri = rsk && sk_PKCS7_RECIP_INFO_num(rsk) > 0 ? sk_PKCS7_RECIP_INFO_value(rsk, 0) : NULL;
    if (!ri || !ri->issuer_and_serial) {
        fail(e, err, EYAML_ERR_STANDARD, "undefined method `serial' for nil");
        return NULL;
    }
    X509 *x = X509_new();
    if (!x || !X509_set_serialNumber(x, ri->issuer_and_serial->serial) ||
        !X509_set_issuer_name(x, ri->issuer_and_serial->issuer) || !X509_set_pubkey(x, priv->pkey)) {
        X509_free(x);
        fail_ossl(e, err, EYAML_ERR_STANDARD, "");
        return NULL;
    }
    keyslot *k = xcalloc(1, sizeof *k);
    k->cert = true;
    k->x509 = x;
    return k;
}

/* The steps of Pkcs7.decrypt, in its order, for a block whose keys are resolved (cert NULL:
 * hiera-eyaml 4.2, which makes it from the block and the private key). */
static blockent *decrypt_uncached(eyaml_ctx *e, keyslot *priv, keyslot *cert, const char *b64, size_t n)
{
    blockent *b = xcalloc(1, sizeof *b);
    herr err = {0};
    size_t derlen;
    unsigned char *der = ruby_decode64(b64, n, &derlen);
    PKCS7 *p7 = parse_pkcs7(e, der, derlen, &err);
    free(der);
    if (p7) {
        keyslot *made = cert ? NULL : recipient_cert(e, p7, priv, &err);
        if (cert || made)
            b->plain = pkcs7_decrypt(e, p7, priv, cert ? cert : made, &b->plain_len, &err);
        if (made)
            keyslot_free(made);
        PKCS7_free(p7);
    }
    if (!b->plain) {
        b->errmsg = err.msg ? xstrdup(err.msg) : xstrdup("");
        b->errclass = e->last_class;
    }
    herr_clear(&err);
    return b;
}

char *eyaml_decrypt_block(eyaml_ctx *e, const char *scheme, size_t scheme_len, const char *b64, size_t b64_len,
                          const hv *options, size_t *outlen, herr *err)
{
    e->last_class = EYAML_ERR_NONE;
    /* Encryptor.find requires "hiera/backend/eyaml/encryptors/<scheme downcased>": only the
     * bundled pkcs7 plugin exists, any other scheme is a LoadError (hiera-eyaml-gpg & co. are
     * not supported). */
    if (scheme && scheme_len) {
        char *lower = xstrndup(scheme, scheme_len);
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        if (strlen(lower) != scheme_len || strcmp(lower, "pkcs7") != 0) {
            char *m = xasprintf("cannot load such file -- hiera/backend/eyaml/encryptors/%s", lower);
            fail(e, err, EYAML_ERR_LOAD, m);
            free(m);
            free(lower);
            return NULL;
        }
        free(lower);
    }
    keyslot *priv, *cert = NULL;
    if (e->v42) {
        /* hiera-eyaml 4.2: only the private key is read */
        if (!crypto_ready(e, err))
            return NULL;
        priv = load_private_key_42(e, options, err);
        if (!priv)
            return NULL;
    } else {
        /* Pkcs7.decrypt: both keys must be named, the private key is read first */
        if (!key_defined(options, "pkcs7_public_key")) {
            fail(e, err, EYAML_ERR_STANDARD, "pkcs7_public_key is not defined");
            return NULL;
        }
        if (!key_defined(options, "pkcs7_private_key")) {
            fail(e, err, EYAML_ERR_STANDARD, "pkcs7_private_key is not defined");
            return NULL;
        }
        if (!crypto_ready(e, err))
            return NULL;
        priv = load_key(e, options, "pkcs7_private_key", false, err);
        if (!priv)
            return NULL;
        cert = load_key(e, options, "pkcs7_public_key", true, err);
        if (!cert)
            return NULL;
    }
    /* (generation 0 stands for 4.2's made certificate: no loaded key has it) */
    unsigned long cert_gen = cert ? cert->gen : 0;
    size_t n;
    char *clean = strip_space(b64, b64_len, &n);
    uint64_t h = block_hash(priv->gen, cert_gen, clean, n);
    blockent *b = block_get(e, h, priv->gen, cert_gen, clean, n);
    if (!b) {
        b = decrypt_uncached(e, priv, cert, clean, n);
        b->hash = h;
        b->priv_gen = priv->gen;
        b->cert_gen = cert_gen;
        b->b64 = clean;
        b->b64_len = n;
        clean = NULL;
        block_put(e, b);
    }
    free(clean);
    if (!b->plain) {
        fail(e, err, b->errclass, b->errmsg);
        return NULL;
    }
    char *out = xmalloc(b->plain_len + 1);
    memcpy(out, b->plain, b->plain_len);
    out[b->plain_len] = '\0';
    if (outlen)
        *outlen = b->plain_len;
    return out;
}

/* Wipes and frees a buffer that may hold plaintext. */
static void sb_wipe(sbuf *b)
{
    if (b->s)
        OPENSSL_cleanse(b->s, b->cap);
    sb_free(b);
}

char *eyaml_decrypt_text(eyaml_ctx *e, const char *data, size_t len, const hv *options, size_t *outlen, herr *err)
{
    e->last_class = EYAML_ERR_NONE;
    if (!data)
        data = "", len = 0;
    if (!eyaml_is_encrypted(data, len)) {
        if (outlen)
            *outlen = len;
        return xstrndup(data, len);
    }
    sbuf out = {0};
    size_t pos = 0;
    eyaml_enc_block m;
    while (pos < len && eyaml_enc_find(data, len, pos, EYAML_ENC_HIERA, &m)) {
        sb_addn(&out, data + pos, m.start - pos);
        if (m.blank) {
            /* EncHieraTokenType strips the whitespace and hands "ENC[]" to the string token
             * type, whose regexp then fails: md is nil, a NoMethodError, worded by Ruby 3.1's
             * error_highlight with the offending source line of hiera-eyaml 3.3.0. */
            sb_wipe(&out);
            fail(e, err, EYAML_ERR_STANDARD,
                 e->v42 ? "undefined method `[]' for nil" /* (Ruby 3.3: no snippet in the message) */
                        : "undefined method `[]' for nil:NilClass\n\n"
                          "            create_enc_token(string, :string, md[1], md[2])\n"
                          "                                                ^^^");
            return NULL;
        }
        size_t plen;
        char *plain = eyaml_decrypt_block(e, data + m.scheme, m.scheme_len, data + m.payload, m.payload_len, options,
                                          &plen, err);
        if (!plain) {
            sb_wipe(&out);
            return NULL;
        }
        sb_addn(&out, plain, plen);
        wipe_free(plain, plen);
        pos = m.end;
    }
    if (pos < len)
        sb_addn(&out, data + pos, len - pos);
    /* String#chomp: one trailing "\r\n", "\n" or "\r" */
    if (out.len && out.s[out.len - 1] == '\n') {
        out.len--;
        if (out.len && out.s[out.len - 1] == '\r')
            out.len--;
    } else if (out.len && out.s[out.len - 1] == '\r')
        out.len--;
    if (out.s)
        out.s[out.len] = '\0';
    if (outlen)
        *outlen = out.len;
    return sb_take(&out);
}

/* ------------------------------------------------------------------ encryption */

/* Pkcs7.encrypt: OpenSSL::PKCS7.encrypt([cert], plaintext, AES-256-CBC, BINARY).to_der,
 * strict base64, tagged PKCS7. */
static char *encrypt_with(eyaml_ctx *e, keyslot *cert, const char *plain, size_t len, herr *err)
{
    static const char empty[1];
    if (len > INT_MAX) {
        fail(e, err, EYAML_ERR_STANDARD, "plaintext too long");
        return NULL;
    }
    ERR_clear_error();
    STACK_OF(X509) *certs = sk_X509_new_null();
    BIO *in = BIO_new_mem_buf(len ? plain : empty, (int)len);
    PKCS7 *p7 = NULL;
    if (certs && in && sk_X509_push(certs, cert->x509) > 0)
        p7 = PKCS7_encrypt(certs, in, EVP_aes_256_cbc(), PKCS7_BINARY);
    sk_X509_free(certs);
    BIO_free(in);
    if (!p7) {
        fail_ossl(e, err, EYAML_ERR_PKCS7, "");
        return NULL;
    }
    unsigned char *der = NULL;
    int n = i2d_PKCS7(p7, &der);
    PKCS7_free(p7);
    if (n <= 0) {
        fail_ossl(e, err, EYAML_ERR_PKCS7, "");
        return NULL;
    }
    ERR_clear_error();
    char *b64 = strict_encode64(der, (size_t)n);
    OPENSSL_free(der);
    char *block = xasprintf("ENC[PKCS7,%s]", b64);
    free(b64);
    return block;
}

char *eyaml_encrypt_text(eyaml_ctx *e, const char *plain, size_t len, const char *pubkey_path, herr *err)
{
    e->last_class = EYAML_ERR_NONE;
    if (!pubkey_path) {
        fail(e, err, EYAML_ERR_STANDARD, "pkcs7_public_key is not defined");
        return NULL;
    }
    if (!crypto_ready(e, err))
        return NULL;
    keyslot *cert = slot_from_file(e, true, pubkey_path, err);
    return cert ? encrypt_with(e, cert, plain ? plain : "", plain ? len : 0, err) : NULL;
}

char *eyaml_encrypt_options(eyaml_ctx *e, const char *plain, size_t len, const hv *options, herr *err)
{
    e->last_class = EYAML_ERR_NONE;
    if (!key_defined(options, "pkcs7_public_key")) {
        fail(e, err, EYAML_ERR_STANDARD, "pkcs7_public_key is not defined");
        return NULL;
    }
    if (!crypto_ready(e, err))
        return NULL;
    keyslot *cert = load_key(e, options, "pkcs7_public_key", true, err);
    return cert ? encrypt_with(e, cert, plain ? plain : "", plain ? len : 0, err) : NULL;
}

/* ------------------------------------------------------------------ createkeys */

/* OpenSSL::X509::Name.parse: "/A=B/C=D" or "A=B, C=D"; "/" is the empty name. Values are
 * UTF8String except countryName (PrintableString) and domainComponent/emailAddress (IA5). */
static X509_NAME *parse_subject(const char *subject, herr *err)
{
    X509_NAME *name = X509_NAME_new();
    if (!name) {
        herr_set(err, HERR_ERROR, "out of memory");
        return NULL;
    }
    bool slashed = subject[0] == '/';
    char *copy = xstrdup(slashed ? subject + 1 : subject);
    char *save = NULL;
    for (char *part = strtok_r(copy, slashed ? "/" : ",", &save); part; part = strtok_r(NULL, slashed ? "/" : ",", &save)) {
        while (!slashed && (*part == ' ' || *part == '\t'))
            part++;
        char *eq = strchr(part, '=');
        if (!eq) {
            herr_set(err, HERR_ERROR, "invalid subject component: %s", part);
            goto bad;
        }
        *eq = '\0';
        const char *val = eq + 1;
        int type = MBSTRING_UTF8;
        if (strcmp(part, "C") == 0 || strcmp(part, "countryName") == 0)
            type = V_ASN1_PRINTABLESTRING;
        else if (strcmp(part, "DC") == 0 || strcmp(part, "domainComponent") == 0 ||
                 strcmp(part, "emailAddress") == 0)
            type = V_ASN1_IA5STRING;
        if (!X509_NAME_add_entry_by_txt(name, part, type, (const unsigned char *)val, -1, -1, 0)) {
            ERR_clear_error();
            herr_set(err, HERR_ERROR, "invalid field name %s", part);
            goto bad;
        }
    }
    free(copy);
    return name;
bad:
    free(copy);
    X509_NAME_free(name);
    return NULL;
}

static bool add_ext(X509 *cert, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static void set_ossl_error(herr *err, const char *what)
{
    char *m = ossl_message(what, false);
    herr_set(err, HERR_ERROR, "%s", m);
    free(m);
}

/* Writes a file as EncryptHelper.write_important_file does (then chmod when mode >= 0). */
static bool write_pem_file(const char *path, BIO *mem, int mode, herr *err)
{
    char *data = NULL;
    long n = BIO_get_mem_data(mem, &data);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode >= 0 ? (mode_t)mode : 0666);
    if (fd < 0) {
        herr_set(err, HERR_ERROR, "%s @ rb_sysopen - %s", ERRNO_TEXT(errno), path);
        return false;
    }
    if (n > 0 && !fd_write_full(fd, data, (size_t)n)) {
        herr_set(err, HERR_ERROR, "%s @ io_write - %s", ERRNO_TEXT(errno), path);
        close(fd);
        return false;
    }
    if (mode >= 0 && fchmod(fd, (mode_t)mode) != 0) {
        herr_set(err, HERR_ERROR, "%s @ apply2files - %s", ERRNO_TEXT(errno), path);
        close(fd);
        return false;
    }
    if (close(fd) != 0) {
        herr_set(err, HERR_ERROR, "%s @ io_write - %s", ERRNO_TEXT(errno), path);
        return false;
    }
    return true;
}

bool eyaml_createkeys(const char *private_key_path, const char *public_key_path, const char *subject, int keysize,
                      const char *digest, herr *err)
{
    bool ok = false;
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    X509_NAME *name = NULL;
    BIO *kmem = NULL, *cmem = NULL;
    OSSL_ENCODER_CTX *ectx = NULL;
    const EVP_MD *md = NULL;
    if (!crypto_ready(NULL, err))
        return false;
    if (keysize < 512 || keysize > 16384) {
        herr_set(err, HERR_ERROR, "invalid key size %d", keysize);
        goto out;
    }
    md = EVP_get_digestbyname(digest ? digest : "SHA256");
    if (!md) {
        herr_set(err, HERR_ERROR, "Unsupported digest algorithm (%s).: unknown object name", digest);
        goto out;
    }
    name = parse_subject(subject ? subject : "/", err);
    if (!name)
        goto out;
    key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)keysize);
    if (!key)
        goto ossl_fail;
    /* the private key as RSA#to_pem writes it: PKCS#1 "RSA PRIVATE KEY" */
    kmem = BIO_new(BIO_s_mem());
    ectx = OSSL_ENCODER_CTX_new_for_pkey(key, EVP_PKEY_KEYPAIR, "PEM", "type-specific", NULL);
    if (!kmem || !ectx || OSSL_ENCODER_to_bio(ectx, kmem) != 1)
        goto ossl_fail;
    bool written = write_pem_file(private_key_path, kmem, 0600, err);
    char *kdata = NULL;
    long klen = BIO_get_mem_data(kmem, &kdata);
    if (kdata && klen > 0)
        OPENSSL_cleanse(kdata, (size_t)klen);
    if (!written)
        goto out;

    cert = X509_new();
    if (!cert || !X509_set_version(cert, 2) || !ASN1_INTEGER_set(X509_get_serialNumber(cert), 1) ||
        !X509_set_subject_name(cert, name) || !X509_set_issuer_name(cert, name) ||
        !X509_gmtime_adj(X509_getm_notBefore(cert), 0) ||
        !X509_gmtime_adj(X509_getm_notAfter(cert), 50L * 365 * 24 * 60 * 60) || !X509_set_pubkey(cert, key))
        goto ossl_fail;
    if (!add_ext(cert, NID_basic_constraints, "critical,CA:TRUE") ||
        !add_ext(cert, NID_subject_key_identifier, "hash") ||
        !add_ext(cert, NID_authority_key_identifier, "keyid:always,issuer:always"))
        goto ossl_fail;
    if (!X509_sign(cert, key, md))
        goto ossl_fail;
    cmem = BIO_new(BIO_s_mem());
    if (!cmem || !PEM_write_bio_X509(cmem, cert))
        goto ossl_fail;
    if (!write_pem_file(public_key_path, cmem, -1, err))
        goto out;
    ok = true;
    goto out;
ossl_fail:
    set_ossl_error(err, "key creation failed");
out:
    ERR_clear_error();
    OSSL_ENCODER_CTX_free(ectx);
    BIO_free(kmem);
    BIO_free(cmem);
    X509_free(cert);
    X509_NAME_free(name);
    EVP_PKEY_free(key);
    return ok;
}
