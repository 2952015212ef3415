/* libcrypto.c - OpenSSL's libcrypto for the hiera command, loaded only when eyaml needs it.
 *
 * Loading libcrypto (4 MB, thousands of relocations and its initialisers) was a third of the
 * start-up of a one-shot `hiera lookup` that never decrypts anything. The command is therefore
 * linked without -lcrypto: this file defines the libcrypto functions eyaml.c uses (and the
 * SHA-256 digest that names a snapshot's parses by content, engine/snapshot.c), each of which
 * opens libcrypto.so.3 with dlopen on first use and calls the real function. The prototypes come
 * from OpenSSL's own headers, so the compiler checks every signature. libhiera.a and .so link
 * libcrypto as usual; only the hiera executable links this file.
 *
 * When libcrypto cannot be opened (or lacks a function), nothing is printed and the process
 * goes on: the reason (with dlerror's text) is recorded once (lazylib_failed), every function
 * below then does nothing and returns 0 or NULL (what OpenSSL returns on failure), and eyaml.c,
 * which asks before it uses OpenSSL (crypto_ready), returns the reason as an error. */
#include <openssl/bio.h>
#include <openssl/bn.h>
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

#include "base/lazylib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *crypto_handle; /* NULL: libcrypto could not be opened (lazylib_failure says why) */
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

static void crypto_open(void)
{
    char why[1024];
    crypto_handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!crypto_handle) {
        /* (the reason is the first attempt's: libcrypto.so is only the development package's) */
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load OpenSSL's libcrypto (libcrypto.so.3, Debian package libssl3): %s",
                 e ? e : "unknown error");
        crypto_handle = dlopen("libcrypto.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!crypto_handle)
        lazylib_failed(LAZYLIB_CRYPTO, why);
}

/* the real function, or NULL when libcrypto (or the function) is missing */
static void *crypto_sym(const char *name)
{
    pthread_once(&crypto_once, crypto_open);
    if (!crypto_handle)
        return NULL;
    void *f = dlsym(crypto_handle, name);
    if (!f) {
        char why[256];
        snprintf(why, sizeof why, "cannot use OpenSSL's libcrypto: it has no %s", name);
        lazylib_failed(LAZYLIB_CRYPTO, why);
    }
    return f;
}

/* one trampoline per function: the real one is looked up once; without it, `missing` is
 * returned (0 or NULL: OpenSSL's failure) */
#define LAZY_OR(ret, name, params, args, missing)                                      \
    ret name params                                                                    \
    {                                                                                  \
        static void *slot;                                                             \
        void *lazy_f = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);                       \
        if (!lazy_f) {                                                                 \
            lazy_f = crypto_sym(#name);                                                \
            if (!lazy_f)                                                               \
                return missing;                                                        \
            __atomic_store_n(&slot, lazy_f, __ATOMIC_RELEASE);                         \
        }                                                                              \
        ret(*real) params;                                                             \
        *(void **)&real = lazy_f;                                                      \
        return real args;                                                              \
    }
#define LAZY(ret, name, params, args) LAZY_OR(ret, name, params, args, (ret)0)
/* (functions that return nothing) */
#define LAZY_VOID(name, params, args) LAZY_OR(void, name, params, args, )

LAZY(int, ASN1_INTEGER_cmp, (const ASN1_INTEGER *x, const ASN1_INTEGER *y), (x, y))
LAZY(int, ASN1_INTEGER_set, (ASN1_INTEGER *a, long v), (a, v))
LAZY(const unsigned char *, ASN1_STRING_get0_data, (const ASN1_STRING *x), (x))
LAZY(int, ASN1_STRING_length, (const ASN1_STRING *x), (x))
LAZY(long, BIO_ctrl, (BIO *bp, int cmd, long larg, void *parg), (bp, cmd, larg, parg))
LAZY(int, BIO_free, (BIO *a), (a))
LAZY(BIO *, BIO_new, (const BIO_METHOD *type), (type))
LAZY(BIO *, BIO_new_mem_buf, (const void *buf, int len), (buf, len))
LAZY(const BIO_METHOD *, BIO_s_mem, (void), ())
LAZY_VOID(BN_clear_free, (BIGNUM *a), (a))
LAZY_VOID(CRYPTO_free, (void *ptr, const char *file, int line), (ptr, file, line))
LAZY_VOID(ERR_clear_error, (void), ())
LAZY(unsigned long, ERR_peek_last_error, (void), ())
LAZY(unsigned long, ERR_peek_last_error_data, (const char **data, int *flags), (data, flags))
LAZY(const char *, ERR_reason_error_string, (unsigned long e), (e))
LAZY(int, EVP_Digest, (const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl), (data, count, md, size, type, impl))
LAZY(int, EVP_EncodeBlock, (unsigned char *t, const unsigned char *f, int n), (t, f, n))
LAZY(int, EVP_PKEY_CTX_ctrl_str, (EVP_PKEY_CTX *ctx, const char *type, const char *value), (ctx, type, value))
LAZY_VOID(EVP_PKEY_CTX_free, (EVP_PKEY_CTX *ctx), (ctx))
LAZY(EVP_PKEY_CTX *, EVP_PKEY_CTX_new, (EVP_PKEY *pkey, ENGINE *e), (pkey, e))
LAZY(int, EVP_PKEY_decrypt, (EVP_PKEY_CTX *ctx, unsigned char *out, size_t *outlen, const unsigned char *in, size_t inlen), (ctx, out, outlen, in, inlen))
LAZY(int, EVP_PKEY_decrypt_init, (EVP_PKEY_CTX *ctx), (ctx))
LAZY_VOID(EVP_PKEY_free, (EVP_PKEY *pkey), (pkey))
LAZY(int, EVP_PKEY_get_base_id, (const EVP_PKEY *pkey), (pkey))
LAZY(int, EVP_PKEY_get_bn_param, (const EVP_PKEY *pkey, const char *key_name, BIGNUM **bn), (pkey, key_name, bn))
LAZY(const EVP_CIPHER *, EVP_aes_256_cbc, (void), ())
LAZY(const EVP_MD *, EVP_get_digestbyname, (const char *name), (name))
LAZY(const EVP_MD *, EVP_sha256, (void), ())
LAZY(const char *, OBJ_nid2sn, (int n), (n))
LAZY(int, OBJ_obj2nid, (const ASN1_OBJECT *o), (o))
/* (wipes even without libcrypto) */
void OPENSSL_cleanse(void *ptr, size_t len)
{
    static void *slot;
    void *f = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = crypto_sym("OPENSSL_cleanse");
        if (!f) {
            explicit_bzero(ptr, len);
            return;
        }
        __atomic_store_n(&slot, f, __ATOMIC_RELEASE);
    }
    void (*real)(void *, size_t);
    *(void **)&real = f;
    real(ptr, len);
}
LAZY_VOID(OPENSSL_sk_free, (OPENSSL_STACK *st), (st))
LAZY(OPENSSL_STACK *, OPENSSL_sk_new_null, (void), ())
LAZY(int, OPENSSL_sk_num, (const OPENSSL_STACK *st), (st))
LAZY(int, OPENSSL_sk_push, (OPENSSL_STACK *st, const void *data), (st, data))
LAZY(void *, OPENSSL_sk_value, (const OPENSSL_STACK *st, int i), (st, i))
LAZY_VOID(OSSL_DECODER_CTX_free, (OSSL_DECODER_CTX *ctx), (ctx))
LAZY(OSSL_DECODER_CTX *, OSSL_DECODER_CTX_new_for_pkey, (EVP_PKEY **pkey, const char *input_type, const char *input_struct, const char *keytype, int selection, OSSL_LIB_CTX *libctx, const char *propquery), (pkey, input_type, input_struct, keytype, selection, libctx, propquery))
LAZY(int, OSSL_DECODER_CTX_set_input_type, (OSSL_DECODER_CTX *ctx, const char *input_type), (ctx, input_type))
LAZY(int, OSSL_DECODER_CTX_set_pem_password_cb, (OSSL_DECODER_CTX *ctx, pem_password_cb *cb, void *cbarg), (ctx, cb, cbarg))
LAZY(int, OSSL_DECODER_CTX_set_selection, (OSSL_DECODER_CTX *ctx, int selection), (ctx, selection))
LAZY(int, OSSL_DECODER_from_bio, (OSSL_DECODER_CTX *ctx, BIO *in), (ctx, in))
LAZY_VOID(OSSL_ENCODER_CTX_free, (OSSL_ENCODER_CTX *ctx), (ctx))
LAZY(OSSL_ENCODER_CTX *, OSSL_ENCODER_CTX_new_for_pkey, (const EVP_PKEY *pkey, int selection, const char *output_type, const char *output_struct, const char *propquery), (pkey, selection, output_type, output_struct, propquery))
LAZY(int, OSSL_ENCODER_to_bio, (OSSL_ENCODER_CTX *ctx, BIO *out), (ctx, out))
LAZY(PKCS7 *, PEM_read_bio_PKCS7, (BIO *bp, PKCS7 **x, pem_password_cb *cb, void *u), (bp, x, cb, u))
LAZY(X509 *, PEM_read_bio_X509, (BIO *bp, X509 **x, pem_password_cb *cb, void *u), (bp, x, cb, u))
LAZY(int, PEM_write_bio_X509, (BIO *bp, const X509 *x), (bp, x))
LAZY(int, PKCS7_decrypt, (PKCS7 *p7, EVP_PKEY *pkey, X509 *cert, BIO *data, int flags), (p7, pkey, cert, data, flags))
LAZY(PKCS7 *, PKCS7_encrypt, (STACK_OF(X509) *certs, BIO *in, const EVP_CIPHER *cipher, int flags), (certs, in, cipher, flags))
LAZY_VOID(PKCS7_free, (PKCS7 *a), (a))
LAZY(X509_EXTENSION *, X509V3_EXT_nconf_nid, (CONF *conf, X509V3_CTX *ctx, int ext_nid, const char *value), (conf, ctx, ext_nid, value))
LAZY_VOID(X509V3_set_ctx, (X509V3_CTX *ctx, X509 *issuer, X509 *subject, X509_REQ *req, X509_CRL *crl, int flags), (ctx, issuer, subject, req, crl, flags))
LAZY_VOID(X509_EXTENSION_free, (X509_EXTENSION *a), (a))
LAZY(int, X509_NAME_add_entry_by_txt, (X509_NAME *name, const char *field, int type, const unsigned char *bytes, int len, int loc, int set), (name, field, type, bytes, len, loc, set))
LAZY(int, X509_NAME_cmp, (const X509_NAME *a, const X509_NAME *b), (a, b))
LAZY_VOID(X509_NAME_free, (X509_NAME *a), (a))
LAZY(X509_NAME *, X509_NAME_new, (void), ())
LAZY(int, X509_add_ext, (X509 *x, X509_EXTENSION *ex, int loc), (x, ex, loc))
LAZY(int, X509_check_private_key, (const X509 *cert, const EVP_PKEY *pkey), (cert, pkey))
LAZY_VOID(X509_free, (X509 *a), (a))
LAZY(X509_NAME *, X509_get_issuer_name, (const X509 *a), (a))
LAZY(ASN1_INTEGER *, X509_get_serialNumber, (X509 *x), (x))
LAZY(ASN1_TIME *, X509_getm_notAfter, (const X509 *x), (x))
LAZY(ASN1_TIME *, X509_getm_notBefore, (const X509 *x), (x))
LAZY(ASN1_TIME *, X509_gmtime_adj, (ASN1_TIME *s, long adj), (s, adj))
LAZY(X509 *, X509_new, (void), ())
LAZY(int, X509_set_issuer_name, (X509 *x, const X509_NAME *name), (x, name))
LAZY(int, X509_set_pubkey, (X509 *x, EVP_PKEY *pkey), (x, pkey))
LAZY(int, X509_set_serialNumber, (X509 *x, ASN1_INTEGER *serial), (x, serial))
LAZY(int, X509_set_subject_name, (X509 *x, const X509_NAME *name), (x, name))
LAZY(int, X509_set_version, (X509 *x, long version), (x, version))
LAZY(int, X509_sign, (X509 *x, EVP_PKEY *pkey, const EVP_MD *md), (x, pkey, md))
LAZY(PKCS7 *, d2i_PKCS7_bio, (BIO *bp, PKCS7 **p7), (bp, p7))
LAZY(X509 *, d2i_X509_bio, (BIO *bp, X509 **x509), (bp, x509))
LAZY(int, i2d_PKCS7, (const PKCS7 *a, unsigned char **out), (a, out))

/* variadic in OpenSSL; eyaml uses it as EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits) */
EVP_PKEY *EVP_PKEY_Q_keygen(OSSL_LIB_CTX *libctx, const char *propq, const char *type, ...)
{
    static void *slot;
    void *f = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = crypto_sym("EVP_PKEY_Q_keygen");
        if (!f)
            return NULL;
        __atomic_store_n(&slot, f, __ATOMIC_RELEASE);
    }
    EVP_PKEY *(*real)(OSSL_LIB_CTX *, const char *, const char *, ...);
    *(void **)&real = f;
    va_list ap;
    va_start(ap, type);
    size_t bits = va_arg(ap, size_t);
    va_end(ap);
    return real(libctx, propq, type, bits);
}

