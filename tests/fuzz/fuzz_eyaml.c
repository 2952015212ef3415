/* fuzz_eyaml.c - libFuzzer harness: hiera-eyaml's encrypted values (src/crypto/eyaml.c): the parser
 * of ENC[...] blocks in text, base64, PKCS7 (OpenSSL) decryption with a fixed test key pair, and
 * an encrypt/decrypt round trip. Input: one byte of flags (bit 0: also encrypt the rest and
 * decrypt it back), then the text. The key pair below is a throwaway made for these tests with
 * `hiera eyaml createkeys`; tests/fuzz/corpus/eyaml holds values encrypted for it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/eyaml.h"
#include "fuzz_common.h"
#include "fuzz_keys.h"
#include "base/value.h"

static hv *options;

static void setup(void)
{
    char *priv = fz_write_str("keys/private_key.pkcs7.pem", PRIVATE_KEY);
    char *pub = fz_write_str("keys/public_key.pkcs7.pem", PUBLIC_KEY);
    options = hv_hash();
    hv_hash_sets(options, "pkcs7_private_key", hv_str(priv));
    hv_hash_sets(options, "pkcs7_public_key", hv_str(pub));
    free(priv);
    free(pub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!options)
        setup();
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    eyaml_ctx *e = eyaml_new(); /* fresh: a context caches every block it decrypts */
    herr err = {0};
    size_t outlen = 0;
    eyaml_is_encrypted(text, len);
    char *plain = eyaml_decrypt_text(e, text, len, options, &outlen, &err);
    if (!plain && !err.msg)
        abort(); /* a failure must say why */
    free(plain);
    herr_clear(&err);
    if (data[0] & 1) {
        char *block = eyaml_encrypt_options(e, text, len, options, &err);
        if (!block)
            abort(); /* any bytes can be encrypted */
        char *back = eyaml_decrypt_block(e, "PKCS7", 5, block + strlen("ENC[PKCS7,"),
                                         strlen(block) - strlen("ENC[PKCS7,") - 1, options, &outlen, &err);
        if (!back || outlen != len || memcmp(back, text, len) != 0)
            abort(); /* what was encrypted decrypts to the same bytes */
        free(back);
        free(block);
        herr_clear(&err);
    }
    eyaml_free(e);
    return 0;
}
