#ifndef OFFER_SIGNER_CCURL_SHIM_H
#define OFFER_SIGNER_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, so Swift cannot call them: one wrapper
// per argument type, each passing exactly the type libcurl reads for the options it is used with.

/// Options that take a `long` (flags, timeouts, sizes).
static inline CURLcode offer_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options that take a `curl_off_t` (the `_LARGE` sizes).
static inline CURLcode offer_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options that take a C string (libcurl copies it, except CURLOPT_POSTFIELDS, which is not used here).
static inline CURLcode offer_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options that take a data pointer handed back to callbacks (CURLOPT_WRITEDATA, CURLOPT_HEADERDATA, ...).
static inline CURLcode offer_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// Options that take a header list (CURLOPT_HTTPHEADER); the list must outlive the transfer.
static inline CURLcode offer_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION: both callbacks have the `curl_write_callback` shape.
static inline CURLcode offer_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/// Information that is a `long` (CURLINFO_RESPONSE_CODE).
static inline CURLcode offer_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// Information that is a `curl_off_t` (CURLINFO_TOTAL_TIME_T, microseconds).
static inline CURLcode offer_curl_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// Multi options that take a `long` (CURLMOPT_MAX_HOST_CONNECTIONS, ...).
static inline CURLMcode offer_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/// The result code of a finished transfer's message (a member of an anonymous union in CURLMsg).
static inline CURLcode offer_curl_message_result(const CURLMsg *message) {
    return message->data.result;
}
#endif
