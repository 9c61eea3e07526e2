#ifndef OFFER_SIGNER_CSQLITE_SHIM_H
#define OFFER_SIGNER_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
