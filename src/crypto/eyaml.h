/* eyaml.h - hiera-eyaml's PKCS7 encrypted values (ENC[PKCS7,<base64>]) through OpenSSL:
 * decryption as Puppet's eyaml_lookup_key (hiera-eyaml 3.3) does it, and encryption that
 * the real `eyaml` tool decrypts. */
#ifndef HIERA_EYAML_H
#define HIERA_EYAML_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "base/value.h"

typedef struct eyaml_ctx eyaml_ctx;

/* A context caches loaded keys (by path, re-read when the file changes) and decrypted blocks
 * (so each block is decrypted once per process). */
eyaml_ctx *eyaml_new(void);
void eyaml_free(eyaml_ctx *e);
/* Promises that key files do not change while e lives (a frozen cache): a key file read once is
 * not checked with stat() again. */
void eyaml_freeze(eyaml_ctx *e);
/* Decrypts as Debian 13 does (Puppet 8.10, Hiera 3.12): hiera-eyaml 4.2, which reads only the
 * private key (pkcs7_private_key_env_var winning over pkcs7_private_key, "env X is not set",
 * "file X does not exist") and makes the certificate from the block's first recipient, on Ruby
 * 3.3's openssl, whose messages carry the error's data ("no start line (Expecting: PKCS7)").
 * false: Debian 12's hiera-eyaml 3.3. Decrypted blocks are remembered apart for each. */
void eyaml_set_debian13(eyaml_ctx *e, bool on);

/* What an ENC[...] block's payload may hold besides base64 ([a-zA-Z0-9+/=]): */
typedef enum {
    EYAML_ENC_HIERA,       /* spaces and newlines: the hiera backend parser (EncHieraTokenType) */
    EYAML_ENC_TOOL_STRING, /* nothing else: the eyaml tool's string token */
    EYAML_ENC_TOOL_BLOCK,  /* any white space (\s): the eyaml tool's block token */
} eyaml_enc_class;

/* A match of /ENC\[(\w+,)?([class]+?)\]/: offsets into the text scanned. */
typedef struct {
    size_t start, end;          /* the whole ENC[...] */
    size_t scheme, scheme_len;  /* the word before the comma; scheme_len 0 when absent */
    size_t payload, payload_len;
    bool blank;                 /* the payload is white space only */
} eyaml_enc_block;

/* The match at position i (the scheme tried first, as the regexp does); false when none. */
bool eyaml_enc_at(const char *s, size_t len, size_t i, eyaml_enc_class cls, eyaml_enc_block *m);
/* The leftmost match at or after from (StringScanner#check_until). */
bool eyaml_enc_find(const char *s, size_t len, size_t from, eyaml_enc_class cls, eyaml_enc_block *m);

/* eyaml_lookup_key's `encrypted?` test: /.*ENC\[.*?\]/ matches the text. */
bool eyaml_is_encrypted(const char *s, size_t len);

/* Decrypts a string the way eyaml_lookup_key does: parses it with hiera-eyaml's parser (ENC[...]
 * blocks in any position, surrounded by plain text, multi-line blocks), replaces every block by
 * its plaintext, joins, and chomps one trailing newline. `options` is the hierarchy level's
 * options hash (pkcs7_private_key, pkcs7_public_key: paths relative to the working directory).
 * Returns a malloc'ed string (*outlen its length), or NULL with err->msg set to the message
 * hiera-eyaml's exception carries (the caller wraps it), never containing plaintext.
 * Text that is not `encrypted?` (see eyaml_is_encrypted) comes back unchanged, not chomped.
 * Options may also name pkcs7_private_key_env_var / pkcs7_public_key_env_var (environment
 * variables holding the PEM text); keys may be strings or symbols. err->kind is HERR_LOOKUP,
 * except HERR_ERROR for an unknown scheme (see eyaml_errclass). */
char *eyaml_decrypt_text(eyaml_ctx *e, const char *data, size_t len, const hv *options, size_t *outlen, herr *err);

/* Encrypts plaintext for the public key (PEM certificate) at pubkey_path, returning the
 * ENC[PKCS7,<base64>] block as a malloc'ed string, or NULL with err. */
char *eyaml_encrypt_text(eyaml_ctx *e, const char *plain, size_t len, const char *pubkey_path, herr *err);

/* ---- additions (eyaml.c) ---- */

/* The Ruby exception class behind the last failure of a context, because the callers treat
 * them differently: Puppet's eyaml_lookup_key wraps every StandardError in a LookupError
 * ("hiera-eyaml backend error decrypting ..."), but a LoadError (an unknown encryption scheme
 * such as ENC[GPG,...]: hiera-eyaml `require`s the plugin) is not a StandardError and escapes
 * as "Error: Could not run: cannot load such file -- ..."; Hiera 3's eyaml backend rewraps only
 * PKCS7Error ("Hiera-eyaml decryption failed, check the encrypted data matches the key you are
 * using.\nRaw message from system: <msg>"). */
typedef enum {
    EYAML_ERR_NONE = 0,
    EYAML_ERR_STANDARD, /* Errno::*, ArgumentError, TypeError, RSAError, CertificateError, StandardError */
    EYAML_ERR_PKCS7,    /* OpenSSL::PKCS7::PKCS7Error (bad decrypt, key does not match certificate...) */
    EYAML_ERR_LOAD,     /* LoadError (unknown scheme); err->kind is HERR_ERROR for it, HERR_LOOKUP otherwise */
} eyaml_errclass;
eyaml_errclass eyaml_last_error_class(const eyaml_ctx *e);

/* Decrypts one block's payload: scheme (the word before the comma, NULL/0 for none, meaning
 * PKCS7) and its base64 text (whitespace allowed, decoded leniently as Ruby's decode64). Keys
 * come from options as in eyaml_decrypt_text. Cached like eyaml_decrypt_text. */
char *eyaml_decrypt_block(eyaml_ctx *e, const char *scheme, size_t scheme_len, const char *b64, size_t b64_len,
                          const hv *options, size_t *outlen, herr *err);

/* eyaml_encrypt_text with the key taken from options (pkcs7_public_key or
 * pkcs7_public_key_env_var) as hiera-eyaml's encryptor takes it. */
char *eyaml_encrypt_options(eyaml_ctx *e, const char *plain, size_t len, const hv *options, herr *err);

/* `eyaml createkeys`: a new RSA key (PEM "RSA PRIVATE KEY", mode 0600) and a self-signed
 * certificate (subject e.g. "/", serial 1, 50 years, CA:TRUE, key identifiers) signed with
 * digest (e.g. "SHA256"). The directories must exist; existing files are overwritten. */
bool eyaml_createkeys(const char *private_key_path, const char *public_key_path, const char *subject,
                      int keysize, const char *digest, herr *err);

/* Number of PKCS7 decryptions (OpenSSL calls) this context has made: cache hits do not count. */
unsigned long eyaml_decrypt_count(const eyaml_ctx *e);

#endif
