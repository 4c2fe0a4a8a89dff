// libcrypt's crypt_r and crypt_checksalt (Debian's libcrypt-dev, libxcrypt 4.x).
#include <crypt.h>
