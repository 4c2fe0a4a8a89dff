// OpenSSL's libcrypto (Debian's libssl-dev), the library libcurl already loads for TLS: message digests and
// HMAC for tokens, body checksums and SigV4. No logic lives here.
#ifndef RESUMECTL_CLIBCRYPTO_H
#define RESUMECTL_CLIBCRYPTO_H
// The one-algorithm digest functions (SHA256_Init …) are deprecated in OpenSSL 3 but kept through 3.x; they
// run the same assembly as EVP without EVP's first-use cost (see MessageDigest.swift).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
#endif
