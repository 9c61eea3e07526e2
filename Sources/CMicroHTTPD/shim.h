#ifndef OFFER_SIGNER_CMICROHTTPD_SHIM_H
#define OFFER_SIGNER_CMICROHTTPD_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>

/// MHD_get_connection_info is variadic, so Swift cannot call it; this writes the client's address as text
/// (IPv4 or IPv6) into `out` and returns 1, or returns 0 when it is unknown.
static inline int offer_client_address(struct MHD_Connection *connection, char *out, socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return 0;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, out, size) != NULL;
    }
    if (address->sa_family == AF_INET6) {
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, out, size) != NULL;
    }
    return 0;
}
/// The client's socket address (IPv4 or IPv6), or NULL: the close notice uses it to give back the address's place.
static inline const struct sockaddr *offer_client_sockaddr(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
/// The connection's socket, or -1: the server's raw-byte check (`ReceiveHook`) keeps its state by socket.
static inline int offer_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}
#endif
