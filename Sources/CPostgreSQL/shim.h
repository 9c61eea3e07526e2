#ifndef OFFER_SIGNER_CPOSTGRESQL_SHIM_H
#define OFFER_SIGNER_CPOSTGRESQL_SHIM_H
#include <libpq-fe.h>

/* postgres_ext.h defines the fields of an error report as character macros ('C'), which Swift does not import. */
static const int OFFER_PG_DIAG_SQLSTATE = PG_DIAG_SQLSTATE;
static const int OFFER_PG_DIAG_MESSAGE_PRIMARY = PG_DIAG_MESSAGE_PRIMARY;
static const int OFFER_PG_DIAG_CONSTRAINT_NAME = PG_DIAG_CONSTRAINT_NAME;
static const int OFFER_PG_DIAG_TABLE_NAME = PG_DIAG_TABLE_NAME;
#endif
