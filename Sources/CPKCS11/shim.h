#ifndef OFFER_SIGNER_CPKCS11_SHIM_H
#define OFFER_SIGNER_CPKCS11_SHIM_H

// The PKCS#11 (Cryptoki 2.40) types and function list, from p11-kit's header (Debian's libp11-kit-dev). Nothing is
// linked from p11-kit: the token's module is opened with dlopen at run time and called through its function list.
#include <dlfcn.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#endif
