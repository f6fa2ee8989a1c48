/* What building a P-256 public key from its 65-byte point costs in OpenSSL 3,
   stage by stage, as LocalAuthCrypto's P256.PublicKey(x963Representation:)
   does it for every right ListRights lists (BENCHMARKS.md, "Curves"):
   EVP_PKEY_fromdata, EVP_PKEY_public_check (which multiplies the point by the
   group order), the quick check that skips that, and the export of the point.
     cc -O2 -Wall -o /tmp/p256-import Tools/Bench/c/p256-import.c -lcrypto && /tmp/p256-import */
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static EVP_PKEY *import(unsigned char *pub, size_t len) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY_fromdata_init(ctx);
    OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string("group", "prime256v1", 0),
                            OSSL_PARAM_construct_octet_string("pub", pub, len), OSSL_PARAM_construct_end() };
    EVP_PKEY *key = NULL;
    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(ctx);
    return key;
}
int main(void) {
    EVP_PKEY *generated = EVP_EC_gen("prime256v1");
    unsigned char pub[65]; size_t len = 0;
    EVP_PKEY_get_octet_string_param(generated, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub, &len);
    const int n = 2000;
    double stages[4] = {0};
    for (int i = 0; i < n; i++) {
        double t0 = now();
        EVP_PKEY *key = import(pub, len);
        double t1 = now();
        EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        if (EVP_PKEY_public_check(check) != 1) return 1;
        double t2 = now();
        if (EVP_PKEY_public_check_quick(check) != 1) return 1;
        double t3 = now();
        unsigned char out[65]; size_t outlen = 0;
        EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out, sizeof out, &outlen);
        double t4 = now();
        EVP_PKEY_CTX_free(check); EVP_PKEY_free(key);
        stages[0] += t1 - t0; stages[1] += t2 - t1; stages[2] += t3 - t2; stages[3] += t4 - t3;
    }
    printf("per key, mean of %d (us): fromdata %.1f, public_check %.1f, public_check_quick %.1f, export %.1f\n",
           n, stages[0] / n, stages[1] / n, stages[2] / n, stages[3] / n);
    return 0;
}
