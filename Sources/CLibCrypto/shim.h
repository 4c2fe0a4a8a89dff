// OpenSSL's libcrypto (Debian's libssl-dev), the library libcurl already loads for TLS: message digests and
// HMAC for tokens, body checksums and SigV4. No logic lives here.
#ifndef RESUMECTL_CLIBCRYPTO_H
#define RESUMECTL_CLIBCRYPTO_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif
