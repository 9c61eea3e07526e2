#ifndef OFFER_SIGNER_CCBOR_SHIM_H
#define OFFER_SIGNER_CCBOR_SHIM_H
// Debian's libcbor (libcbor-dev): App Attest's attestation objects and assertions are CBOR.
#include <cbor.h>
#endif
