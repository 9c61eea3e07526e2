#ifndef OFFER_SIGNER_COPENSSL_SHIM_H
#define OFFER_SIGNER_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

// Function-like macros do not import into Swift; these inline wrappers stand in for them.

static inline long offer_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

static inline void offer_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

static inline STACK_OF(X509) *offer_sk_X509_new_null(void) {
    return sk_X509_new_null();
}

static inline int offer_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}

static inline void offer_sk_X509_free(STACK_OF(X509) *stack) {
    sk_X509_free(stack);
}

static inline void offer_sk_X509_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}

static inline int offer_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}

static inline X509 *offer_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

static inline unsigned long offer_XN_FLAG_RFC2253(void) {
    return XN_FLAG_RFC2253;
}

#endif
